"""`shardsched bench --churn` (benchmarks/churn.py): a kubelet's writes through the store, and
the whole stack scheduling through them."""
from __future__ import annotations

import time

import orjson

from benchmarks import e2e
from benchmarks.churn import Churn, heartbeat, running
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


def test_running_writes_kwoks_status_and_leaves_the_pod_it_was_given_unchanged():
    bound = pod("p0", node_name="n1", phase="Pending")
    bound["metadata"]["resourceVersion"] = "7-0"
    bound["status"]["hostIP"] = "10.1.2.3"
    before = orjson.dumps(bound)
    out = running(bound, "2026-01-02T03:04:05Z", "10.0.0.9")
    assert orjson.dumps(bound) == before
    when = "2026-01-02T03:04:05Z"
    assert out["status"] == {
        "phase": "Running", "hostIP": "10.1.2.3", "startTime": when, "podIP": "10.0.0.9",
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": when}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]}
    # the rest of the document is the pod's, key for key and in its order
    assert orjson.dumps({k: v for k, v in out.items() if k != "status"}) == \
        orjson.dumps({k: v for k, v in bound.items() if k != "status"})
    assert list(out) == list(bound)


def test_a_heartbeat_moves_only_the_conditions_heartbeat_and_leaves_the_node_unchanged():
    n = node("n1", ready=True)
    n["status"]["conditions"].append({"type": "MemoryPressure", "status": "False"})
    n["metadata"]["resourceVersion"] = "3-0"
    before = orjson.dumps(n)
    out = heartbeat(n, "2026-01-02T03:04:05Z")
    assert orjson.dumps(n) == before
    assert "resourceVersion" not in out["metadata"]
    assert [c["lastHeartbeatTime"] for c in out["status"]["conditions"]] == ["2026-01-02T03:04:05Z"] * 2
    for old, new in zip(n["status"]["conditions"], out["status"]["conditions"]):
        assert {k: v for k, v in new.items() if k != "lastHeartbeatTime"} == \
            {k: v for k, v in old.items() if k != "lastHeartbeatTime"}
    assert {k: v for k, v in out["status"].items() if k != "conditions"} == \
        {k: v for k, v in n["status"].items() if k != "conditions"}
    assert out["spec"] == n["spec"] and list(out) == list(n)
