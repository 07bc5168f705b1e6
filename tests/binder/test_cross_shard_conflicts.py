"""Conflicts between shards that only the binder can catch: four shards place pods whose
required anti-affinity and DoNotSchedule spread depend on each other's decisions. Each shard's
view lags the others', so only the binder's checks (against its view plus its reservations)
keep the final state clean; with them switched off, the same run breaks the constraints,
which is what makes this test able to fail."""
from __future__ import annotations

import time

import pytest

from builders import node, pod, pod_affinity, pod_term, spread, stack_config
from common import config
from common.tools.local_cluster import LocalCluster
from common.model.objects import parse_node
from common.scheduling.partition import partition_of
from common.store import open_store
from common.store.embedded import EmbeddedRedis
from common.tools.verify import verify_store

ZONE = "topology.kubernetes.io/zone"
NODES, APPS, PER_APP = 120, 6, 100


def cluster_config(binders: int, cross_node_checks: bool = True) -> config.Config:
    return stack_config(shards={"count": 4}, binders={"count": binders, "crossNodeChecks": cross_node_checks})


def workload() -> list[dict]:
    """Six apps of 100 pods: one pod of an app per node, spread over the four zones."""
    out = []
    for a in range(APPS):
        labels = {"app": f"app-{a}"}
        for i in range(PER_APP):
            out.append(pod(f"app-{a}-{i}", cpu="10m", labels=labels,
                           affinity=pod_affinity(anti_required=[pod_term(labels)]),
                           spread=[spread(1, ZONE, labels)]))
    return out


def zones() -> list[str]:
    """Four zone names, two in each of two binder partitions (so two binders share the work
    and the spread's zones span both)."""
    by_partition: dict[int, list] = {0: [], 1: []}
    i = 0
    while min(len(v) for v in by_partition.values()) < 2:
        name = f"zone-{i}"
        by_partition[partition_of(node_obj(name), 2, ZONE)].append(name)
        i += 1
    return by_partition[0][:2] + by_partition[1][:2]


def node_obj(zone: str):
    return parse_node(node("probe", labels={ZONE: zone}))


def run(binders: int, cross_node_checks: bool, tmp_path) -> dict:
    names = zones()
    with EmbeddedRedis() as server:
        store = open_store(server.url)
        store.create_many([node(f"n{i}", cpu="8", labels={ZONE: names[i % 4]}) for i in range(NODES)])
        cluster = LocalCluster(cluster_config(binders, cross_node_checks), server.url,
                               log_dir=str(tmp_path / f"logs-{binders}-{cross_node_checks}"))
        try:
            cluster.start()
            assert not store.create_many(workload())
            deadline, last, settled_at = time.monotonic() + 240, -1, time.monotonic()
            while True:
                bound = sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName"))
                if bound != last:
                    last, settled_at = bound, time.monotonic()
                if bound == APPS * PER_APP or time.monotonic() - settled_at > 15:
                    break
                assert time.monotonic() < deadline, f"only {bound} bound"
                time.sleep(0.5)
            report = verify_store(store)
            report["bound_now"] = bound
            leases = cluster.wait_ready()
            report["per_binder"] = {i: cluster.status("binder", a).counters["bound"]
                                    for i, a in leases["binder"].items()}
            return report
        finally:
            cluster.stop()
            store.close()


@pytest.mark.parametrize("binders", [1, 2])
def test_four_shards_keep_anti_affinity_and_spread(binders, tmp_path):
    report = run(binders, True, tmp_path)
    assert report["violations"] == [] and report["bound_now"] == APPS * PER_APP
    assert len(report["per_binder"]) == binders and min(report["per_binder"].values()) > 0


def test_without_the_binders_checks_the_shards_break_them(tmp_path):
    report = run(1, False, tmp_path)
    kinds = {v["kind"] for v in report["violations"]}
    assert kinds & {"pod-anti-affinity", "topology-spread"}, report["violations"][:3]
