"""benchmarks/kube_start.py: one start of shardsched's four processes on the API server binds
the trial's pod, and the trial reads each process's CPU and phases. Behaviour only, never
timings."""
from __future__ import annotations

from benchmarks import kube_start, kube_vs
from common.store.kube_store import ApiError, KubeStore
from common.tools import fleet as fleet_mod


def test_a_trial_binds_its_pod_and_reads_each_process_start(kube_cluster, tmp_path):
    store = KubeStore(str(kube_cluster.kubeconfig))
    nodes = fleet_mod.generate(2, "uniform", 0, prefix="start")
    try:
        kube_vs.create_namespace(store, "vs-start")
    except ApiError as e:  # another test of the session made it
        assert e.status == 409
    for n in nodes:
        store.create(n)
    try:
        local = kube_start.configured(kube_cluster.kubeconfig, tmp_path)
        t = kube_start.trial(kube_start.ROOT, local.config_path, kube_cluster.kubeconfig, store, 1, tmp_path)
    finally:
        for n in nodes:
            store.delete("Node", n["metadata"]["name"])
    assert t["bound_s"] is not None
    assert set(t["cpu_s"]) == {"binder 0", "shard 0", "shard 1", "dispatcher 0"}
    assert all(cpu > 0 for cpu in t["cpu_s"].values())
    assert {"starting", "listed", "partition"} <= set(t["startup_s"]["binder 0"])
    assert {"starting", "listed", "shard_joined"} <= set(t["startup_s"]["dispatcher 0"])
    assert kube_start.medians([t])["unbound"] == 0


def test_imports_reads_each_roles_import_cpu_from_each_tree():
    """`--imports`: each role's modules imported in fresh interpreters from each tree, and
    the ratio of the medians when there is a baseline (here the same tree twice)."""
    doc = kube_start.imports([kube_start.ROOT, kube_start.ROOT], 1)
    assert set(doc["medians"][str(kube_start.ROOT)]) == {"binder", "shard", "dispatcher"}
    assert all(len(ms) == 2 and all(m > 0 for m in ms) for ms in doc["imports_ms"][str(kube_start.ROOT)].values())
    assert set(doc["ratio"]) == {"binder", "shard", "dispatcher"}
