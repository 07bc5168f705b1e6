"""NodeAffinity: nodeSelector and required node affinity (filter), unit locating by
metadata.name (PreFilter) and preferred terms (score); after kube-scheduler's own plugin tests.

Every filter case runs through `Cluster.filter`, which also checks that the vectorised and
per-node forms of the plugin agree on every node (and on the reasons they give).
"""
from __future__ import annotations

import pytest

from shard.framework import SKIP, PreFilterResult, Status
from builders import UNRESOLVABLE, Cluster, expr, node, node_affinity, pod

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


# kube-scheduler v1.37, nodeaffinity/node_affinity_test.go TestNodeAffinity (its PreFilter cases)
@pytest.mark.parametrize("terms, want", [
    # "Pod with matchFields using In operator that matches the existing node"
    ([{"matchFields": [expr("metadata.name", "In", "a")]}], {"a"}),
    # "Pod with one term: matchFields does not match, but matchExpressions matches"
    ([{"matchFields": [expr("metadata.name", "In", "b")], "matchExpressions": [expr("zone", "In", "z1")]}], {"b"}),
    # "Pod with two terms: matchFields does not match, but matchExpressions matches": no narrowing
    ([{"matchFields": [expr("metadata.name", "In", "b")]}, {"matchExpressions": [expr("zone", "In", "z1")]}], None),
    # "Pod with two terms of node.Name affinity"
    ([{"matchFields": [expr("metadata.name", "In", "a")]}, {"matchFields": [expr("metadata.name", "In", "b")]}],
     {"a", "b"}),
    # requirements of one term intersect: a term naming several nodes narrows to all of them
    ([{"matchFields": [expr("metadata.name", "In", "a", "b", "c"), expr("metadata.name", "In", "b", "c")]}],
     {"b", "c"}),
    # "Pod with two conflicting mach field requirements"
    ([{"matchFields": [expr("metadata.name", "In", "a"), expr("metadata.name", "In", "b")]}],
     (UNRESOLVABLE, "pod affinity terms conflict")),
])
def test_node_affinity_prefilter_as_kube(terms, want):
    out = Cluster(LABELED).pre_filter("NodeAffinity", pod("p", affinity=node_affinity(*terms)))
    if want is None:
        assert out is None
    elif isinstance(want, set):
        assert isinstance(out, PreFilterResult) and out.node_names == want and not out.hint
    else:
        assert isinstance(out, Status) and (out.code, out.message()) == want


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


@pytest.mark.parametrize("value", ["1_0", " 5", "٣", "5.0"])
def test_gt_reads_only_plain_decimal_label_values(value):
    """Python's int() takes '1_0', ' 5' and Arabic-Indic digits; Kubernetes does not."""
    c = Cluster([node("n1", labels={"gen": value}), node("n2", labels={"gen": "10"})])
    result = c.schedule(pod("p", affinity=node_affinity([expr("gen", "Gt", 3)])))
    assert result.node == "n2"
    assert c.filter("NodeAffinity", pod("p", affinity=node_affinity([expr("gen", "Gt", 3)])))["n1"] is not None
