"""Coscheduling: a PodGroup's pods placed all or nothing, with scheduler-plugins' rules and
messages. Each rule as a table of cases, driven through one shard loop on the memory store
(the loop commits a group's unit with common/scheduling/group_commit.py, as `simulate` does); the
binder's side is tests/binder/test_groups.py."""
from __future__ import annotations

import pytest

from common.model.objects import parse_pod
from common.model.podgroup import INTENT_ANNOTATION
from common.store.memory import MemoryStore
from shard.loop import ShardLoop, StoreCommitter
from shard.queue import QueuedPod
from builders import (Clock, group_pod, make_config, node, pod, pod_group, priority_class, running)

ZONE = "topology.kubernetes.io/zone"


class Recording(StoreCommitter):
    """StoreCommitter that remembers each unit it committed (pod keys)."""

    def __init__(self, store):
        super().__init__(store)
        self.units = []

    def commit_unit(self, unit, items, budgets):
        self.units.append(sorted(e.pod.key for e, _ in items))
        return super().commit_unit(unit, items, budgets)


def start(objs, cfg=None, clock=None):
    store = MemoryStore()
    for o in objs:
        store.create(o)
    clock = clock or Clock(1000.0)
    committer = Recording(store)
    loop = ShardLoop(cfg or make_config(), store, clock=clock, committer=committer)
    loop.start()
    return store, loop, clock, committer


def settle(loop, passes: int = 5) -> None:
    """Cycles until the queue's activeQ is empty, Permit released, the watch applied."""
    for _ in range(passes):
        while loop.schedule_next() is not None:
            pass
        loop.release_waiting()
        loop.sync()


def bound(store) -> dict:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in store.list("Pod")[0] if p["spec"].get("nodeName")}


def members(name, n, cpu="1", **kw):
    return [group_pod(f"{name}-{i}", name, cpu, **kw) for i in range(n)]


# --- quorum ------------------------------------------------------------------------------------

@pytest.mark.parametrize("pods, min_member, room, placed", [
    (3, 3, 4, 3),   # exactly the quorum: all three, as one unit
    (4, 3, 4, 4),   # one more than the quorum: the quorum's unit, then the fourth alone
    (3, 3, 2, 0),   # only two fit: nobody
    (5, 3, 3, 3),   # three of five fit: the quorum is placed, the rest waits
])
def test_a_group_is_placed_once_min_member_fit_and_not_before(pods, min_member, room, placed):
    store, loop, clock, committer = start([node("n1", cpu=str(room)), pod_group("g", min_member),
                                           *members("g", pods)])
    settle(loop)
    clock.now += 120  # past every Permit timeout
    settle(loop)
    assert len(bound(store)) == placed
    if placed:
        assert len(committer.units[0]) == min_member, "the quorum is committed as one unit"
    assert not loop.cache.assumed and not loop.waiting.pods, "nothing stays assumed"


def test_members_wait_at_permit_until_the_last_one_completes_the_group():
    store, loop, clock, committer = start([node("n1", cpu="8"), pod_group("g", 3), *members("g", 3)])
    first, second = loop.schedule_next(), loop.schedule_next()
    assert first.scheduled and second.scheduled
    assert set(loop.waiting.pods) == {first.pod.key, second.pod.key} and not bound(store)
    assert loop.units(["default/g"])["default/g"] == {
        "minMember": 3, "members": ["default/g-0", "default/g-1", "default/g-2"], "bound": 0, "assumed": 2,
        "waiting": 2}
    loop.schedule_next()
    assert not loop.waiting.pods and committer.units == [["default/g-0", "default/g-1", "default/g-2"]]
    assert len(bound(store)) == 3
    group = store.get("PodGroup", "default/g")
    assert INTENT_ANNOTATION not in (group["metadata"].get("annotations") or {}), "the intent is removed"


#: The PostFilter part of kube's message after a PreFilter rejection: DefaultPreemption's, then
#: Coscheduling's, which rejects the group (as scheduler-plugins' does after every failure).
NOT_HELPFUL = "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
REJECTED = ", PodGroup default/g gets rejected due to Pod g-0 is unschedulable even after PostFilter"


