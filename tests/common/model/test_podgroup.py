"""PodGroups (common/model/podgroup.py): parsing with errors that name the field, the index of
groups and members every role keeps, the status the dispatcher writes, the preemption rule
that keeps placed groups whole, and the binding intent's encoding."""
from __future__ import annotations

import pytest

from common.errors import ObjectError
from common.model.objects import parse_object, parse_pod
from common.model.podgroup import (INTENT_ANNOTATION, Counts, GroupIndex, Intent, Member, format_resources,
                                   parse_pod_group, status_of, victims_break_group)
from common.model.resources import CPU, MEMORY
from builders import group_pod, pod, pod_group, running


def test_a_pod_group_parses_scheduler_plugins_fields():
    g = parse_object(pod_group("train", 4, ns="ml", min_resources={"cpu": "8", "memory": "1Gi"}, timeout=30,
                               created="2026-01-01T00:00:00Z"))
    assert (g.key, g.min_member, g.schedule_timeout) == ("ml/train", 4, 30)
    assert g.min_resources[CPU] == 8000 and g.min_resources[MEMORY] == 1 << 30
    assert g.wait_seconds(60) == 30 and g.creation_time > 0
    assert format_resources(g.min_resources) == "map[cpu:8 memory:1Gi]"
    bare = parse_pod_group(pod_group("x"))
    assert bare.min_member == 1 and bare.schedule_timeout is None and bare.wait_seconds(60) == 60
    assert parse_pod_group(pod_group("z", 2, timeout=0)).wait_seconds(45) == 45  # 0 = the default


@pytest.mark.parametrize("spec, field", [
    ({"minMember": 0}, "spec.minMember"),
    ({"minMember": "3"}, "spec.minMember"),
    ({"minMember": 2 ** 31}, "spec.minMember"),
    ({"minResources": {"cpu": "lots"}}, "spec.minResources.cpu"),
    ({"scheduleTimeoutSeconds": -1}, "spec.scheduleTimeoutSeconds"),
    ({"scheduleTimeoutSeconds": 1.5}, "spec.scheduleTimeoutSeconds"),
])
def test_bad_fields_are_named(spec, field):
    d = pod_group("bad")
    d["spec"] = spec
    with pytest.raises(ObjectError) as e:
        parse_object(d)
    assert e.value.obj == "PodGroup default/bad" and e.value.field == field


def test_the_index_follows_members_as_they_join_leave_and_bind():
    index = GroupIndex()
    index.apply_group("ADDED", pod_group("g", 2))
    a, b = group_pod("a", "g"), group_pod("b", "g")
    assert index.apply_pod("ADDED", "default/a", a) == "default/g"
    index.apply_pod("ADDED", "default/b", b)
    index.apply_pod("ADDED", "default/x", pod("x"))
    assert sorted(index.members["default/g"]) == ["default/a", "default/b"] and "default/x" not in index.group_of
    bound = dict(a, spec={**a["spec"], "nodeName": "n1"}, status={"phase": "Running"})
    index.apply_pod("MODIFIED", "default/a", bound)
    c = index.counts("default/g")
    assert (c.total, c.bound, c.pending, c.running) == (2, 1, 1, 1)
    moved = dict(b, metadata={**b["metadata"], "labels": {"scheduling.x-k8s.io/pod-group": "h"}})
    assert index.apply_pod("MODIFIED", "default/b", moved) == "default/h"  # relabelled: in h now
    assert list(index.members["default/g"]) == ["default/a"]
    index.apply_pod("DELETED", "default/a", bound)
    assert "default/g" not in index.members and index.groups["default/g"].min_member == 2
    index.apply_group("DELETED", pod_group("g", 2))
    assert "default/g" not in index.groups
    assert index.apply_group("ADDED", dict(pod_group("bad"), spec={"minMember": -1})) is None
    assert "default/bad" in index.errors


def member(phase="Pending", node=None, deleting=False, gated=False):
    d = group_pod("m", "g", node_name=node, phase=phase)
    if deleting:
        d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if gated:
        d["spec"]["schedulingGates"] = [{"name": "wait"}]
    return Member("default/m", "default/g", d)


