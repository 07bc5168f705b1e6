"""`shardsched bench --churn` (benchmarks/churn.py): a kubelet's writes through the store, and
the whole stack scheduling through them."""
from __future__ import annotations

import time

from benchmarks import e2e
from benchmarks.churn import Churn
from builders import node, pod, stack_config
from common.store.memory import MemoryStore


class Unclosed:
    """One shared MemoryStore handed out as each writer's "connection" (closing it is a no-op)."""

    def __init__(self, store):
        self.store = store

    def __getattr__(self, name):
        return getattr(self.store, name)

    def close(self):
        pass


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_every_node_gets_heartbeats_and_every_bound_pod_is_marked_running():
    store = MemoryStore()
    nodes = [node(f"n{i}", ready=True) for i in range(40)]
    store.create_many(nodes)
    store.create_many([pod(f"p{i}", uid=None) for i in range(5)])
    _, rv = store.list("Pod")
    store.bind("default/p0", "n1")  # before it starts: seen through its watch from rv
    store.bind("default/p1", "n2")
    churn = Churn(lambda: Unclosed(store), nodes, rv, heartbeat_s=0.5, seed=1)
    churn.start()
    try:
        wait_for(lambda: churn.counts["heartbeats"] >= 80 and churn.counts["running"] >= 2)
        store.bind("default/p2", "n3")  # bound while it runs
        wait_for(lambda: churn.counts["running"] >= 3)
    finally:
        counts = churn.stop()
    assert counts["errors"] == 0 and counts["heartbeats"] >= 80 and counts["heartbeat_s"] == 0.5
    for n in store.list("Node")[0]:
        ready = n["status"]["conditions"][0]
        assert ready["type"] == "Ready" and ready["status"] == "True" and ready["lastHeartbeatTime"]
        assert n["status"]["allocatable"] == next(d for d in nodes if d["metadata"]["name"] == n["metadata"]["name"])["status"]["allocatable"]
    for i in range(5):
        stored = store.get("Pod", f"default/p{i}")
        if i < 3:
            assert stored["status"]["phase"] == "Running" and stored["spec"]["nodeName"] == f"n{i + 1}"
            assert {c["type"] for c in stored["status"]["conditions"] if c["status"] == "True"} >= {"Ready", "PodScheduled"}
        else:
            assert stored["status"].get("phase") != "Running" and not stored["spec"].get("nodeName")


def test_a_small_bench_with_churn_binds_everything_and_verifies():
    cfg = stack_config()
    doc = e2e.run(cfg, 300, "mixed", 2000, "mixed", 0.0, 2, quiet=True, churn_heartbeat_s=1.0)
    assert doc["verify"]["ok"] and doc["scheduled"] > 0
    churn = doc["churn"]
    assert churn["errors"] == 0 and churn["heartbeats"] > 0 and churn["running"] > 0
    assert e2e.run(cfg, 50, "uniform", 10, "basic", 0.0, 2, quiet=True)["churn"] is None
