"""The scheduling queue: activeQ order, backoff (1s doubling to 10s), the unschedulable pool
(moved back on cluster events, or after unschedulableMaxSeconds), updates and deletions.

Time is a fake clock the tests move by hand, so nothing depends on wall-clock timing.
"""
from __future__ import annotations

import pytest

from builders import Clock, Cluster, pod
from common.model.objects import parse_pod
from shard.queue import SchedulingQueue


@pytest.fixture
def clock():
    return Clock(100.0)


@pytest.fixture
def queue(clock):
    less = Cluster().plugin("PrioritySort").less
    return SchedulingQueue(less, initial_backoff=1.0, max_backoff=10.0, unschedulable_max=300.0, clock=clock)


def p(name, priority=0, **kw):
    return parse_pod(pod(name, priority=priority, **kw))


def drain(queue) -> list[str]:
    out = []
    while (e := queue.pop()) is not None:
        out.append(e.pod.name)
    return out


def test_active_queue_pops_by_priority_then_arrival(queue, clock):
    for name, prio in [("low", 1), ("high-a", 5), ("mid", 3), ("high-b", 5), ("zero", 0)]:
        queue.add(p(name, prio))
        clock.now += 0.001
    assert drain(queue) == ["high-a", "high-b", "mid", "low", "zero"]


def test_equal_priority_and_equal_time_keep_insertion_order(queue):
    for i in range(20):
        queue.add(p(f"p{i:02d}"))
    assert drain(queue) == [f"p{i:02d}" for i in range(20)]


def test_backoff_doubles_from_one_second_to_ten(queue):
    assert [queue._backoff_for(n) for n in range(1, 8)] == [1, 2, 4, 8, 10, 10, 10]


def test_backoff_holds_a_failed_pod_until_it_expires(queue, clock):
    queue.add(p("a"))
    for attempt, wait in enumerate([1, 2, 4, 8, 10, 10], start=1):
        entry = queue.pop()
        assert entry is not None and entry.attempts == attempt
        queue.requeue_backoff(entry)
        assert queue.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0}
        assert queue.next_ready_in() == pytest.approx(wait)
        clock.now += wait - 0.01
        assert queue.pop() is None  # not yet
        clock.now += 0.01


def test_backoff_does_not_block_other_pods(queue, clock):
    queue.add(p("a", 10))
    queue.requeue_backoff(queue.pop())
    queue.add(p("b", 0))
    assert drain(queue) == ["b"]
    clock.now += 1
    assert drain(queue) == ["a"]


def test_unschedulable_pool_waits_for_an_event(queue, clock):
    queue.add(p("a"))
    queue.requeue_unschedulable(queue.pop(), generation=7)
    assert queue.lengths()["unschedulable"] == 1
    clock.now += 60  # long past its 1s backoff: still parked without an event
    assert queue.pop() is None
    assert queue.move_all_to_active() == 1
    entry = queue.pop()
    assert entry.pod.name == "a" and entry.last_generation == 7 and entry.attempts == 2


def test_event_before_backoff_expiry_goes_through_backoff(queue, clock):
    queue.add(p("a"))
    queue.requeue_unschedulable(queue.pop())
    clock.now += 0.5
    queue.move_all_to_active()
    assert queue.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0}
    assert queue.pop() is None
    clock.now += 0.5
    assert drain(queue) == ["a"]


def test_unschedulable_pod_retried_after_max_time(queue, clock):
    queue.add(p("a"))
    queue.requeue_unschedulable(queue.pop())
    clock.now += 299
    assert queue.pop() is None
    clock.now += 2
    assert drain(queue) == ["a"]


def test_updated_pod_leaves_the_unschedulable_pool(queue):
    """A new version of a parked pod (its spec changed) deserves a new attempt at once."""
    queue.add(p("a"))
    queue.requeue_unschedulable(queue.pop())
    queue.add(p("a", 3))
    entry = queue.pop()
    assert entry is not None and entry.pod.priority == 3


def test_update_of_a_queued_pod_keeps_one_entry(queue):
    queue.add(p("a", 1))
    queue.add(p("a", 2))
    assert len(queue) == 1
    assert [e.pod.priority for e in iter(queue.pop, None)] == [2]


