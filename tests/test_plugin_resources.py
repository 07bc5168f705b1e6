"""Table tests for NodeResourcesFit (filter and its three scoring strategies),
NodeResourcesBalancedAllocation and ImageLocality, with the numbers kube-scheduler's
fit/least_allocated/most_allocated/requested_to_capacity_ratio/balanced_allocation/
image_locality tests are built on (worked out by hand in the comments).
"""
from __future__ import annotations

import math
import random

import pytest

from builders import MI, Cluster, make_config, node, pod
from common.resources import BASE_RESOURCES, CPU, MEMORY
from shard.node_info import nonzero_request

UNSCHEDULABLE = "Unschedulable"
FOO = "example.com/foo"


# --- NodeResourcesFit filter ----------------------------------------------------------------

def _fit_cluster():
    """n1: 10 cpu, 20 bytes of memory, 5 cpu and 19 bytes already requested; n2: empty."""
    return Cluster([node("n1", cpu="10", memory="20"), node("n2", cpu="10", memory="20")],
                   [pod("used", cpu="5", memory="19", node_name="n1")])


@pytest.mark.parametrize("cpu, memory, reasons", [
    ("1", "1", None),
    ("5", "1", None),                                   # exactly the free cpu
    ("6", "1", ["Insufficient cpu"]),
    ("1", "2", ["Insufficient memory"]),
    ("6", "2", ["Insufficient cpu", "Insufficient memory"]),
    (None, None, None),                                 # asks for nothing: only the pod count
])
def test_fit_filter_cpu_memory(cpu, memory, reasons):
    out = _fit_cluster().filter("NodeResourcesFit", pod("p", cpu=cpu, memory=memory))
    assert out["n2"] is None
    if reasons is None:
        assert out["n1"] is None
    else:
        code, message = out["n1"]
        assert code == UNSCHEDULABLE
        assert sorted(message.split(", ")) == reasons


def test_fit_zero_request_pod_fits_an_overcommitted_node():
    """A pod asking for no cpu/memory is checked against the pod count only, as in kube."""
    c = Cluster([node("n1", cpu="1", memory="1Gi")], [pod("big", cpu="2", memory="2Gi", node_name="n1")])
    assert c.filter("NodeResourcesFit", pod("p"))["n1"] is None
    assert c.filter("NodeResourcesFit", pod("p", cpu="1m"))["n1"] == (UNSCHEDULABLE, "Insufficient cpu")


def test_fit_too_many_pods():
    c = Cluster([node("n1", pods="1"), node("n2", pods="2")], [pod("a", node_name="n1"), pod("b", node_name="n2")])
    out = c.filter("NodeResourcesFit", pod("p"))
    assert out == {"n1": (UNSCHEDULABLE, "Too many pods"), "n2": None}


def test_fit_extended_resources():
    c = Cluster([node("has2", extra={FOO: 2}), node("has2used1", extra={FOO: 2}), node("none")],
                [pod("u", extra={FOO: 1}, node_name="has2used1")])
    out = c.filter("NodeResourcesFit", pod("p", extra={FOO: 2}))
    assert out == {"has2": None, "has2used1": (UNSCHEDULABLE, f"Insufficient {FOO}"),
                   "none": (UNSCHEDULABLE, f"Insufficient {FOO}")}
    assert c.passing("NodeResourcesFit", pod("p", extra={FOO: 1})) == {"has2", "has2used1"}


def test_fit_ignored_resources():
    """args.ignoredResources: the named extended resource is not checked by the filter."""
    cfg = make_config(plugin_config={"NodeResourcesFit": {"ignoredResources": [FOO]}})
    c = Cluster([node("none")], cfg=cfg)
    assert c.filter("NodeResourcesFit", pod("p", extra={FOO: 5})) == {"none": None}


def test_fit_counts_init_containers_and_overhead():
    """The request is max(sum of containers, largest init container) plus overhead."""
    p = pod("p", cpu="1")
    p["spec"]["initContainers"] = [{"name": "init", "image": "x", "resources": {"requests": {"cpu": "3"}}}]
    c = Cluster([node("n3", cpu="3"), node("n2", cpu="2")])
    assert c.passing("NodeResourcesFit", p) == {"n3"}
    p["spec"]["overhead"] = {"cpu": "500m"}
    assert c.passing("NodeResourcesFit", p) == set()


