"""NodeResourcesBalancedAllocation, with the numbers of kube-scheduler's balanced_allocation
tests (worked out by hand in the comments)."""
from __future__ import annotations

from builders import FOO, Cluster, make_config, node, pod
from builders import differently_sized_nodes as _two_nodes
from common.model.objects import parse_pod as _parsed


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


def test_balanced_allocation_matches_kubes_floating_point():
    """For two resources kube computes |f1 - f2| / 2, which is not always bit-equal to the
    general standard deviation, and the score is truncated: fractions 1.0 (capped) and 0.32
    give 66 in kube, where the square root of the variance lands just below and gives 65."""
    c = Cluster([node("n1", cpu="1", memory="100")], [pod("hog", cpu="2", memory="30", node_name="n1")])
    assert c.score("NodeResourcesBalancedAllocation", pod("p", cpu="1", memory="2")) == {"n1": 66}
