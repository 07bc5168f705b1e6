"""The group commit (common/scheduling/group_commit.py) on the memory store: the intent written before
the first binding and removed after the last, a failed binding rolling the unit back, and
`resolve` finishing or undoing whatever a crash at each failpoint left."""
from __future__ import annotations

import pytest

from common.scheduling.group_commit import GroupCommit, env_failpoint
from common.model.podgroup import INTENT_ANNOTATION, Intent
from common.store.memory import MemoryStore
from builders import group_pod, node, pod_group

MEMBERS = [("default/g-0", "uid-default-g-0", "n1"), ("default/g-1", "uid-default-g-1", "n2"),
           ("default/g-2", "uid-default-g-2", "n1")]


class Crash(Exception):
    """What a failpoint raises here: the process 'dies' at that point."""


def store_with_group(n: int = 3) -> MemoryStore:
    store = MemoryStore()
    for name in ("n1", "n2"):
        store.create(node(name, cpu="8"))
    store.create(pod_group("g", n))
    for i in range(n):
        store.create(group_pod(f"g-{i}", "g", "1"))
    return store


def placement(store) -> dict:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in store.list("Pod")[0]}


def intent_of(store):
    return ((store.get("PodGroup", "default/g")["metadata"].get("annotations")) or {}).get(INTENT_ANNOTATION)


def test_the_intent_is_written_before_the_first_binding_and_removed_after_the_last():
    store = store_with_group()
    seen = {}

    def watch(point):
        seen[point] = (intent_of(store) is not None, sorted(k for k, v in placement(store).items() if v))

    results = GroupCommit(store, "binder-a", watch).commit("default/g", MEMBERS, partition=1)
    assert results == [None, None, None]
    assert placement(store) == {"g-0": "n1", "g-1": "n2", "g-2": "n1"}
    assert seen["group-intent-written"] == (True, [])
    assert seen["group-bound-part"] == (True, ["g-0"])  # the split the failpoint makes
    assert seen["group-bound-all"] == (True, ["g-0", "g-1", "g-2"])
    assert intent_of(store) is None


def test_a_member_that_cannot_be_bound_rolls_the_unit_back():
    store = store_with_group()
    store.delete("Pod", "default/g-1")
    results = GroupCommit(store).commit("default/g", MEMBERS)
    assert results[1] == "PodNotFound"
    assert results[0] == results[2] == "GroupAborted: default/g-1 could not be bound: PodNotFound"
    assert placement(store) == {}, "the members it bound are deleted: the group is not left partial"
    assert intent_of(store) is None


def test_a_group_with_a_commit_in_progress_or_without_its_podgroup_is_refused():
    store = store_with_group()
    group = store.get("PodGroup", "default/g")
    group["metadata"]["annotations"] = {INTENT_ANNOTATION: Intent(MEMBERS, 0, "other").encode()}
    store.update(group)
    assert GroupCommit(store).commit("default/g", MEMBERS) == \
        ["InFlight: PodGroup default/g has a group commit in progress"] * 3
    store.delete("PodGroup", "default/g")
    assert GroupCommit(store).commit("default/g", MEMBERS) == \
        ["PodGroupNotFound: PodGroup default/g does not exist"] * 3
    assert all(v is None for v in placement(store).values())


def test_a_single_member_is_just_bound():
    store = store_with_group(1)
    hits = []
    assert GroupCommit(store, failpoint=hits.append).commit("default/g", MEMBERS[:1]) == [None]
    assert placement(store) == {"g-0": "n1"} and hits == []


@pytest.mark.parametrize("point", ["group-intent-written", "group-bound-part", "group-bound-all"])
@pytest.mark.parametrize("then, outcome", [(None, "forward"), ("delete g-2", "back"),
                                           ("bind g-1 elsewhere", "back")])
def test_resolve_finishes_or_undoes_what_a_crash_left(point, then, outcome):
    """The committing binder dies at `point`; then, maybe, the world moves on (a member is
    deleted, or bound elsewhere by someone else); whoever resolves the intent binds the
    rest, or deletes what the intent bound: every member where the intent put it, or none."""
    store = store_with_group()

    def die(p):
        if p == point:
            raise Crash(p)

    with pytest.raises(Crash):
        GroupCommit(store, "binder-a", die).commit("default/g", MEMBERS)
    assert intent_of(store) is not None
    if then == "delete g-2":
        store.delete("Pod", "default/g-2")
    elif then == "bind g-1 elsewhere" and not placement(store)["g-1"]:
        store.bind("default/g-1", "n1")
    elif then == "bind g-1 elsewhere":  # it was bound already: make it a recreated pod instead
        store.delete("Pod", "default/g-1")
        store.create(group_pod("g-1", "g", "1", uid="uid-recreated"))
        store.bind("default/g-1", "n1")
    assert GroupCommit(store, "binder-b").resolve("default/g") == outcome
    placed_by_intent = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in store.list("Pod")[0]
                        if (p["metadata"]["uid"], p["spec"].get("nodeName")) in {(u, n) for _, u, n in MEMBERS}}
    assert placed_by_intent == ({"g-0": "n1", "g-1": "n2", "g-2": "n1"} if outcome == "forward" else {})
    assert intent_of(store) is None
    assert GroupCommit(store, "binder-b").resolve("default/g") == "none"  # nothing left to do


def test_resolve_rolls_back_when_the_resolver_refuses_the_rest():
    store = store_with_group()

    def die(p):
        if p == "group-bound-part":
            raise Crash(p)

    with pytest.raises(Crash):
        GroupCommit(store, failpoint=die).commit("default/g", MEMBERS)
    asked = []

    def admit(pending):
        asked.append(pending)
        return "NodeResourcesFit: Insufficient cpu"

    assert GroupCommit(store).resolve("default/g", admit) == "back"
    assert asked == [MEMBERS[1:]] and all(v is None for v in placement(store).values())


def test_a_commit_overtaken_by_the_next_holder_does_not_roll_back():
    """The binder lost its partition in the middle of its commit; the next holder resolved
    the intent and bound the rest first: the first one's "AlreadyBound" for those members
    is where its intent put them, so it counts them as bound and deletes nothing."""
    store = store_with_group()
    successor = GroupCommit(store, "binder-b")

    def overtaken(point):
        if point == "group-bound-part":
            assert successor.resolve("default/g") == "forward"

    assert GroupCommit(store, "binder-a", overtaken).commit("default/g", MEMBERS) == [None] * 3
    assert placement(store) == {"g-0": "n1", "g-1": "n2", "g-2": "n1"} and intent_of(store) is None


def test_an_unreadable_intent_is_dropped():
    store = store_with_group()
    group = store.get("PodGroup", "default/g")
    group["metadata"]["annotations"] = {INTENT_ANNOTATION: "[1, 2"}
    store.update(group)
    assert GroupCommit(store).resolve("default/g") == "none" and intent_of(store) is None


def test_failpoints_are_armed_by_the_environment(monkeypatch):
    monkeypatch.delenv("SHARDSCHED_FAILPOINTS", raising=False)
    assert env_failpoint() is None
    monkeypatch.setenv("SHARDSCHED_FAILPOINTS", "group-bound-part=kill, other=log")
    hook = env_failpoint()
    assert hook.armed == {"group-bound-part"}
    hook("group-intent-written")  # not armed: nothing happens
