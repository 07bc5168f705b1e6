"""Placement quality (Scheduler.grade, shard/quality.py, common/runtime/quality.py): a graded
cycle's regret is the chosen node's shortfall from the best node of all the feasible ones."""
from __future__ import annotations

import zlib

from builders import Cluster, make_config, node, pod
from common.runtime import quality
from shard.quality import QualitySampler

MOST = {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}}


def _loaded():
    """Nodes of one size with loads rising by number (cpu and memory in step)."""
    nodes = [node(f"n{i:02d}", cpu="16", memory="64Gi") for i in range(24)]
    load = [pod(f"load{i}", cpu=f"{500 * (i + 1)}m", memory=f"{2 * (i + 1)}Gi", node_name=f"n{i:02d}")
            for i in range(24)]
    return nodes, load


def test_a_choice_among_every_feasible_node_has_no_regret():
    cfg = make_config("all", plugin_config=MOST)
    c = Cluster(*_loaded(), cfg=cfg)
    result = c.schedule(pod("p", cpu="1", memory="4Gi"))
    assert result.node == "n23"
    assert c.sched.grade(result) == 0.0


def test_a_shard_packing_its_own_slice_regrets_the_fuller_node_of_another():
    cfg = make_config("all", plugin_config=MOST)
    nodes, load = _loaded()
    shard = Cluster(nodes, load, cfg=cfg, slice_of=(0, 2))
    whole = Cluster(nodes, load, cfg=cfg)
    p = pod("p", cpu="1", memory="4Gi")
    result = shard.schedule(p)
    assert zlib.crc32(result.node.encode()) % 2 == 0 and result.node != "n23"
    regret = shard.sched.grade(result)
    # by hand: each scorer's normalised score over all nodes, weighted, at the best and the chosen node
    best, chosen = _total(whole, "n23", p), _total(whole, result.node, p)
    assert regret == 100.0 * (best - chosen) / best > 0


def _total(cluster, name, p) -> int:
    """The node's total score among all nodes (the sum of each scorer's weighted score)."""
    total = 0
    for plugin in cluster.profile.scorers:
        total += plugin.weight * cluster.score(plugin.name, p)[name]
    return total


def test_failures_and_preemptions_are_not_graded():
    cfg = make_config("all", plugin_config=MOST)
    c = Cluster(*_loaded(), cfg=cfg)
    result = c.schedule(pod("huge", cpu="64"))
    assert not result.scheduled and c.sched.grade(result) is None


def test_the_sampler_counts_grades_in_buckets_that_sum_across_shards():
    a, b = QualitySampler(100), QualitySampler(100)
    assert a.due() and not QualitySampler(0).due()
    for r in (0.0, 0.0, 2.5, None):
        a.record(r)
    for r in (0.0, 10.04):
        b.record(r)
    got = quality.summarize([dict(a.counts), dict(b.counts)])
    assert got == {"sampled": 5, "regret_pct_mean": round((2.5 + 10.0) / 5, 2), "regret_pct_p99": 10.0,
                   "optimal_share": 0.6}
    assert quality.summarize([{}])["sampled"] == 0


def test_a_rescan_after_the_decision_sees_the_same_snapshot():
    """The shard grades right after the cycle, before the next refresh: the pod assumed on
    its node in the cache does not count against the node in the grading."""
    cfg = make_config("all", plugin_config=MOST)
    c = Cluster(*_loaded(), cfg=cfg)
    result = c.schedule(pod("p", cpu="1", memory="4Gi"))
    c.cache.assume(result.pod, result.node)
    assert c.sched.grade(result) == 0.0
