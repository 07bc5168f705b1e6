"""GangScheduling: kube v1.37's PodGroup (scheduling.k8s.io/v1beta1) placed all or nothing,
with kube's rules and messages, driven through one shard loop on the memory store (as
tests/plugins/test_coscheduling.py drives Coscheduling); scheduler-plugins' PodGroup of the
same name stays its own group."""
from __future__ import annotations

import pytest

from common.errors import ObjectError
from common.model.objects import parse_object
from common.model.podgroup import INTENT_ANNOTATION, NATIVE_KIND
from builders import Clock, group_pod, make_config, native_group_pod, native_pod_group, node, pod, pod_group
from plugins.test_coscheduling import bound, settle, start


def gang(name, n, cpu="1", **kw):
    return [native_group_pod(f"{name}-{i}", name, cpu, **kw) for i in range(n)]


def test_a_gang_that_fits_is_bound_whole_as_one_unit():
    store, loop, _, committer = start([node("n1", cpu="4"), native_pod_group("g", 3), *gang("g", 3)])
    settle(loop)
    assert sorted(bound(store)) == ["g-0", "g-1", "g-2"]
    assert committer.units == [["default/g-0", "default/g-1", "default/g-2"]]
    # the intent was written on kube's PodGroup, and removed
    g = store.get(NATIVE_KIND, "default/g")
    assert not (g["metadata"].get("annotations") or {}).get(INTENT_ANNOTATION)


@pytest.mark.parametrize("objs,message", [
    ([*gang("g", 2)], 'waiting for pods\'s pod group "g" to appear in scheduling queue'),
    ([native_pod_group("g", 3), *gang("g", 2)], "waiting for minCount pods from a gang to appear in scheduling queue"),
])
def test_pre_enqueue_holds_members_out_of_the_queue_with_kubes_message(objs, message):
    store, loop, _, _ = start([node("n1", cpu="8"), *objs])
    settle(loop)
    assert bound(store) == {}
    assert loop.gated == {"default/g-0": message, "default/g-1": message}


def test_the_member_or_group_that_completes_the_quorum_lets_them_in():
    store, loop, _, _ = start([node("n1", cpu="8"), *gang("g", 2)])
    settle(loop)
    store.create(native_pod_group("g", 3))
    loop.sync()
    settle(loop)
    assert bound(store) == {}  # the group exists now, but has 2 of 3 pods
    store.create(native_group_pod("g-2", "g"))
    loop.sync()
    settle(loop)
    assert sorted(bound(store)) == ["g-0", "g-1", "g-2"]
    assert loop.gated == {}


def test_a_basic_group_schedules_its_pods_one_by_one():
    store, loop, _, committer = start([node("n1", cpu="2"), native_pod_group("b", basic=True), *gang("b", 3)])
    settle(loop)
    assert len(bound(store)) == 2
    assert committer.units == []
    assert "0/1 nodes are available" in loop.messages["default/b-2"]


def test_a_gang_that_cannot_make_its_quorum_gives_up_with_kubes_messages():
    # 2 cpu for 3 one-cpu members: two are placed and wait, the third fits nowhere
    store, loop, _, _ = start([node("n1", cpu="2"), native_pod_group("g", 3), *gang("g", 3)])
    settle(loop, passes=1)
    assert bound(store) == {}
    msgs = {k: loop.messages.get(k, "") for k in ("default/g-0", "default/g-1", "default/g-2")}
    # kube v1.37's pod-group cycle (schedule_one_podgroup.go): the member that failed has its
    # filters' words alone (no per-pod PostFilter runs in a pod-group cycle); the placed ones
    # the group's status: its error, GangScheduling's verdict and the group's PostFilter
    failed = [k for k, m in msgs.items() if m == "0/1 nodes are available: 1 Insufficient cpu."]
    assert len(failed) == 1, msgs
    for k, m in msgs.items():
        if k not in failed:
            assert m == ("pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
                         "pod group preemption: No preemption victims found for incoming preemptor")
    assert loop.waiting.pods == {} and not any(loop.cache.is_assumed(k) for k in msgs)