def test_delete_and_done_forget_pods_wherever_they_are(queue, clock):
    for name in ("act", "back", "unsched", "done"):
        queue.add(p(name))
    entries = {e.pod.name: e for e in iter(queue.pop, None)}
    queue.requeue_backoff(entries["back"])
    queue.requeue_unschedulable(entries["unsched"])
    queue.add(p("act2"))
    queue.delete("default/act2")
    queue.delete("default/back")
    queue.delete("default/unsched")
    queue.done("default/done")
    # "act" is in flight (popped, no outcome yet): still known, in no sub-queue
    assert "default/act" in queue and len(queue) == 1
    assert queue.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0}
    queue.done("default/act")
    assert len(queue) == 0
    clock.now += 1000
    assert queue.move_all_to_active() == 0
    assert queue.pop() is None
    # a stale entry handed back after deletion is ignored
    queue.requeue_backoff(entries["back"])
    queue.requeue_unschedulable(entries["unsched"])
    assert len(queue) == 0


def test_requeued_pod_counts_as_a_new_arrival(queue, clock):
    """kube refreshes a pod's queue timestamp when a failed attempt puts it back, so among
    equal priorities a pod that keeps failing does not stay ahead of later arrivals."""
    queue.add(p("first", 9))
    clock.now += 1
    queue.add(p("second", 9))
    clock.now += 1
    first = queue.pop()
    assert first.pod.name == "first"
    queue.requeue_backoff(first)           # failed at t+2: now it arrived after "second"
    queue.add(p("low", 1))
    clock.now += 1
    assert drain(queue) == ["second", "first", "low"]


def test_changed_pod_forgets_its_scheduling_context(queue):
    """A pod whose spec changed while parked (a toleration added) must be checked against
    every node again: its last generation is cleared, and it is tried again at once. A
    status-only update (the PodScheduled condition the shard itself writes after a failure)
    neither: the pod stays parked, as kube-scheduler's queue keeps it (isPodUpdated ignores
    status); it used to be tried again after every such write."""
    original = pod("a")
    queue.add(parse_pod(original))
    queue.requeue_unschedulable(queue.pop(), generation=42)
    status_only = dict(original, status={"phase": "Pending", "conditions": [{"type": "PodScheduled"}]},
                       metadata={**original["metadata"], "resourceVersion": "9"})
    queue.add(parse_pod(status_only))
    assert queue.pop() is None and queue.lengths()["unschedulable"] == 1
    assert queue._entries["default/a"].last_generation == 42
    assert queue._entries["default/a"].pod.raw["metadata"]["resourceVersion"] == "9"  # the newest version kept
    tolerant = pod("a", tolerations=[{"operator": "Exists"}])
    queue.add(parse_pod(tolerant))
    assert queue.pop().last_generation == 0


def test_update_of_a_pod_in_flight(queue):
    """An update may arrive between pop and the attempt's outcome: it is absorbed, and the
    outcome then parks the newest version."""
    queue.add(p("a", 1))
    entry = queue.pop()
    queue.add(p("a", 1, labels={"v": "2"}))
    assert queue.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0}
    queue.requeue_unschedulable(entry)
    queue.move_all_to_active()
    assert entry.pod.labels == {"v": "2"}


def test_a_pod_deleted_in_backoff_leaves_it_at_once(queue, clock):
    """backoffQ lets go of a deleted pod immediately: the next expiry is the next live pod's."""
    queue.add(p("gone"))
    queue.add(p("stays"))
    gone, stays = queue.pop(), queue.pop()
    queue.requeue_backoff(gone)      # 1 s
    stays.attempts = 3
    queue.requeue_backoff(stays)     # 4 s
    queue.delete("default/gone")
    assert queue.next_ready_in() == pytest.approx(4.0)
    queue.delete("default/stays")
    assert queue.next_ready_in() is None and queue.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0}


def test_an_event_no_rejector_registered_asks_no_parked_pod(queue, clock):
    """kube checks an event against the plugins that registered it before any hint: a
    backlog turned down for its size is not walked for a pod arriving elsewhere (with
    thousands parked, each binding asked every one of them), while pods rejected by a plugin
    that registered the event are still asked."""
    from shard import queueing_hints as hints
    asked = []

    def pod_arrived(pod, rejectors, other):  # the hint, spied on (its name is the event's)
        asked.append(pod.name)
        return hints.pod_arrived(pod, rejectors, other)

    for i in range(50):
        queue.add(p(f"big-{i}"))
    queue.add(p("anti"))
    for entry in iter(queue.pop, None):
        rejectors = {"InterPodAffinity"} if entry.pod.name == "anti" else {"NodeResourcesFit", "NodeAffinity"}
        queue.requeue_unschedulable(entry, 0, frozenset(rejectors))
    other = p("elsewhere", node_name="n1")
    assert queue.wake(pod_arrived, other) == 1
    assert asked == ["anti"]
    asked.clear()
    assert queue.wake(pod_arrived, other) == 0 and asked == []  # nobody left who registered it
    # an event the size rejection registered still asks (and wakes) them all
    assert queue.wake(hints.pod_left, other) == 50
