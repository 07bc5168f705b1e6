"""Differential tests: on random clusters and pods, every default plugin's vectorised form
(filter_vec, score_vec, reasons_vec) must agree with its per-node form (filter, score), node
by node and reason by reason. The comparison itself lives in builders.Cluster.filter/score.

Seeds are fixed, so a failure names a reproducible case.
"""
from __future__ import annotations

import random

import pytest

from builders import Cluster, expr, node, node_affinity, pod, pod_affinity, pod_term, spread, toleration

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
           "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity")
SCORERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation",
           "PodTopologySpread", "InterPodAffinity", "ImageLocality")


def random_node(rng, i):
    labels = {}
    for key, p, values in ((ZONE, 0.8, ["z0", "z1", "z2"]), ("disk", 0.5, ["ssd", "hdd"]),
                           ("gen", 0.7, ["1", "3", "5", "x"]), ("rack", 0.5, ["r1", "r2"])):
        if rng.random() < p:
            labels[key] = rng.choice(values)
    effects = ["NoSchedule", "NoExecute", "PreferNoSchedule"]
    # taints in random order: a node's first untolerated taint decides its reason
    taints = [f"{k}=v:{rng.choice(effects)}" for k in rng.sample(["t1", "t2", "t3"], rng.randint(0, 3))]
    return node(f"n{i}", cpu=str(rng.choice([1, 4, 8])), memory=rng.choice(["2Gi", "16Gi"]),
                pods=str(rng.choice([2, 110])), labels=labels, taints=taints,
                unschedulable=rng.random() < 0.1,
                images={"app:v1": 300 * 2**20} if rng.random() < 0.4 else None)


def random_pod(rng, name, node_name=None):
    kw: dict = {}
    if rng.random() < 0.3:
        kw["tolerations"] = [toleration(rng.choice(["t1", "t2", "t3"]))]
    if rng.random() < 0.3:
        kw["node_selector"] = {"disk": rng.choice(["ssd", "hdd"])}
    if rng.random() < 0.3:
        kw["affinity"] = node_affinity(
            [expr("gen", rng.choice(["Gt", "Lt"]), rng.randint(0, 5))], [expr(ZONE, "In", rng.choice(["z0", "z1"]))],
            preferred=[(rng.randint(1, 9), [expr("disk", "In", "ssd")])])
    elif rng.random() < 0.4:
        kw["affinity"] = pod_affinity(
            required=[pod_term({"app": rng.choice("ab")}, rng.choice([ZONE, HOST]))] if rng.random() < 0.5 else (),
            anti_required=[pod_term({"app": rng.choice("abc")}, rng.choice([ZONE, HOST, "rack"]))]
            if rng.random() < 0.5 else (),
            preferred=[(rng.randint(1, 9), pod_term({"app": "a"}, ZONE))] if rng.random() < 0.5 else ())
    if rng.random() < 0.3:
        kw["ports"] = [(rng.choice([80, 81]), rng.choice(["TCP", "UDP"]), rng.choice([None, "127.0.0.1"]))]
    if rng.random() < 0.3:
        hard = rng.random() < 0.6
        extra = {"minDomains": 3} if hard and rng.random() < 0.2 else {}
        kw["spread"] = [spread(rng.randint(1, 2), rng.choice([ZONE, HOST, "rack"]), {"app": rng.choice("ab")},
                               hard=hard, **extra)]
    if rng.random() < 0.2:
        kw["owner"] = "ReplicaSet/rs"
    return pod(name, cpu=rng.choice([None, "500m", "2", "6"]), memory=rng.choice([None, "1Gi", "10Gi"]),
               labels={"app": rng.choice("abc")}, node_name=node_name,
               images=[rng.choice(["app:v1", "pause"])], **kw)


@pytest.mark.parametrize("seed", range(150))
def test_vectorised_forms_agree_with_per_node_forms(seed):
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 25))]
    names = [n["metadata"]["name"] for n in nodes]
    running = [random_pod(rng, f"e{j}", rng.choice(names)) for j in range(rng.randint(0, 20))]
    c = Cluster(nodes, running)
    for k in range(5):
        p = random_pod(rng, f"p{k}")
        if rng.random() < 0.1:
            p["spec"]["nodeName"] = rng.choice(names)
        for name in FILTERS:
            c.filter(name, p)
        for name in SCORERS:
            c.score(name, p)


@pytest.mark.parametrize("seed", range(100))
def test_vectorised_and_per_node_cycles_agree(seed):
    """Whole cycles on random clusters: same seed, same node, or the same unschedulable
    message (filters run in the profile's order either way, so every rejected node is
    blamed on the same plugin)."""
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(rng.randint(1, 30))]
    names = [n["metadata"]["name"] for n in nodes]
    running = [random_pod(rng, f"e{j}", rng.choice(names)) for j in range(rng.randint(0, 20))]
    fast = Cluster(nodes, running, seed=seed, vectorised=True)
    slow = Cluster(nodes, running, seed=seed, vectorised=False)
    for k in range(8):
        p = random_pod(rng, f"p{k}")
        a, b = fast.schedule(p), slow.schedule(p)
        assert a.node == b.node
        if a.scheduled:
            p["spec"]["nodeName"] = a.node
            fast.add_pod(p)
            slow.add_pod(p)
        else:
            assert fast.sched.explain(a) == slow.sched.explain(b)
