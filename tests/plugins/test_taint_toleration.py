"""TaintToleration: the filter (untolerated NoSchedule/NoExecute taints, the first one in the
node's order reported) and the score (untolerated PreferNoSchedule taints); after
kube-scheduler's own plugin tests.

Every filter case runs through `Cluster.filter`, which also checks that the vectorised and
per-node forms of the plugin agree on every node (and on the reasons they give).
"""
from __future__ import annotations

import pytest

from builders import UNRESOLVABLE, Cluster, make_config, node, pod, toleration


# --- TaintToleration filter -----------------------------------------------------------------

@pytest.mark.parametrize("taints, tolerations, expected", [
    # untolerated NoSchedule taint: unresolvable, rendered {key: value}
    (["dedicated=user1:NoSchedule"], [], "node(s) had untolerated taint(s)"),
    (["dedicated=user1:NoSchedule"], [toleration("dedicated", "user1", "NoSchedule")], None),
    # value must match for operator Equal
    (["dedicated=user1:NoSchedule"], [toleration("dedicated", "user2", "NoSchedule")],
     "node(s) had untolerated taint(s)"),
    # Exists ignores the value; an empty effect matches every effect
    (["dedicated=user1:NoSchedule"], [toleration("dedicated")], None),
    # empty key with Exists tolerates every taint
    (["a=1:NoSchedule", "b=2:NoExecute"], [toleration()], None),
    # a toleration's effect must match the taint's
    (["dedicated=user1:NoExecute"], [toleration("dedicated", "user1", "NoSchedule")],
     "node(s) had untolerated taint(s)"),
    # PreferNoSchedule taints never filter
    (["dedicated=user1:PreferNoSchedule"], [], None),
    # the first untolerated taint in the node's order is the one reported
    (["a=1:NoSchedule", "b=2:NoSchedule"], [toleration("a")], "node(s) had untolerated taint(s)"),
    (["a=1:NoSchedule", "b=2:NoSchedule"], [], "node(s) had untolerated taint(s)"),
    # a taint with no value renders with an empty value
    (["gpu:NoSchedule"], [], "node(s) had untolerated taint(s)"),
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
    assert out["n69"] == (UNRESOLVABLE, "node(s) had untolerated taint(s)")


def test_message_no_longer_names_a_taint():
    """kube-scheduler v1.37 says "node(s) had untolerated taint(s)" whatever the taint (v1.33
    named each node's first untolerated one: "5 node(s) had untolerated taint {a: 1}, 5 ...
    {b: 2}"), so nodes with other taints are counted together."""
    nodes = [node(f"n{i}", taints=["a=1:NoSchedule", "b=2:NoSchedule"][:: 1 if i % 2 else -1]) for i in range(10)]
    c = Cluster(nodes)
    out = c.filter("TaintToleration", pod("p"))  # also compares reasons_vec with the per-node reasons
    assert {o[1] for o in out.values()} == {"node(s) had untolerated taint(s)"}
    assert c.explain(pod("p")) == ("0/10 nodes are available: 10 node(s) had untolerated taint(s). "
                                   "preemption: 0/10 nodes are available: 10 Preemption is not helpful for scheduling.")


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


def test_a_profile_may_score_taints_without_filtering_on_them():
    """TaintToleration switched off at filter (kube's `filter: disabled`) still scores: a pod
    that tolerates nothing goes to the node with no PreferNoSchedule taint, NoSchedule or not."""
    nodes = [node("hard", taints=["dedicated=infra:NoSchedule"]), node("soft", taints=["dedicated=x:PreferNoSchedule"])]
    only_score = make_config(disabled=[{"name": "*", "extensionPoints": ["score"]},
                                       {"name": "TaintToleration", "extensionPoints": ["filter"]}],
                             enabled=[{"name": "TaintToleration", "weight": 1}])
    assert Cluster(nodes, cfg=only_score).schedule(pod("p")).node == "hard"
    assert Cluster(nodes).schedule(pod("p")).node == "soft"


def test_the_first_prefer_no_schedule_taint_counts_as_soon_as_it_appears():
    """Scores are all zero (then 100) without a single PreferNoSchedule taint in the cluster;
    the first node to get one scores lower from the next cycle on (the harness compares the
    vectorised and per-node forms each time)."""
    c = Cluster([node("n1"), node("n2")])
    assert c.score("TaintToleration", pod("p"), normalize=False) == {"n1": 0, "n2": 0}
    c.add_node(node("n2", taints=["a=1:PreferNoSchedule"]))
    assert c.score("TaintToleration", pod("p"), normalize=False) == {"n1": 0, "n2": 1}
    assert c.score("TaintToleration", pod("p")) == {"n1": 100, "n2": 0}