# --- NodeResourcesFit scores ----------------------------------------------------------------

def _two_nodes(cfg=None, pods=()):
    """kube's "differently sized nodes": 4000m/10000 and 6000m/10000 (memory in bytes)."""
    return Cluster([node("n1", cpu="4", memory="10000"), node("n2", cpu="6", memory="10000")], pods, cfg=cfg)


def test_least_allocated_default():
    # n1: cpu (4000-3000)*100/4000 = 25, mem (10000-5000)*100/10000 = 50 -> 37
    # n2: cpu (6000-3000)*100/6000 = 50, mem 50 -> 50
    assert _two_nodes().score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 37, "n2": 50}


def test_least_allocated_counts_existing_pods_and_nonzero_defaults():
    """Empty requests count as 100m cpu / 200Mi memory for scoring, for both the incoming pod
    and the pods already on the node."""
    c = Cluster([node("a", cpu="4", memory="1000Mi"), node("b", cpu="4", memory="1000Mi")],
                [pod("e1", node_name="a")])
    # b: cpu (4000-100)*100/4000 = 97, mem (1000-200)*100/1000 = 80 -> 88
    # a: cpu (4000-200)*100/4000 = 95, mem (1000-400)*100/1000 = 60 -> 77
    assert c.score("NodeResourcesFit", pod("p")) == {"a": 77, "b": 88}


def test_least_allocated_weights():
    cfg = make_config(plugin_config={"NodeResourcesFit": {"scoringStrategy": {
        "type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}})
    # n1: (25*3 + 50)/4 = 31; n2: (50*3 + 50)/4 = 50
    assert _two_nodes(cfg).score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 31, "n2": 50}


def test_most_allocated():
    cfg = make_config(plugin_config={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}})
    # n1: cpu 3000*100/4000 = 75, mem 50 -> 62; n2: cpu 50, mem 50 -> 50
    assert _two_nodes(cfg).score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 62, "n2": 50}


def test_most_allocated_caps_overcommitted_nodes():
    cfg = make_config(plugin_config={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}})
    c = _two_nodes(cfg, [pod("hog", cpu="8", memory="20000", node_name="n1")])
    # n1: requested > capacity on both -> 100; n2: 50, 50
    assert c.score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 100, "n2": 50}


def _rtcr(shape, resources=None):
    strategy = {"type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]}}
    if resources:
        strategy["resources"] = resources
    return make_config(plugin_config={"NodeResourcesFit": {"scoringStrategy": strategy}})


def test_requested_to_capacity_ratio_bin_packing():
    """Shape 0 -> 0, 100 -> 10 (scaled to 0..100); per-resource scores are averaged over the
    resources that scored above zero, rounded to the nearest integer (math.Round)."""
    cfg = _rtcr([(0, 0), (100, 10)])
    # n1: cpu 75, mem 50 -> round(62.5) = 63; n2: 50, 50 -> 50
    assert _two_nodes(cfg).score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 63, "n2": 50}


def test_requested_to_capacity_ratio_leaves_out_zero_scores():
    """kube adds a resource's weight only when its score is > 0: a node where memory scores 0
    is judged on cpu alone (cpu 50 -> 50, not (50 + 0) / 2)."""
    cfg = _rtcr([(0, 0), (100, 10)])
    c = Cluster([node("n1", cpu="4", memory="1000Gi")], cfg=cfg)
    assert c.score("NodeResourcesFit", pod("p", cpu="2", memory="1Mi")) == {"n1": 50}


def test_requested_to_capacity_ratio_integer_interpolation():
    """The broken-linear function uses integer arithmetic truncating toward zero, as Go does:
    shape 0 -> 100, 30 -> 0 at 10% utilisation is 100 + (-100 * 10) / 30 = 100 - 33 = 67."""
    cfg = _rtcr([(0, 10), (30, 0)], resources=[{"name": "cpu", "weight": 1}])
    c = Cluster([node("n1", cpu="10"), node("n2", cpu="10")], [pod("u", cpu="4", node_name="n2")], cfg=cfg)
    # n2: 50% utilisation, past the last point -> 0 (the resource then has no weight -> 0)
    assert c.score("NodeResourcesFit", pod("p", cpu="1")) == {"n1": 67, "n2": 0}


