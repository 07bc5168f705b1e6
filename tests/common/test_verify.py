"""common.verify finds every kind of violation, and only real ones."""
from __future__ import annotations

import pytest

from common.store.memory import MemoryStore
from common.verify import verify, verify_store
from builders import verify_node as node
from builders import verify_pod as pod

NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

CASES = {
    "clean": ([node()], [pod("a"), pod("b"), pod("pending", node_name=None)], set()),
    "overcommit cpu": ([node(cpu="1")], [pod("a", cpu="600m"), pod("b", cpu="600m")], {"overcommit"}),
    "overcommit pods": ([node(pods="1")], [pod("a"), pod("b")], {"overcommit"}),
    "terminal pods do not count": ([node(cpu="1")], [pod("a", cpu="800m"),
                                                     pod("b", cpu="800m", phase="Succeeded")], set()),
    "host port twice": ([node()], [pod("a", port=80), pod("b", port=80)], {"host-port"}),
    "missing node": ([node()], [pod("a", node_name="gone")], {"missing-node"}),
    "untolerated taint": ([node(taints=[NO_SCHEDULE])], [pod("a")], {"taint"}),
    "tolerated taint": ([node(taints=[NO_SCHEDULE])],
                        [pod("a", tolerations=[{"key": "dedicated", "operator": "Exists"}])], set()),
    "node selector": ([node()], [pod("a", nodeSelector={"zone": "b"})], {"node-affinity"}),
    "required affinity": ([node()], [pod("a", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}})],
        {"node-affinity"}),
    "bound twice": ([node()], [pod("a", uid="same"), pod("b", uid="same")], {"bound-twice"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_violation_kinds(case):
    nodes, pods, expected = CASES[case]
    report = verify(nodes, pods)
    assert {v["kind"] for v in report["violations"]} == expected
    assert report["ok"] == (not expected)
    assert report["bound"] == sum(1 for p in pods if p.node_name and p.phase not in ("Succeeded", "Failed"))


def test_verify_store_reads_and_reports():
    store = MemoryStore()
    store.create(node(cpu="1").raw)
    for p in (pod("a", cpu="800m"), pod("b", cpu="800m"), pod("c", node_name=None)):
        store.create(p.raw)
    report = verify_store(store)
    assert not report["ok"] and report["pending"] == 1 and report["bound"] == 2
    assert report["violations"][0]["object"] == "Node n1"
