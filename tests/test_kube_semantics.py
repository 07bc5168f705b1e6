"""kube-scheduler's semantics, side by side on a real kube-apiserver: shardsched (dispatcher,
shard and binder as processes with `--store kube://`, each as its deploy/ ServiceAccount) and
kube-scheduler v1.37 (built from the same release) each schedule the same pods in their own
namespace, at the same time, on the same nodes, and must end the same way:

* a pod with a WaitForFirstConsumer claim is bound, and its claim is provisioned on the node
  the scheduler chose (the volume.kubernetes.io/selected-node annotation PreBind writes);
* a pod with scheduling gates stays pending (PodScheduled=False/SchedulingGated) until its
  gate is removed midway, then is bound;
* pods that fit nowhere get byte-identical PodScheduled messages (a missing claim, too much
  cpu, preemptionPolicy Never, a ReadWriteOncePod claim another pod holds), which must also
  be the ones worked out here from kube-scheduler's source.

No kube-controller-manager or provisioner runs on the test API server, so a thread of this
test plays both (shard.provisioner: the PV controller's binding and a dynamic provisioner for
the class's "example.com/fake", whose volumes are pinned to the selected node's hostname) for
both schedulers alike. Without it, both would wait in PreBind for bindTimeoutSeconds.
"""
from __future__ import annotations

import threading
from pathlib import Path


from builders import PAUSE, claim_volume, pod, priority_class, pvc, storage_class
from shard.provisioner import Provisioner
from common.store.kube_store import KubeStore
from common.tools.verify import summary, verify_store
from kube_cluster import Teardown, kwok_nodes, scheduled_condition, shardsched_on, unschedulable_message, wait_for

from benchmarks import kube_vs

ROOT = Path(__file__).resolve().parent.parent
NODES = 3
CLASS = "sem-wffc"
NEVER = "sem-never"  # a PriorityClass that never preempts (Priority admission forbids the field alone)
SCHEDULERS = {"sem-shardsched": "shardsched", "sem-kube": "default-scheduler"}
TIMEOUT_S = 90
SELECTED = "volume.kubernetes.io/selected-node"


def _pod(name: str, ns: str, claims=(), cpu: str = "100m", **spec) -> dict:
    return pod(name, cpu, ns=ns, images=(PAUSE,), uid=None, status=False, scheduler=SCHEDULERS[ns],
               volumes=[claim_volume(c) for c in claims], spec={"terminationGracePeriodSeconds": 0, **spec})


def _claim(name: str, ns: str, modes=("ReadWriteOnce",)) -> dict:
    return pvc(name, CLASS, ns=ns, uid=None, modes=modes)


def _wait(what, done, timeout: float = TIMEOUT_S):
    return wait_for(what, done, timeout)


def _unschedulable_message(store, key: str) -> str:
    return unschedulable_message(store, key, TIMEOUT_S)


def _bound_to(store, key: str) -> str:
    return _wait(f"{key} was never bound: {scheduled_condition(store, key)}",
                 lambda: ((store.get("Pod", key) or {}).get("spec") or {}).get("nodeName"))


