"""Table tests for the node-local default plugins, after kube-scheduler's own plugin tests:
PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity and NodePorts.

Every filter case runs through `Cluster.filter`, which also checks that the vectorised and
per-node forms of the plugin agree on every node (and on the reasons they give).
"""
from __future__ import annotations

import pytest

from shard.framework import SKIP, PreFilterResult, Status
from shard.queue import QueuedPod
from builders import (
    Cluster, expr, node, node_affinity, pod, toleration,
)

UNRESOLVABLE = "UnschedulableAndUnresolvable"
UNSCHEDULABLE = "Unschedulable"


# --- PrioritySort ---------------------------------------------------------------------------

def test_priority_sort_orders_by_priority_then_arrival():
    """Higher priority first; equal priorities keep the order in which they were queued."""
    plugin = Cluster().plugin("PrioritySort")
    from common.objects import parse_pod

    def entry(name, prio, t):
        return QueuedPod(parse_pod(pod(name, priority=prio)), t, plugin.less)

    low_early, high_late, high_early = entry("a", 1, 1.0), entry("b", 10, 5.0), entry("c", 10, 2.0)
    assert plugin.less(high_late, low_early) and not plugin.less(low_early, high_late)
    assert plugin.less(high_early, high_late) and not plugin.less(high_late, high_early)
    assert sorted([low_early, high_late, high_early]) == [high_early, high_late, low_early]


# --- NodeUnschedulable ----------------------------------------------------------------------

UNSCHED_TOL = toleration("node.kubernetes.io/unschedulable", effect="NoSchedule")


@pytest.mark.parametrize("tolerations, passes", [
    ((), False),
    ((UNSCHED_TOL,), True),
    ((toleration("node.kubernetes.io/unschedulable"),), True),   # any effect
    ((toleration(),), True),                                     # tolerate everything
    ((toleration("node.kubernetes.io/unschedulable", effect="NoExecute"),), False),
    ((toleration("other", effect="NoSchedule"),), False),
])
def test_node_unschedulable(tolerations, passes):
    c = Cluster([node("cordoned", unschedulable=True), node("open")])
    out = c.filter("NodeUnschedulable", pod("p", tolerations=tolerations))
    assert out["open"] is None
    if passes:
        assert out["cordoned"] is None
    else:
        assert out["cordoned"] == (UNRESOLVABLE, "node(s) were unschedulable")


# --- NodeName -------------------------------------------------------------------------------

def test_node_name_fits_only_the_named_node_and_narrows_prefilter():
    c = Cluster([node("n1"), node("n2"), node("n3")])
    p = pod("p", node_name="n2")
    out = c.filter("NodeName", p)
    assert out == {"n1": (UNRESOLVABLE, "node(s) didn't match the requested node name"),
                   "n2": None,
                   "n3": (UNRESOLVABLE, "node(s) didn't match the requested node name")}
    narrowed = c.pre_filter("NodeName", p)
    assert isinstance(narrowed, PreFilterResult) and narrowed.node_names == {"n2"}


def test_node_name_absent_skips():
    c = Cluster([node("n1")])
    st = c.pre_filter("NodeName", pod("p"))
    assert isinstance(st, Status) and st.code == SKIP
    assert c.filter("NodeName", pod("p")) == {"n1": None}


# --- TaintToleration filter -----------------------------------------------------------------

