"""The binder's conflict checks: each reason a decision can be refused, and reservations."""
from __future__ import annotations

from common.objects import parse_pod as parsed
from common.partition import binder_for
from builders import binder_view as view_with
from builders import ns_pod as pod
from builders import small_node as node


def test_a_fitting_decision_passes_and_is_counted_at_once():
    v = view_with(node(cpu="1"), pod("a"), pod("b"))
    assert v.check(parsed(pod("a")), "n1", []) is None
    v.reserve(parsed(pod("a")), "n1", [])
    assert v.check(parsed(pod("b", cpu="600m")), "n1", []).startswith("Insufficient cpu")


def test_refusals():
    v = view_with(node(), node("cordoned", unschedulable=True), pod("bound", "n1", port=80),
                  pod("p"), pod("q", port=80))
    assert v.check(parsed(pod("p")), "gone", []).startswith("NodeNotFound")
    assert v.check(parsed(pod("p")), "cordoned", []).startswith("NodeUnschedulable")
    assert v.check(parsed(pod("bound", "n1")), "n1", []).startswith("AlreadyBound")
    assert v.check(parsed(pod("p", uid="other")), "n1", []).startswith("UIDMismatch")
    assert v.check(parsed(pod("q", port=80)), "n1", []).startswith("HostPortConflict")
    assert v.check(parsed(pod("p", cpu="3")), "n1", []).startswith("Insufficient cpu")
    assert v.check(parsed(pod("p")), "n1", [("ns/nobody", "")]).startswith("VictimGone")


def test_pod_count_is_a_resource():
    v = view_with(node(pods="1"), pod("a", "n1"), pod("b"))
    assert v.check(parsed(pod("b")), "n1", []).startswith("Insufficient pods")


def test_victims_free_room_and_cannot_be_claimed_twice():
    v = view_with(node(cpu="1"), pod("low", "n1", cpu="800m", port=80), pod("hi"), pod("hi2"))
    victims = [("ns/low", "uid-low")]
    assert v.check(parsed(pod("hi", cpu="900m", port=80)), "n1", []) is not None
    assert v.check(parsed(pod("hi", cpu="900m", port=80)), "n1", victims) is None
    v.reserve(parsed(pod("hi", cpu="900m", port=80)), "n1", victims)
    assert v.check(parsed(pod("hi2", cpu="100m")), "n1", victims).startswith("VictimClaimed")
    v.release("ns/hi", victims, bound=True)
    assert "ns/low" not in v.cache.nodes["n1"].pods and "ns/hi" in v.cache.nodes["n1"].pods


def test_a_refused_commit_is_forgotten():
    v = view_with(node(cpu="1"), pod("a"))
    v.reserve(parsed(pod("a", cpu="1")), "n1", [])
    v.release("ns/a", [], bound=False)
    assert v.check(parsed(pod("a", cpu="1")), "n1", []) is None


def test_nodes_of_another_partition_are_refused():
    names = [f"node-{i}" for i in range(20)]
    v = view_with(*(node(n) for n in names), pod("p"), index=0, binders=2)
    mine = [n for n in names if binder_for(n, 2) == 0]
    theirs = [n for n in names if binder_for(n, 2) == 1]
    assert mine and theirs
    assert v.check(parsed(pod("p")), mine[0], []) is None
    assert v.check(parsed(pod("p")), theirs[0], []).startswith("WrongBinder")


def test_the_watch_confirms_a_binding_without_parsing_again():
    v = view_with(node(), pod("a"))
    a = parsed(pod("a"))
    v.reserve(a, "n1", [])
    bound = pod("a", "n1")
    v.apply("MODIFIED", "Pod", bound)
    stored = v.cache.nodes["n1"].pods["ns/a"]
    assert stored.node_name == "n1" and stored.raw is bound and stored.requests == a.requests
    assert not v.cache.is_assumed("ns/a")
