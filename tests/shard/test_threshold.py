"""The feasible-node threshold: kube-scheduler's percentageOfNodesToScore rule, a fixed
percentage, all nodes, and the adaptive target (shrinking with rejections and queue length,
or growing with them for quality-first profiles); then its effect inside a cycle."""
from __future__ import annotations

import pytest

from builders import Cluster, make_config, node, pod, toleration
from shard.threshold import Threshold, kube_rule


def threshold(**over) -> Threshold:
    """`over`: threshold fields, as the file writes them."""
    return Threshold(make_config("adaptive", threshold=over).threshold)


@pytest.mark.parametrize("nodes, expected", [
    (0, 0), (1, 1), (99, 99),            # below 100 nodes: all of them
    (100, 100),                          # 49% of 100 = 49, but never fewer than 100
    (200, 100),                          # 49% -> 98 -> 100
    (1000, 420),                         # 50 - 1000/125 = 42%
    (2000, 680),                         # 34%
    (5000, 500),                         # 10%
    (5624, 337),                         # 50 - 44 = 6% (integer division of nodes/125)
    (5625, 281),                         # 50 - 45 = 5%
    (6000, 300),                         # 50 - 48 = 2% -> at least 5%
    (20000, 1000),                       # 5%
])
def test_kube_rule(nodes, expected):
    assert kube_rule(nodes) == expected
    assert threshold(mode="kube").target(nodes) == expected


@pytest.mark.parametrize("percentage, nodes, expected", [
    (10, 5000, 500), (1, 5000, 100), (100, 5000, 5000), (50, 80, 80),
    (0, 1000, 420),                      # 0 falls back to the kube rule
])
def test_percentage_mode(percentage, nodes, expected):
    assert threshold(mode="percentage", percentage=percentage).target(nodes) == expected


def test_all_mode():
    t = threshold(mode="all")
    assert [t.target(n, examined=n, rejected=n - 1, queued=10**6) for n in (0, 7, 20000)] == [0, 7, 20000]


def test_adaptive_starts_at_max_and_is_capped_by_the_node_count():
    t = threshold()
    assert t.target(10000) == 300 and t.last == 300
    assert t.target(50) == 50 and t.last == 50


@pytest.mark.parametrize("examined, rejected, queued, expected", [
    (100, 0, 0, 300),
    (100, 50, 0, 150),        # (1 - 0.5) ** 1
    (100, 60, 0, 120),
    (100, 90, 0, 100),        # 30, but never below minFeasibleNodes
    (0, 0, 9, 200),           # / (1 + 0.5 * log10(10))
    (0, 0, 99, 150),          # / (1 + 0.5 * 2)
    (100, 50, 9, 100),        # 300 * 0.5 / 1.5
])
def test_adaptive_shrinks_with_rejections_and_queue(examined, rejected, queued, expected):
    assert threshold().target(10000, examined, rejected, queued) == expected


@pytest.mark.parametrize("examined, rejected, queued, expected", [
    (100, 0, 0, 300),
    (100, 50, 0, 450),        # * (1 + 0.5)
    (0, 0, 9, 450),           # * 1.5
    (100, 50, 9, 675),
    (100, 100, 99999, 2000),  # capped at the node count
])
def test_adaptive_growth_for_quality_first_profiles(examined, rejected, queued, expected):
    assert threshold(growth=True).target(2000, examined, rejected, queued) == expected


def test_adaptive_decays_can_be_switched_off():
    t = threshold(rejectionDecay=0, queueDecay=0)
    assert t.target(10000, 100, 99, 10**6) == 300


def test_adaptive_min_and_max_are_configurable():
    t = threshold(minFeasibleNodes=10, maxFeasibleNodes=40)
    assert t.target(10000) == 40
    assert t.target(10000, 100, 90, 0) == 10


# --- inside a cycle -------------------------------------------------------------------------

def test_adaptive_cycle_finds_max_feasible_nodes_when_nothing_is_rejected():
    nodes = [node(f"n{i:04d}") for i in range(1000)]
    r = Cluster(nodes, cfg=make_config("adaptive")).schedule(pod("p"))
    assert r.scheduled and r.feasible == 300 and r.threshold == 300


def test_adaptive_cycle_shrinks_with_a_long_queue():
    nodes = [node(f"n{i:04d}") for i in range(1000)]
    r = Cluster(nodes, cfg=make_config("adaptive")).schedule(pod("p"), queued=99)
    assert r.feasible == 150 and r.threshold == 150


def test_adaptive_cycle_shrinks_when_most_nodes_are_rejected():
    """Nine nodes in ten are tainted: the target falls to minFeasibleNodes (100); with growth
    it rises past maxFeasibleNodes instead (and there are only 100 to find)."""
    nodes = [node(f"n{i:04d}", taints=[] if i % 10 == 0 else ["t=1:NoSchedule"]) for i in range(1000)]
    r = Cluster(nodes, cfg=make_config("adaptive")).schedule(pod("p"))
    assert r.scheduled and r.threshold == 100 and r.feasible == 100
    grow = make_config("adaptive", threshold={"growth": True})
    r = Cluster(nodes, cfg=grow).schedule(pod("p"))
    assert r.threshold > 300 and r.feasible == 100
    # tolerating the taint makes every node feasible again: back to 300
    r = Cluster(nodes, cfg=make_config("adaptive")).schedule(pod("p", tolerations=[toleration("t")]))
    assert r.feasible == 300


def test_kube_threshold_stops_the_scan_early():
    """With 500 feasible nodes the kube rule looks for max(100, 500 * 46%) = 230 of them."""
    nodes = [node(f"n{i:03d}") for i in range(500)]
    vec = Cluster(nodes, cfg=make_config("kube")).schedule(pod("p"))
    assert vec.scheduled and vec.feasible == 230 and vec.threshold == 230
    per_node = Cluster(nodes, cfg=make_config("kube"), vectorised=False).schedule(pod("p"))
    assert per_node.scheduled and per_node.feasible == 230  # node by node, like kube
    every = Cluster(nodes, cfg=make_config("all")).schedule(pod("p"))
    assert every.feasible == 500