def test_requested_to_capacity_ratio_over_capacity_is_full_utilisation():
    cfg = _rtcr([(0, 0), (50, 5), (100, 10)], resources=[{"name": "cpu", "weight": 1}])
    c = Cluster([node("n1", cpu="2"), node("n2", cpu="4")], [pod("hog", cpu="5", node_name="n1")], cfg=cfg)
    # n1: 6000 > 2000 -> utilisation 100 -> 100; n2: 1000*100/4000 = 25 -> 0 + 50*25/50 = 25
    assert c.score("NodeResourcesFit", pod("p", cpu="1")) == {"n1": 100, "n2": 25}


def test_extended_resource_scored_only_when_requested():
    cfg = make_config(plugin_config={"NodeResourcesFit": {"scoringStrategy": {
        "type": "LeastAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": FOO, "weight": 1}]}}})
    c = Cluster([node("n1", cpu="4", memory="10000", extra={FOO: 4}), node("n2", cpu="4", memory="10000")], cfg=cfg)
    # no foo requested: cpu 25, mem 50 on both -> 37
    assert c.score("NodeResourcesFit", pod("p", cpu="3", memory="5000")) == {"n1": 37, "n2": 37}
    # foo requested: n1 adds (4-1)*100/4 = 75 -> (25+50+75)/3 = 50; n2 has no foo: left out -> 37
    assert c.score("NodeResourcesFit", pod("p", cpu="3", memory="5000", extra={FOO: 1})) == {"n1": 50, "n2": 37}


# --- NodeResourcesBalancedAllocation --------------------------------------------------------

def test_balanced_allocation_two_resources():
    # n1: fractions 0.75 / 0.5 -> std 0.125 -> 87; n2: 0.5 / 0.5 -> 100
    c = _two_nodes()
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="3", memory="5000")) == {"n1": 87, "n2": 100}


def test_balanced_allocation_counts_existing_requests_and_caps_fractions():
    c = _two_nodes(pods=[pod("hog", cpu="6", memory="1000", node_name="n1")])
    # n1: cpu (6000+3000)/4000 capped at 1, mem 6000/10000 = 0.6 -> std 0.2 -> 80
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="3", memory="5000"))["n1"] == 80


def test_balanced_allocation_skips_best_effort_pods():
    """kube (1.32+) skips BalancedAllocation for pods requesting none of its resources, so
    best-effort pods are not all drawn to the node whose existing load is most balanced."""
    c = _two_nodes(pods=[pod("x", cpu="3", memory="1000", node_name="n1")])
    assert c.score("NodeResourcesBalancedAllocation", pod("p")) == {"n1": 0, "n2": 0}
    st = c.plugin("NodeResourcesBalancedAllocation").pre_score({}, _parsed(pod("p")), None)
    assert st is not None and st.code == "Skip"


def test_balanced_allocation_three_resources_and_unrequested_extended():
    cfg = make_config(plugin_config={"NodeResourcesBalancedAllocation": {
        "resources": [{"name": "cpu"}, {"name": "memory"}, {"name": FOO}]}})
    c = Cluster([node("n1", cpu="4", memory="10000", extra={FOO: 4})], cfg=cfg)
    # foo requested: fractions 0.75, 0.5, 0.25 -> mean 0.5, std sqrt(0.125/3) = 0.2041 -> 79
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="3", memory="5000", extra={FOO: 1})) == {"n1": 79}
    # foo not requested: kube leaves the extended resource out -> 0.75 / 0.5 -> 87
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="3", memory="5000")) == {"n1": 87}


def _parsed(p):
    from common.objects import parse_pod
    return parse_pod(p)


# --- ImageLocality --------------------------------------------------------------------------