@pytest.mark.parametrize("objs, message", [
    ([pod_group("g", 3), *members("g", 2)],
     "0/1 nodes are available: pre-filter pod g-0 cannot find enough sibling pods, current pods number: 2, "
     "minMember of group: 3. " + NOT_HELPFUL + REJECTED),
    ([pod_group("g", 2), group_pod("g-0", "g", "1"), group_pod("g-1", "g", "1", spec={"schedulingGates": [{"name": "x"}]})],
     "0/1 nodes are available: pre-filter pod g-0 cannot proceed due to gated pods in the same PodGroup. "
     + NOT_HELPFUL + REJECTED),
    ([pod_group("g", 2, min_resources={"cpu": "9"}), *members("g", 2)],
     "0/1 nodes are available: resource gap: map[cpu:1]. " + NOT_HELPFUL + REJECTED),
])
def test_pre_filter_refuses_a_group_that_cannot_reach_its_quorum(objs, message):
    store, loop, clock, committer = start([node("n1", cpu="8"), *objs])
    result = loop.schedule_next()
    assert not result.scheduled and loop.messages["default/g-0"] == message
    assert result.status.code == "UnschedulableAndUnresolvable"  # no preemption for it
    settle(loop)
    assert not bound(store)


def test_a_group_missing_its_pods_is_placed_once_the_last_one_is_created():
    store, loop, clock, committer = start([node("n1", cpu="8"), pod_group("g", 3), *members("g", 2)])
    settle(loop)
    assert loop.queue.lengths()["unschedulable"] == 2
    store.create(group_pod("g-2", "g", "1"))
    loop.sync()  # a new member wakes the parked ones at once, as scheduler-plugins' Pod/Add event
    settle(loop)
    assert len(bound(store)) == 3


def test_min_resources_count_what_lower_priority_pods_could_free():
    """minResources of 6 cpu on a node of 8 with 4 held by priority-0 pods: a priority-10
    group passes (preemption could free them), a priority-0 group does not."""
    objs = [node("n1", cpu="8"), running("low", "n1", "4", 0),
            pod_group("hi", 2, min_resources={"cpu": "6"}), *members("hi", 2, cpu="100m", priority=10),
            pod_group("lo", 2, min_resources={"cpu": "6"}), *members("lo", 2, cpu="100m", priority=0)]
    store, loop, clock, committer = start(objs)
    settle(loop)
    assert set(bound(store)) == {"low", "hi-0", "hi-1"}
    # 8 - 4 (low) - 0.2 (the hi group, placed first) is free; low's 4 are not below priority 0
    assert loop.messages["default/lo-0"] == ("0/1 nodes are available: resource gap: map[cpu:2200m]. " + NOT_HELPFUL
                                             + ", PodGroup default/lo gets rejected due to Pod lo-0 is unschedulable "
                                             "even after PostFilter")


def test_a_pod_whose_pod_group_does_not_exist_is_refused_at_permit():
    store, loop, clock, committer = start([node("n1", cpu="8"), group_pod("orphan", "nowhere", "1")])
    settle(loop)
    assert not bound(store) and loop.messages["default/orphan"] == "Coscheduling: PodGroup not found"


# --- release, timeout, backoff -----------------------------------------------------------------

def test_a_member_that_fits_nowhere_releases_the_whole_group_and_it_backs_off_as_one():
    """Two of three fit: the third's PostFilter rejects the two waiting (more than 10% of the
    quorum is missing), every assumption is released, the three share one backoff, and a
    single pod queued behind them is placed meanwhile."""
    store, loop, clock, committer = start([node("n1", cpu="2"), pod_group("g", 3), *members("g", 3),
                                           pod("single", "1")])
    for _ in range(3):
        loop.schedule_next()
    loop.release_waiting()
    assert not loop.waiting.pods and not loop.cache.assumed
    assert {k: m for k, m in loop.messages.items() if k != "default/g-2"} == {
        "default/g-0": "rejected by Coscheduling: optimistic rejection in PostFilter",
        "default/g-1": "rejected by Coscheduling: optimistic rejection in PostFilter"}
    waits = {k: loop.queue._entries[k].backoff_until for k in ("default/g-0", "default/g-1", "default/g-2")}
    assert len(set(waits.values())) == 1 and min(waits.values()) > clock.now, waits
    assert loop.schedule_next().pod.key == "default/single"  # not starved while the group backs off
    assert bound(store) == {"single": "n1"}