@pytest.mark.parametrize("taints, tolerations, expected", [
    # untolerated NoSchedule taint: unresolvable, rendered {key: value}
    (["dedicated=user1:NoSchedule"], [], "node(s) had untolerated taint {dedicated: user1}"),
    (["dedicated=user1:NoSchedule"], [toleration("dedicated", "user1", "NoSchedule")], None),
    # value must match for operator Equal
    (["dedicated=user1:NoSchedule"], [toleration("dedicated", "user2", "NoSchedule")],
     "node(s) had untolerated taint {dedicated: user1}"),
    # Exists ignores the value; an empty effect matches every effect
    (["dedicated=user1:NoSchedule"], [toleration("dedicated")], None),
    # empty key with Exists tolerates every taint
    (["a=1:NoSchedule", "b=2:NoExecute"], [toleration()], None),
    # a toleration's effect must match the taint's
    (["dedicated=user1:NoExecute"], [toleration("dedicated", "user1", "NoSchedule")],
     "node(s) had untolerated taint {dedicated: user1}"),
    # PreferNoSchedule taints never filter
    (["dedicated=user1:PreferNoSchedule"], [], None),
    # the first untolerated taint in the node's order is the one reported
    (["a=1:NoSchedule", "b=2:NoSchedule"], [toleration("a")], "node(s) had untolerated taint {b: 2}"),
    (["a=1:NoSchedule", "b=2:NoSchedule"], [], "node(s) had untolerated taint {a: 1}"),
    # a taint with no value renders with an empty value
    (["gpu:NoSchedule"], [], "node(s) had untolerated taint {gpu: }"),
])
def test_taint_toleration_filter(taints, tolerations, expected):
    c = Cluster([node("tainted", taints=taints), node("clean")])
    out = c.filter("TaintToleration", pod("p", tolerations=tolerations))
    assert out["clean"] is None
    assert out["tainted"] == (None if expected is None else (UNRESOLVABLE, expected))


def test_taint_toleration_filter_beyond_63_distinct_taints():
    """Taints past the bitmask's 63 bits are decided node by node (overflow bit): the
    vectorised and per-node forms must still agree, and the toleration still counts."""
    nodes = [node(f"n{i}", taints=[f"k{i}=v:NoSchedule"]) for i in range(70)] + [node("clean")]
    c = Cluster(nodes)
    out = c.filter("TaintToleration", pod("p", tolerations=[toleration("k68")]))
    assert {nm for nm, o in out.items() if o is None} == {"clean", "n68"}
    assert out["n69"] == (UNRESOLVABLE, "node(s) had untolerated taint {k69: v}")


# --- TaintToleration score ------------------------------------------------------------------

def test_taint_toleration_score_counts_untolerated_prefer_no_schedule():
    """Fewer intolerable PreferNoSchedule taints score higher (reverse normalised to 0..100);
    NoSchedule taints and tolerations with effect NoSchedule play no part in the score."""
    c = Cluster([
        node("none"),
        node("one", taints=["a=1:PreferNoSchedule", "x=1:NoSchedule"]),
        node("two", taints=["a=1:PreferNoSchedule", "b=2:PreferNoSchedule"]),
        node("tolerated", taints=["c=3:PreferNoSchedule"]),
    ])
    p = pod("p", tolerations=[toleration("c", "3", "PreferNoSchedule"),
                              toleration("a", "1", "NoSchedule"),  # wrong effect: ignored
                              toleration("x")])
    assert c.score("TaintToleration", p) == {"none": 100, "one": 50, "two": 0, "tolerated": 100}


def test_taint_toleration_score_all_equal_when_no_prefer_taints():
    c = Cluster([node("n1"), node("n2", taints=["x=1:NoSchedule"])])
    assert c.score("TaintToleration", pod("p", tolerations=[toleration("x")])) == {"n1": 100, "n2": 100}


def test_taint_toleration_score_empty_effect_toleration_counts():
    """A toleration without an effect tolerates PreferNoSchedule taints for scoring."""
    c = Cluster([node("n1", taints=["a=1:PreferNoSchedule"]), node("n2", taints=["b=1:PreferNoSchedule"])])
    assert c.score("TaintToleration", pod("p", tolerations=[toleration("a", "1")])) == {"n1": 100, "n2": 0}


# --- NodeAffinity filter --------------------------------------------------------------------

AFF = "node(s) didn't match Pod's node affinity/selector"
LABELED = [
    node("a", labels={"zone": "z1", "disk": "ssd", "gen": "5"}),
    node("b", labels={"zone": "z2", "disk": "hdd", "gen": "3"}),
    node("c", labels={"zone": "z3", "gen": "x"}),
    node("d", labels={}),
]


