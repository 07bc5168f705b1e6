"""Differential tests: on random clusters and pods, every default plugin's vectorised form
(filter_vec, score_vec, reasons_vec) must agree with its per-node form (filter, score), node
by node and reason by reason (the comparison itself lives in builders.Cluster.filter/score);
and the vectorised resource scores must agree with kube's per-node formulas, written out here.

Seeds are fixed, so a failure names a reproducible case.
"""
from __future__ import annotations

import math
import random

import pytest

from builders import (
    FOO, HOST, ZONE, Cluster, expr, make_config, node, node_affinity, pod, pod_affinity, pod_term, spread,
    toleration,
)
from common.model.objects import parse_pod as _parsed
from common.model.resources import BASE_RESOURCES, CPU, MEMORY
from shard.node_info import nonzero_request

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


# --- the vectorised resource scores against kube's per-node formulas ---------------------------

def _at(v, col: int) -> int:
    """Slot `col` of a resource vector (vectors end at their highest slot in use)."""
    return v[col] if col < len(v) else 0


def _fit_reference(strategy: str, resources, lut, pod_, info) -> int:
    """kube's resourceAllocationScorer for one node, written out node by node: a resource
    with no capacity is left out, an extended one counts only when the pod asks for it,
    cpu and memory use the non-zero requests."""
    total = weights = 0
    for col, w in resources:
        if col not in (CPU, MEMORY) and not _at(pod_.requests, col):
            continue
        cap = _at(info.node.allocatable, col)
        if col in (CPU, MEMORY):
            req = info.nonzero[col] + nonzero_request(pod_)[col]
        else:
            req = _at(info.requested, col) + _at(pod_.requests, col)
        if cap == 0:
            continue
        if strategy == "LeastAllocated":
            s = 0 if req > cap else (cap - req) * 100 // cap
        elif strategy == "MostAllocated":
            s = min(req, cap) * 100 // cap
        else:
            s = int(lut[100 if req > cap else min(req * 100 // cap, 100)])
            if s <= 0:
                continue
        total += s * w
        weights += w
    if not weights:
        return 0
    if strategy == "RequestedToCapacityRatio":
        return (2 * total + weights) // (2 * weights)
    return total // weights


def _balanced_reference(cols, pod_, info) -> int:
    fractions = []
    for col in cols:
        cap = _at(info.node.allocatable, col)
        if cap == 0 or (col >= len(BASE_RESOURCES) and not _at(pod_.requests, col)):
            continue
        fractions.append(min((_at(info.requested, col) + _at(pod_.requests, col)) / cap, 1.0))
    if len(fractions) < 2:
        std = 0.0
    elif len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    else:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * 100)


RESOURCE_ARGS = [
    {},  # LeastAllocated on cpu and memory; BalancedAllocation on cpu and memory
    {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]}}},
    {"NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": [
        {"name": "memory", "weight": 1}, {"name": "cpu", "weight": 3}, {"name": FOO, "weight": 2}]}},
     "NodeResourcesBalancedAllocation": {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": FOO}]}},
    {"NodeResourcesFit": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}},
     "NodeResourcesBalancedAllocation": {"resources": [{"name": "memory"}, {"name": "cpu"}]}},
]


@pytest.mark.parametrize("args", range(len(RESOURCE_ARGS)))
@pytest.mark.parametrize("seed", range(25))
def test_vectorised_resource_scores_match_kube_formulas(seed, args):
    """The vectorised scores take a shortcut when every row has capacity for every scored
    resource. Random clusters with some nodes lacking cpu, memory or the extended resource
    (allocatable 0) check both that shortcut and the general path, node by node."""
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu=rng.choice(["0", "1", "4", "8"]) if rng.random() < 0.3 else "4",
                  memory=rng.choice(["0", "2Gi"]) if rng.random() < 0.2 else rng.choice(["2Gi", "16Gi"]),
                  extra={FOO: rng.choice([0, 2, 8])})
             for i in range(rng.randint(1, 20))]
    names = [n["metadata"]["name"] for n in nodes]
    running = [pod(f"e{j}", cpu=rng.choice([None, "500m", "2"]), memory=rng.choice([None, "1Gi"]),
                   node_name=rng.choice(names)) for j in range(rng.randint(0, 15))]
    c = Cluster(nodes, running, cfg=make_config(plugin_config=RESOURCE_ARGS[args]))
    fit, balanced = c.plugin("NodeResourcesFit"), c.plugin("NodeResourcesBalancedAllocation")
    infos = {name: c.table.infos[c.table.row_of[name]] for name in names}
    for k in range(5):
        extra = {FOO: rng.choice([1, 3])} if rng.random() < 0.5 else None
        p = pod(f"p{k}", cpu=rng.choice([None, "100m", "2", "6"]), memory=rng.choice([None, "1Gi", "10Gi"]),
                extra=extra)
        parsed = _parsed(p)
        assert c.score("NodeResourcesFit", p, normalize=False) == {
            name: _fit_reference(fit.strategy, fit.resources, fit.shape_lut, parsed, info)
            for name, info in infos.items()}
        if any(_at(parsed.requests, col) for col in balanced.cols):  # else PreScore skips it
            assert c.score("NodeResourcesBalancedAllocation", p, normalize=False) == {
                name: _balanced_reference(balanced.cols, parsed, info) for name, info in infos.items()}


def test_resource_scores_follow_a_node_losing_and_regaining_its_cpu():
    """The scores read cpu and memory from the table's own columns while every node has
    some of each, and take the general path while one has none: a node's allocatable
    changing (to no cpu, and back) moves the table between the two, and the scores of
    the other nodes stay the same either way."""
    nodes = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi")]
    c = Cluster(nodes, [pod("e", cpu="1", memory="1Gi", node_name="a")])
    p = pod("p", cpu="2", memory="2Gi")
    fit = {"a": (25 + 62) // 2, "b": (75 + 75) // 2}  # (cap - req) * 100 // cap per resource
    balanced = {"a": int((1 - abs(3 / 4 - 3 / 8) / 2) * 100), "b": int((1 - abs(2 / 8 - 2 / 8) / 2) * 100)}
    assert c.table.base_gaps == 0
    assert c.score("NodeResourcesFit", p, normalize=False) == fit
    assert c.score("NodeResourcesBalancedAllocation", p, normalize=False) == balanced
    c.add_node(node("b", cpu="0", memory="8Gi"))
    assert c.table.base_gaps == 1
    # b: cpu is left out of both (no capacity): memory alone
    assert c.score("NodeResourcesFit", p, normalize=False) == {"a": fit["a"], "b": 75}
    assert c.score("NodeResourcesBalancedAllocation", p, normalize=False) == {"a": balanced["a"], "b": 100}
    c.add_node(node("b", cpu="8", memory="8Gi"))
    assert c.table.base_gaps == 0
    assert c.score("NodeResourcesFit", p, normalize=False) == fit
    c.table.check()