def test_gates_volumes_and_messages_as_kube_scheduler(kube_cluster, tmp_path):
    store = KubeStore(str(kube_cluster.kubeconfig))
    stop = threading.Event()
    with Teardown(tmp_path) as undo:
        undo.callback(store.close)
        undo.callback(_clean, store)
        kwok_nodes(store, NODES, "sem-node")
        n = len(store.list("Node")[0])
        store.create(storage_class(CLASS, "example.com/fake"))
        store.create(priority_class(NEVER, 0, policy="Never"))
        for ns in SCHEDULERS:
            kube_vs.create_namespace(store, ns)

        def controllers():  # kube-controller-manager's PV controller and a provisioner
            while not stop.wait(0.2):
                Provisioner(store).settle()
        threading.Thread(target=controllers, daemon=True).start()
        undo.callback(stop.set)

        undo.started(shardsched_on(kube_cluster, store, tmp_path, 1))
        undo.kube_scheduler(kube_cluster, tmp_path)

        gate = [{"name": "example.com/wait"}]
        for ns in SCHEDULERS:
            for obj in (_claim("data", ns), _claim("solo", ns, ("ReadWriteOncePod",)),
                        _pod("db", ns, ["data"]), _pod("solo-1", ns, ["solo"]), _pod("gated", ns, schedulingGates=gate),
                        _pod("orphan", ns, ["missing"]), _pod("huge", ns, cpu="1000"),
                        _pod("never", ns, cpu="1000", priorityClassName=NEVER)):
                store.create(obj)

        # a WaitForFirstConsumer claim, provisioned where its pod goes
        for ns in SCHEDULERS:
            node = _bound_to(store, f"{ns}/db")
            claim = _wait(f"{ns}/data not bound", lambda: _fully_bound(store, f"{ns}/data"))
            assert claim["metadata"]["annotations"][SELECTED] == node, ns
            volume = store.get("PersistentVolume", claim["spec"]["volumeName"])
            term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
            assert term["values"] == [node], ns

        # kube's words, from both, for pods that fit nowhere
        expected = {
            "orphan": 'persistentvolumeclaim "missing" not found',
            "huge": f"{n} Insufficient cpu",
            "never": f"{n} Insufficient cpu",
        }
        preemption = {
            # v1.37: VolumeBinding's PreFilter stopped the cycle before DynamicResources' ran, so
            # its PostFilter (first) fails "not found" and DefaultPreemption never runs
            "orphan": "not found",
            # v1.37: 1000 cpu is more than any node's allocatable: no node is tried
            "huge": f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling.",
            "never": "preemption: not eligible due to preemptionPolicy=Never.",
        }
        for name in expected:
            want = f"0/{n} nodes are available: {expected[name]}. {preemption[name]}"
            got = {ns: _unschedulable_message(store, f"{ns}/{name}") for ns in SCHEDULERS}
            assert got == {ns: want for ns in SCHEDULERS}, name

        # a gated pod waits, then is scheduled once its gate is removed
        for ns in SCHEDULERS:
            c = scheduled_condition(store, f"{ns}/gated")
            assert (c["status"], c["reason"]) == ("False", "SchedulingGated"), ns
            assert not store.get("Pod", f"{ns}/gated")["spec"].get("nodeName"), ns
        for ns in SCHEDULERS:
            obj = store.get("Pod", f"{ns}/gated")
            obj["spec"]["schedulingGates"] = []
            store.update(obj)
        for ns in SCHEDULERS:
            _bound_to(store, f"{ns}/gated")

        # a ReadWriteOncePod claim another pod holds
        for ns in SCHEDULERS:
            _bound_to(store, f"{ns}/solo-1")
            _wait(f"{ns}/solo not bound", lambda: _fully_bound(store, f"{ns}/solo"))
            store.create(_pod("solo-2", ns, ["solo"]))
        want = (f"0/{n} nodes are available: {n} node(s) unavailable due to PersistentVolumeClaim with "
                f"ReadWriteOncePod access mode already in-use by another pod. preemption: 0/{n} nodes are available: "
                f"{n} No preemption victims found for incoming pod.")
        assert {ns: _unschedulable_message(store, f"{ns}/solo-2") for ns in SCHEDULERS} == {
            ns: want for ns in SCHEDULERS}

        report = verify_store(store)
        assert report["ok"] and not report["unparsable"], summary(report)


def _fully_bound(store, key: str) -> dict | None:
    claim = store.get("PersistentVolumeClaim", key) or {}
    done = (claim.get("spec") or {}).get("volumeName") and "pv.kubernetes.io/bind-completed" in (
        claim.get("metadata", {}).get("annotations") or {})
    return claim if done else None


def _clean(store) -> None:
    """Everything this test made; claims and volumes carry protection finalizers no
    controller manager removes here."""
    for ns in SCHEDULERS:
        kube_vs.clear_pods(store, ns)
    for kind in ("PersistentVolumeClaim", "PersistentVolume"):
        for obj in store.list(kind)[0]:
            meta = obj["metadata"]
            ns = meta.get("namespace") or ((obj.get("spec") or {}).get("claimRef") or {}).get("namespace")
            if ns not in SCHEDULERS:
                continue
            key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
            store.delete(kind, key)
            left = store.get(kind, key)
            if left is not None and left["metadata"].get("finalizers"):
                left["metadata"]["finalizers"] = []
                store.update(left)
    store.delete("StorageClass", CLASS)
    store.delete("PriorityClass", NEVER)
    for i in range(NODES):
        store.delete("Node", f"sem-node-{i}")