@pytest.mark.parametrize("selector, affinity, fits", [
    ({"zone": "z1"}, None, {"a"}),
    ({"zone": "z1", "disk": "hdd"}, None, set()),
    ({"missing": "x"}, None, set()),
    (None, node_affinity([expr("zone", "In", "z1", "z2")]), {"a", "b"}),
    (None, node_affinity([expr("zone", "NotIn", "z1", "z2")]), {"c", "d"}),   # absent label: NotIn holds
    (None, node_affinity([expr("disk", "Exists")]), {"a", "b"}),
    (None, node_affinity([expr("disk", "DoesNotExist")]), {"c", "d"}),
    (None, node_affinity([expr("gen", "Gt", 4)]), {"a"}),                    # "x" is not an integer
    (None, node_affinity([expr("gen", "Lt", 4)]), {"b"}),
    (None, node_affinity([expr("gen", "Gt", 5)]), set()),                    # strictly greater
    # expressions in one term are ANDed
    (None, node_affinity([expr("zone", "In", "z1", "z2"), expr("disk", "In", "hdd")]), {"b"}),
    # terms are ORed
    (None, node_affinity([expr("zone", "In", "z3")], [expr("disk", "In", "ssd")]), {"a", "c"}),
    # an empty term matches no node
    (None, node_affinity({"matchExpressions": []}), set()),
    (None, node_affinity({"matchExpressions": []}, [expr("zone", "In", "z2")]), {"b"}),
    # nodeSelector and required affinity must both hold
    ({"disk": "ssd"}, node_affinity([expr("zone", "In", "z2")]), set()),
    ({"disk": "hdd"}, node_affinity([expr("zone", "In", "z2")]), {"b"}),
    # matchFields on metadata.name
    (None, node_affinity({"matchFields": [expr("metadata.name", "In", "c")]}), {"c"}),
    (None, node_affinity({"matchFields": [expr("metadata.name", "NotIn", "a", "b")]}), {"c", "d"}),
    # matchFields and matchExpressions of one term are ANDed
    (None, node_affinity({"matchFields": [expr("metadata.name", "In", "a")],
                          "matchExpressions": [expr("zone", "In", "z2")]}), set()),
])
def test_node_affinity_filter(selector, affinity, fits):
    c = Cluster(LABELED)
    out = c.filter("NodeAffinity", pod("p", node_selector=selector, affinity=affinity))
    assert {nm for nm, o in out.items() if o is None} == fits
    for nm, o in out.items():
        if nm not in fits:
            assert o == (UNRESOLVABLE, AFF)


def test_node_affinity_prefilter():
    """No selector and no required terms: Skip. Every term pinning metadata.name: only those
    nodes are candidates (unit locating). A term without a pin: no narrowing."""
    c = Cluster(LABELED)
    st = c.pre_filter("NodeAffinity", pod("p", affinity=node_affinity(preferred=[(1, [expr("zone", "Exists")])])))
    assert isinstance(st, Status) and st.code == SKIP
    pinned = node_affinity({"matchFields": [expr("metadata.name", "In", "a")]},
                           {"matchFields": [expr("metadata.name", "In", "c")]})
    out = c.pre_filter("NodeAffinity", pod("p", affinity=pinned))
    assert isinstance(out, PreFilterResult) and out.node_names == {"a", "c"}
    mixed = node_affinity({"matchFields": [expr("metadata.name", "In", "a")]}, [expr("zone", "In", "z2")])
    assert c.pre_filter("NodeAffinity", pod("p", affinity=mixed)) is None