@pytest.mark.parametrize("group_timeout, args, waited", [(None, {}, 60), (7, {}, 7),
                                                         (None, {"permitWaitingTimeSeconds": 20}, 20)])
def test_members_wait_for_the_group_timeout_then_all_are_released(group_timeout, args, waited):
    """Two of three placed and the third not created: they wait scheduleTimeoutSeconds (else
    the plugin's permitWaitingTimeSeconds, 60 by default), then go, all of them."""
    cfg = make_config(plugin_config={"Coscheduling": {"podGroupRejectPercentage": 100, **args}})
    objs = [node("n1", cpu="8"), pod_group("g", 2, timeout=group_timeout), group_pod("g-0", "g", "1"),
            group_pod("g-1", "g", "1", node_selector={"disk": "ssd"})]  # g-1 fits nowhere
    store, loop, clock, committer = start(objs, cfg)
    settle(loop)
    assert list(loop.waiting.pods) == ["default/g-0"]
    clock.now += waited - 0.5
    loop.release_waiting()
    assert list(loop.waiting.pods) == ["default/g-0"]
    clock.now += 1
    loop.release_waiting()
    assert not loop.waiting.pods and not loop.cache.assumed and not bound(store)
    # the framework's words, the wait as Go's time.Duration prints it (60 -> "1m0s")
    wait = {60: "1m0s", 7: "7s", 20: "20s"}[waited]
    assert loop.messages["default/g-0"] == f"rejected due to timeout after waiting {wait} at plugin Coscheduling"


def test_a_timed_out_member_releases_its_waiting_siblings():
    """Three waiting: one times out first (a shorter wait: it came first), Unreserve rejects
    the other two at once."""
    cfg = make_config(plugin_config={"Coscheduling": {"podGroupRejectPercentage": 100}})
    store, loop, clock, committer = start([node("n1", cpu="8"), pod_group("g", 4, timeout=10), *members("g", 3),
                                           group_pod("g-3", "g", "1", node_selector={"disk": "ssd"})], cfg)
    loop.schedule_next()
    clock.now += 5
    settle(loop)
    assert len(loop.waiting.pods) == 3
    clock.now += 5.5  # past the first member's deadline only
    loop.release_waiting()
    assert not loop.waiting.pods
    assert sorted(loop.messages[f"default/g-{i}"] for i in range(3)) == [
        "rejected by Coscheduling: rejection in Unreserve", "rejected by Coscheduling: rejection in Unreserve",
        "rejected due to timeout after waiting 10s at plugin Coscheduling"]


def test_pod_group_backoff_refuses_members_for_that_long():
    cfg = make_config(plugin_config={"Coscheduling": {"podGroupBackoffSeconds": 30}})
    store, loop, clock, committer = start([node("n1", cpu="2"), pod_group("g", 3), *members("g", 3)], cfg)
    settle(loop, 1)
    clock.now += 20  # past the pods' own backoff, within the group's
    loop.queue.move_all_to_active()
    result = loop.schedule_next()
    assert not result.scheduled
    # PostFilter leaves a group in backoff alone: rejecting it again would only extend it
    assert loop.messages[result.pod.key] == "0/1 nodes are available: podGroup default/g failed recently. " + NOT_HELPFUL


def test_reject_percentage_lets_a_nearly_complete_group_keep_waiting():
    """9 of 10 placed (10% missing, the default podGroupRejectPercentage): the tenth's
    failure does not release the nine; with 0% it does."""
    for percentage, still_waiting in ((10, 9), (0, 0)):
        cfg = make_config(plugin_config={"Coscheduling": {"podGroupRejectPercentage": percentage}})
        store, loop, clock, committer = start([node("n1", cpu="9"), pod_group("g", 10), *members("g", 10)], cfg)
        for _ in range(10):
            loop.schedule_next()
        loop.release_waiting()
        assert len(loop.waiting.pods) == still_waiting, percentage