def test_image_locality_scales_by_spread():
    """An image's size counts in proportion to the share of nodes holding it, mapped to
    0..100 between 23MB and 1000MB per container."""
    c = Cluster([node("n1", images={"app:v1": 500 * MI}), node("n2")])
    # n1: 500MB * 1/2 = 250MB -> (250-23)*100/(1000-23) = 23
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 23, "n2": 0}


def test_image_locality_everywhere_and_thresholds():
    c = Cluster([node("n1", images={"app:v1": 500 * MI, "tiny:1": 10 * MI, "huge:1": 3000 * MI}),
                 node("n2", images={"app:v1": 500 * MI, "tiny:1": 10 * MI, "huge:1": 3000 * MI})])
    # on both nodes: full size 500MB -> 477*100/977 = 48
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 48, "n2": 48}
    assert c.score("ImageLocality", pod("p", images=["tiny:1"])) == {"n1": 0, "n2": 0}     # below 23MB
    assert c.score("ImageLocality", pod("p", images=["huge:1"])) == {"n1": 100, "n2": 100}  # capped
    # two containers: the ceiling is 2000MB, and 3010MB of images is past it -> 100
    assert c.score("ImageLocality", pod("p", images=["huge:1", "tiny:1"])) == {"n1": 100, "n2": 100}
    # two containers, 500MB of images: (510-23)*100/(2000-23) = 24
    assert c.score("ImageLocality", pod("p", images=["app:v1", "tiny:1"])) == {"n1": 24, "n2": 24}


def test_image_locality_implicit_latest_tag():
    """A pod's "nginx" is the node's "nginx:latest"; a different tag is a different image."""
    c = Cluster([node("n1", images={"nginx:latest": 800 * MI}), node("n2", images={"nginx:1.25": 800 * MI})])
    # n1: 800MB * 1/2 = 400MB -> 377*100/977 = 38
    assert c.score("ImageLocality", pod("p", images=["nginx"])) == {"n1": 38, "n2": 0}


def test_image_locality_no_image_anywhere_skips():
    c = Cluster([node("n1", images={"other:1": 800 * MI})])
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 0}


def test_image_locality_counts_init_containers():
    """kube scores init containers' images too, and the ceiling grows with every container."""
    p = pod("p", images=["pause"])
    p["spec"]["initContainers"] = [{"name": "init", "image": "tools:1"}]
    c = Cluster([node("n1", images={"tools:1": 500 * MI}), node("n2")])
    # 500MB * 1/2 = 250MB over two containers: (250-23)*100/(2000-23) = 11
    assert c.score("ImageLocality", p) == {"n1": 11, "n2": 0}


def test_balanced_allocation_matches_kubes_floating_point():
    """For two resources kube computes |f1 - f2| / 2, which is not always bit-equal to the
    general standard deviation, and the score is truncated: fractions 1.0 (capped) and 0.32
    give 66 in kube, where the square root of the variance lands just below and gives 65."""
    c = Cluster([node("n1", cpu="1", memory="100")], [pod("hog", cpu="2", memory="30", node_name="n1")])
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="1", memory="2")) == {"n1": 66}


# --- the vectorised resource scores against kube's per-node formulas ---------------------------

def _fit_reference(strategy: str, resources, lut, pod_, info) -> int:
    """kube's resourceAllocationScorer for one node, written out node by node: a resource
    with no capacity is left out, an extended one counts only when the pod asks for it,
    cpu and memory use the non-zero requests."""
    total = weights = 0
    for col, w in resources:
        if col not in (CPU, MEMORY) and not pod_.requests[col]:
            continue
        cap = info.node.allocatable[col]
        if col in (CPU, MEMORY):
            req = info.nonzero[col] + nonzero_request(pod_)[col]
        else:
            req = info.requested[col] + pod_.requests[col]
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
        cap = info.node.allocatable[col]
        if cap == 0 or (col >= len(BASE_RESOURCES) and not pod_.requests[col]):
            continue
        fractions.append(min((info.requested[col] + pod_.requests[col]) / cap, 1.0))
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
        if any(parsed.requests[col] for col in balanced.cols):  # else PreScore skips it
            assert c.score("NodeResourcesBalancedAllocation", p, normalize=False) == {
                name: _balanced_reference(balanced.cols, parsed, info) for name, info in infos.items()}
