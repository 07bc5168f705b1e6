"""Table tests for NodeResourcesFit: the filter and its three scoring strategies, with the
numbers kube-scheduler's fit/least_allocated/most_allocated/requested_to_capacity_ratio tests
are built on (worked out by hand in the comments).
"""
from __future__ import annotations

import copy

import pytest

from builders import FOO, UNRESOLVABLE, UNSCHEDULABLE, Cluster, make_config, node, pod
from builders import differently_sized_nodes as _two_nodes


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
    # v1.37: asking for more than the node's whole allocatable ("none" has no FOO) is
    # UnschedulableAndUnresolvable (no eviction helps); less, Unschedulable
    assert out == {"has2": None, "has2used1": (UNSCHEDULABLE, f"Insufficient {FOO}"),
                   "none": (UNRESOLVABLE, f"Insufficient {FOO}")}
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


def test_nonzero_defaults_apply_per_container_as_kube():
    """kube fills in 100m / 200Mi for each container (init containers too) whose request is
    missing, not for the pod's total; an explicit zero stays zero. (The defaults used to apply
    only when the pod's total was zero.)"""
    two = pod("two", images=("a", "b"))
    two["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    # cpu 1000 + 100 (b) = 1100m, memory 200Mi + 200Mi = 400Mi
    # cpu (4000-1100)*100/4000 = 72, mem (1000-400)*100/1000 = 60 -> 66
    c = Cluster([node("a", cpu="4", memory="1000Mi")])
    assert c.score("NodeResourcesFit", two) == {"a": 66}
    zero = pod("zero", images=("a",))
    zero["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0", "memory": "0"}}
    # nothing counts: 100 and 100 -> 100
    assert c.score("NodeResourcesFit", zero) == {"a": 100}
    sidecar = pod("init", images=("a",))
    sidecar["spec"]["initContainers"] = [{"name": "setup", "image": "x",
                                           "resources": {"requests": {"memory": "500Mi"}}}]
    # cpu max(100 (a), 100 (setup's default)) = 100m; memory max(200Mi, 500Mi) = 500Mi
    # cpu (4000-100)*100/4000 = 97, mem (1000-500)*100/1000 = 50 -> 73
    assert c.score("NodeResourcesFit", sidecar) == {"a": 73}
    # and the pods already on the node count the same way
    on_node = copy.deepcopy(two)
    on_node["metadata"]["name"], on_node["spec"]["nodeName"] = "bound", "a"
    c.add_pod(on_node)
    # cpu (4000-1100-1100)*100/4000 = 45, mem (1000-800)*100/1000 = 20 -> 32
    assert c.score("NodeResourcesFit", two) == {"a": 32}


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


def test_fit_ignored_resource_groups():
    """args.ignoredResourceGroups: every extended resource of the group (the part before '/')."""
    cfg = make_config(plugin_config={"NodeResourcesFit": {"ignoredResourceGroups": ["example.com"]}})
    c = Cluster([node("none")], cfg=cfg)
    assert c.filter("NodeResourcesFit", pod("p", extra={FOO: 5})) == {"none": None}
    assert c.filter("NodeResourcesFit", pod("p", extra={"other.io/bar": 1}))["none"] is not None


def test_fit_never_ignores_native_resources():
    """As in kube, only extended resources can be ignored: cpu is always checked."""
    cfg = make_config(plugin_config={"NodeResourcesFit": {"ignoredResources": ["cpu"]}})
    c = Cluster([node("small", cpu="1")], cfg=cfg)
    assert c.filter("NodeResourcesFit", pod("p", cpu="2")) == {"small": (UNRESOLVABLE, "Insufficient cpu")}