# --- queue order -------------------------------------------------------------------------------

def test_queue_sort_keeps_a_groups_members_together_by_priority_then_group():
    """Higher priority first; among equals, each group's members next to each other (the
    group's time in the queue, then its name), other pods by the time they were queued."""
    cfg = make_config()
    store, loop, clock, committer = start([pod_group("a", 2), pod_group("b", 2)], cfg)
    plugin = next(p for p in loop.scheduler.profiles["shardsched"].plugins if p.name == "Coscheduling")
    assert loop.queue.less.__self__.queue_sort is plugin  # Coscheduling replaces PrioritySort

    def entry(d, t):
        return QueuedPod(parse_pod(d), t, plugin.less)

    queued = [entry(group_pod("b-0", "b", "1"), 1.0), entry(pod("x", "1"), 2.0), entry(group_pod("a-0", "a", "1"), 3.0),
              entry(group_pod("b-1", "b", "1"), 4.0), entry(pod("y", "1"), 0.5), entry(group_pod("a-1", "a", "1"), 5.0),
              entry(pod("urgent", "1", priority=100), 9.0)]
    order = [e.pod.name for e in sorted(queued)]
    assert order == ["urgent", "y", "b-0", "b-1", "x", "a-0", "a-1"]


def test_a_group_that_failed_goes_behind_what_is_queued_now():
    store, loop, clock, committer = start([node("n1", cpu="1"), pod_group("g", 2), *members("g", 2)])
    plugin = next(p for p in loop.scheduler.profiles["shardsched"].plugins if p.name == "Coscheduling")
    loop.schedule_next()
    clock.now += 1
    loop.schedule_next()  # fits nowhere: the group is rejected
    later = QueuedPod(parse_pod(pod("later", "1")), clock.now - 0.5, plugin.less)
    member = QueuedPod(loop.pods["default/g-0"], 0.0, plugin.less)
    assert plugin.less(later, member)


# --- partitions --------------------------------------------------------------------------------

def test_with_several_binder_partitions_a_group_stays_in_one():
    """binders.count 2 by zone (zones "a" and "d" hash to different partitions), each zone
    with room for two of the three members: the first member's zone pins the others; there
    they cannot all fit, so the group fails, and its next attempt avoids that zone (still no
    room for three: nothing is ever bound)."""
    cfg = make_config(binders={"count": 2})
    nodes = [node(f"{z}{i}", cpu="1", labels={ZONE: z}) for z in ("a", "d") for i in range(2)]
    store, loop, clock, committer = start([*nodes, pod_group("g", 3), *members("g", 3)], cfg)
    plugin = next(p for p in loop.scheduler.profiles["shardsched"].plugins if p.name == "Coscheduling")
    first = loop.schedule_next()
    second = loop.schedule_next()
    zone = first.node[0]
    assert second.node[0] == zone
    third = loop.schedule_next()
    assert not third.scheduled and "another binder partition" in loop.messages[third.pod.key]
    loop.release_waiting()
    assert plugin.tried["default/g"], "the failed partition is remembered"
    clock.now += 60
    loop.queue.move_all_to_active()
    retry = loop.schedule_next()
    assert retry.scheduled and retry.node[0] != zone
    settle(loop)
    assert not bound(store)


# --- preemption --------------------------------------------------------------------------------

def test_a_group_preempts_for_all_its_members_or_none():
    """Each member of a priority-10 group needs a priority-0 pod evicted. With room for all
    three by preemption, the three victims go and the three members bind as one unit; with a
    node too few, no victim is evicted at all."""
    for nodes, placed in ((3, 3), (2, 0)):
        objs = [node(f"n{i}", cpu="2") for i in range(nodes)] + \
               [running(f"low-{i}", f"n{i}", "2", 0) for i in range(nodes)] + \
               [pod_group("g", 3), *members("g", 3, cpu="2", priority=10)]
        store, loop, clock, committer = start(objs, make_config(plugin_config={
            "Coscheduling": {"podGroupRejectPercentage": 100}}))
        settle(loop)
        clock.now += 120
        settle(loop)
        left = {p["metadata"]["name"] for p in store.list("Pod")[0]}
        if placed:
            assert len(bound(store)) == 3 and not any(n.startswith("low") for n in left)
        else:
            assert not bound(store).keys() - {f"low-{i}" for i in range(nodes)}
            assert {f"low-{i}" for i in range(nodes)} <= left, "no victim evicted for a group that cannot fit"
            assert sum(1 for _ in loop.cache.counted_pods()) == nodes, "the victims count again"