def test_a_first_member_that_fails_gives_up_on_the_members_not_tried_yet():
    # each member needs 3 cpu; the node has 2: the first one tried fails, and the two left
    # cannot make up minCount 3 with it
    store, loop, _, _ = start([node("n1", cpu="2"), native_pod_group("g", 3), *gang("g", 3, cpu="3")])
    assert loop.schedule_next() is not None
    msgs = sorted(loop.messages.values())
    # the members never tried: the group's status as it was before its PostFilter ran
    assert msgs == ["0/1 nodes are available: 1 Insufficient cpu."] + \
        ["pod group is unschedulable, minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"] * 2
    assert loop.schedule_next() is None  # the others back off with it


def test_members_wait_at_permit_at_most_kubes_five_minutes():
    clock = Clock(1000.0)
    store, loop, _, _ = start([node("n1", cpu="1"), native_pod_group("g", 2), *gang("g", 2)], clock=clock)
    loop.schedule_next()
    assert list(loop.waiting.pods) == ["default/g-0"]
    clock.now += 299
    loop.release_waiting()
    assert "default/g-0" in loop.waiting.pods
    clock.now += 2
    loop.release_waiting()
    # kube v1.37's framework (waiting_pods_map.go): the wait as Go's time.Duration prints it
    assert loop.messages["default/g-0"] == "rejected due to timeout after waiting 5m0s at plugin GangScheduling"


def test_two_kinds_of_one_name_are_two_groups():
    """scheduler-plugins' PodGroup default/g (minMember 2, 2 pods) and kube's default/g (minCount
    3, 2 pods): the first is placed, the second waits for its third pod."""
    objs = [node("n1", cpu="8"), pod_group("g", 2), group_pod("x-0", "g"), group_pod("x-1", "g"),
            native_pod_group("g", 3), *gang("g", 2)]
    store, loop, _, committer = start(objs)
    settle(loop)
    assert sorted(bound(store)) == ["x-0", "x-1"]
    assert committer.units == [["default/x-0", "default/x-1"]]
    assert set(loop.gated) == {"default/g-0", "default/g-1"}
    assert store.get("PodGroup", "default/g")["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert store.get(NATIVE_KIND, "default/g")["apiVersion"] == "scheduling.k8s.io/v1beta1"


def test_a_profile_without_gang_scheduling_schedules_members_one_by_one():
    cfg = make_config(disabled=["GangScheduling"])
    store, loop, _, committer = start([node("n1", cpu="2"), native_pod_group("g", 3), *gang("g", 3)], cfg=cfg)
    settle(loop)
    assert len(bound(store)) == 2 and committer.units == []


@pytest.mark.parametrize("policy,field,message", [
    ({}, "spec.schedulingPolicy", "must specify one of: `basic`, `gang`"),
    ({"basic": {}, "gang": {"minCount": 2}}, "spec.schedulingPolicy", "must specify exactly one of: `basic`, `gang`"),
    ({"gang": {}}, "spec.schedulingPolicy.gang.minCount", "is required"),
    ({"gang": {"minCount": 0}}, "spec.schedulingPolicy.gang.minCount", "must be >= 1, got 0"),
])
def test_a_bad_policy_is_refused_naming_the_object_and_field(policy, field, message):
    d = native_pod_group("g", 1)
    d["spec"]["schedulingPolicy"] = policy
    with pytest.raises(ObjectError) as e:
        parse_object(d)
    assert (e.value.obj, e.value.field, e.value.message) == ("PodGroup.scheduling.k8s.io default/g", field, message)


def test_a_pod_naming_no_group_in_its_scheduling_group_is_refused():
    d = pod("p", "1")
    d["spec"]["schedulingGroup"] = {}
    with pytest.raises(ObjectError) as e:
        parse_object(d)
    assert e.value.field == "spec.schedulingGroup.podGroupName"