@pytest.mark.parametrize("members, phase, scheduled, running", [
    ([member()], "Pending", 0, 0),
    ([member(), member(), member()], "Scheduling", 0, 0),
    ([member(node="n", phase="Pending")] * 2 + [member()], "Scheduling", 2, 0),
    ([member(node="n", phase="Pending")] * 3, "Scheduled", 3, 0),
    ([member(node="n", phase="Running")] * 3, "Running", 3, 3),
    ([member(node="n", phase="Running")] * 2 + [member(node="n", phase="Succeeded")], "Running", 3, 2),
    ([member(node="n", phase="Running")] * 2 + [member(node="n", phase="Failed")], "Failed", 3, 2),
    ([member(node="n", phase="Succeeded")] * 3, "Finished", 3, 0),
])
def test_status_follows_scheduler_plugins_phases(members, phase, scheduled, running):
    status = status_of(parse_pod_group(pod_group("g", 3)), Counts(members))
    assert (status["phase"], status["scheduled"], status["running"]) == (phase, scheduled, running)


def test_gated_and_deleting_members_are_counted_apart():
    c = Counts([member(gated=True), member(), member(deleting=True, node="n")])
    assert (c.total, c.live, c.gated, c.pending, c.bound) == (3, 2, 1, 2, 0)


def victims_index(min_member: int, bound: int, priorities=None):
    index = GroupIndex()
    index.apply_group("ADDED", pod_group("g", min_member))
    pods = {}
    for i in range(bound):
        d = running(f"m{i}", "n1", "1", (priorities or {}).get(i, 0), labels={"scheduling.x-k8s.io/pod-group": "g"})
        index.apply_pod("ADDED", f"default/m{i}", d)
        pods[f"default/m{i}"] = parse_pod(d)
    return index, pods


@pytest.mark.parametrize("min_member, bound, evict, priorities, why", [
    (2, 3, 1, {}, None),
    (2, 3, 2, {}, "would leave fewer than its minMember 2 placed"),
    (3, 3, 1, {}, "would leave fewer than its minMember 3 placed"),
    (1, 3, 1, {2: 10}, "whose priority 10 is not below the preemptor's"),
])
def test_victims_never_break_a_placed_group(min_member, bound, evict, priorities, why):
    index, pods = victims_index(min_member, bound, priorities)
    victims = [pods[f"default/m{i}"] for i in range(evict)]
    got = victims_break_group(victims, index, 10, lambda k: pods[k].priority if k in pods else None)
    assert (got is None) if why is None else (why in got)
    assert victims_break_group([parse_pod(running("solo", "n1", "1", 0))], index, 10, lambda k: None) is None


def test_victims_claimed_by_other_decisions_count_against_the_spare():
    index, pods = victims_index(2, 4)
    one = [pods["default/m0"]]
    priority = lambda k: pods[k].priority  # noqa: E731
    assert victims_break_group(one, index, 10, priority, already={"default/g": 1}) is None
    assert victims_break_group(one, index, 10, priority, already={"default/g": 2}) is not None


def test_the_intent_round_trips_and_a_bad_one_is_named():
    intent = Intent([("ns/a", "u1", "n1"), ("ns/b", "u2", "n2")], 3, "10.0.0.1:7300")
    back = Intent.parse(intent.encode())
    assert (back.members, back.partition, back.holder) == (intent.members, 3, "10.0.0.1:7300")
    d = pod_group("g", 2)
    d["metadata"]["annotations"] = {INTENT_ANNOTATION: intent.encode()}
    assert Intent.decode(parse_pod_group(d)).members == intent.members
    assert Intent.decode(parse_pod_group(pod_group("g", 2))) is None
    d["metadata"]["annotations"] = {INTENT_ANNOTATION: "{not json"}
    with pytest.raises(ObjectError) as e:
        Intent.decode(parse_pod_group(d))
    assert e.value.field == f"metadata.annotations[{INTENT_ANNOTATION}]"
