"""PrioritySort: the queue's order, higher priority first, then arrival; after kube-scheduler's
own plugin test."""
from __future__ import annotations

from shard.queue import QueuedPod
from builders import Cluster, pod


def test_priority_sort_orders_by_priority_then_arrival():
    """Higher priority first; equal priorities keep the order in which they were queued."""
    plugin = Cluster().plugin("PrioritySort")
    from common.model.objects import parse_pod

    def entry(name, prio, t):
        return QueuedPod(parse_pod(pod(name, priority=prio)), t, plugin.less)

    low_early, high_late, high_early = entry("a", 1, 1.0), entry("b", 10, 5.0), entry("c", 10, 2.0)
    assert plugin.less(high_late, low_early) and not plugin.less(low_early, high_late)
    assert plugin.less(high_early, high_late) and not plugin.less(high_late, high_early)
    assert sorted([low_early, high_late, high_early]) == [high_early, high_late, low_early]