def test_members_of_a_group_never_take_the_same_victim_twice():
    """Two members, one node of 4 cpu holding two priority-0 pods of 2: each member needs one
    victim; while the first waits, its victim is out of the second's reckoning."""
    objs = [node("n1", cpu="4"), running("low-0", "n1", "2", 0), running("low-1", "n1", "2", 0),
            pod_group("g", 2), *members("g", 2, cpu="2", priority=10)]
    store, loop, clock, committer = start(objs)
    first, second = loop.schedule_next(), loop.schedule_next()
    assert len(first.victims) == len(second.victims) == 1
    assert {v.key for v in first.victims} | {v.key for v in second.victims} == {"default/low-0", "default/low-1"}
    assert len(bound(store)) == 2 and not {"low-0", "low-1"} & {p["metadata"]["name"] for p in store.list("Pod")[0]}
    assert len(committer.units) == 1, "bound at the first attempt"


@pytest.mark.parametrize("victim_group, min_member, victims_left", [
    ("higher", 1, 2),   # the group has a member of priority 20: never a victim for priority 10
    ("placed", 2, 2),   # exactly its quorum bound: evicting one would break it
    ("spare", 1, 1),    # one member beyond the quorum: that one may go
])
def test_preemption_never_breaks_a_placed_group(victim_group, min_member, victims_left):
    prio = {"higher": (0, 20), "placed": (0, 0), "spare": (0, 0)}[victim_group]
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), pod_group("v", min_member),
            running("v-0", "n1", "2", prio[0], labels={"scheduling.x-k8s.io/pod-group": "v"}),
            running("v-1", "n2", "2", prio[1], labels={"scheduling.x-k8s.io/pod-group": "v"}),
            pod("preemptor", "2", priority=10)]
    store, loop, clock, committer = start(objs)
    settle(loop)
    left = {p["metadata"]["name"] for p in store.list("Pod")[0]} & {"v-0", "v-1"}
    assert len(left) == victims_left
    assert ("preemptor" in bound(store)) == (victims_left == 1)


def test_a_pod_group_without_coscheduling_is_just_pods():
    cfg = make_config(disabled=["Coscheduling"])
    store, loop, clock, committer = start([node("n1", cpu="2"), pod_group("g", 3), *members("g", 3),
                                           priority_class("unused", 1)], cfg)
    settle(loop)
    assert len(bound(store)) == 2 and not committer.units


def test_queue_sort_orders_pods_of_a_missing_group_by_arrival_among_pods_in_none():
    """A pod naming a PodGroup that does not exist is in no group the queue knows: it keeps
    its arrival order among pods in no group, and an existing group's members still keep
    together by the group's time."""
    store, loop, clock, committer = start([pod_group("a", 2)], make_config())
    plugin = next(p for p in loop.scheduler.profiles["shardsched"].plugins if p.name == "Coscheduling")

    def entry(d, t):
        return QueuedPod(parse_pod(d), t, plugin.less)

    queued = [entry(group_pod("m-0", "missing", "1"), 3.0), entry(pod("x", "1"), 2.0),
              entry(group_pod("a-0", "a", "1"), 1.0), entry(pod("y", "1"), 4.0),
              entry(group_pod("a-1", "a", "1"), 5.0), entry(pod("z", "1"), 0.5)]
    assert [e.pod.name for e in sorted(queued)] == ["z", "a-0", "a-1", "x", "m-0", "y"]
    assert not plugin.less(queued[1], queued[1])  # a pod is not before itself
