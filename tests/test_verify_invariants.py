"""common.verify finds every kind of violation, and only real ones."""
from __future__ import annotations

import pytest

from common.objects import parse_node, parse_pod
from common.store.memory import MemoryStore
from common.verify import verify, verify_store


def node(name="n1", cpu="2", pods="110", taints=(), labels=None):
    return parse_node({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": name, "labels": labels or {"zone": "a"}},
                       "spec": {"taints": list(taints)},
                       "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": pods}}})


def pod(name, node_name="n1", cpu="500m", port=None, uid=None, phase=None, **spec):
    c = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    if port:
        c["ports"] = [{"containerPort": 1, "hostPort": port}]
    d = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"},
         "spec": {"containers": [c], "nodeName": node_name, **spec}}
    if phase:
        d["status"] = {"phase": phase}
    return parse_pod(d)


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