def test_node_affinity_preferred_score():
    """Sum of the weights of matching preferred terms, normalised so the best node gets 100."""
    c = Cluster(LABELED)
    aff = node_affinity(preferred=[(2, [expr("zone", "In", "z1", "z2")]),
                                   (6, [expr("disk", "In", "ssd")]),
                                   (3, [expr("gen", "Gt", 2)])])
    # raw: a = 2+6+3 = 11, b = 2+3 = 5, c = 0 ("x"), d = 0
    assert c.score("NodeAffinity", pod("p", affinity=aff), normalize=False) == {"a": 11, "b": 5, "c": 0, "d": 0}
    assert c.score("NodeAffinity", pod("p", affinity=aff)) == {"a": 100, "b": 45, "c": 0, "d": 0}


def test_node_affinity_without_preferred_terms_skips_score():
    c = Cluster(LABELED)
    assert c.score("NodeAffinity", pod("p", node_selector={"zone": "z1"})) == dict.fromkeys("abcd", 0)


# --- NodePorts ------------------------------------------------------------------------------

PORTS = "node(s) didn't have free ports for the requested pod ports"


@pytest.mark.parametrize("existing, wanted, fits", [
    ((), [(8080, "TCP")], True),
    ([(8080, "UDP", "127.0.0.1")], [(8080, "UDP", "127.0.0.2")], True),     # other address
    ([(8080, "UDP", "127.0.0.1")], [(8080, "UDP", "127.0.0.1")], False),    # same address
    ([(8080, "UDP", "127.0.0.1")], [(8080, "TCP", "127.0.0.1")], True),     # other protocol
    ([(8080, "TCP", "127.0.0.1")], [(8081, "TCP", "127.0.0.1")], True),     # other port
    ([(8001, "TCP", "0.0.0.0")], [(8001, "TCP", "127.0.0.1")], False),      # wildcard in use
    ([(8001, "TCP", "127.0.0.1")], [(8001, "TCP", "0.0.0.0")], False),      # wildcard wanted
    ([(8001, "TCP")], [(8001, "")], False),                                 # defaults: TCP, 0.0.0.0
    ([(8001, "UDP")], [(8001, "TCP"), (9000, "UDP")], True),
    ([(8001, "UDP")], [(9000, "UDP"), (8001, "UDP", "10.0.0.1")], False),  # any one conflict
])
def test_node_ports(existing, wanted, fits):
    running = [pod("old", node_name="n1", ports=existing)] if existing else []
    c = Cluster([node("n1"), node("n2")], running)
    out = c.filter("NodePorts", pod("p", ports=wanted))
    assert out["n2"] is None
    assert out["n1"] == (None if fits else (UNSCHEDULABLE, PORTS))


def test_node_ports_freed_when_pod_leaves():
    c = Cluster([node("n1")], [pod("old", node_name="n1", ports=[8080])])
    assert c.filter("NodePorts", pod("p", ports=[8080]))["n1"] is not None
    c.cache.remove_pod("default/old")
    c.sched.refresh()
    assert c.filter("NodePorts", pod("p", ports=[8080]))["n1"] is None


def test_node_ports_prefilter_skips_pods_without_host_ports():
    c = Cluster([node("n1")])
    st = c.pre_filter("NodePorts", pod("p"))
    assert isinstance(st, Status) and st.code == SKIP


def test_taint_toleration_score_beyond_63_distinct_prefer_taints():
    """PreferNoSchedule taints past the bitmask's 63 bits share the overflow bit: nodes with
    two of them still count two (the harness also checks vectorised == per-node), and
    tolerated ones do not count. 80 distinct taints: whatever the row order, some overflow."""
    nodes = [node(f"n{i}", taints=[f"a{i}=v:PreferNoSchedule", f"b{i}=v:PreferNoSchedule"]) for i in range(40)]
    c = Cluster(nodes + [node("clean")])
    raw = c.score("TaintToleration", pod("p"), normalize=False)
    assert raw == {**{f"n{i}": 2 for i in range(40)}, "clean": 0}
    tolerant = pod("p", tolerations=[toleration(f"a{i}") for i in range(40)] + [toleration("b7")])
    raw = c.score("TaintToleration", tolerant, normalize=False)
    assert raw == {**{f"n{i}": 1 for i in range(40)}, "n7": 0, "clean": 0}
