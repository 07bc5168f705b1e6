"""PodTopologySpread: hard constraints filter by skew, soft ones score, system defaults for
controller-owned pods; after kube-scheduler's podtopologyspread filtering/scoring tests.

Topology used throughout: zone z1 = {a, b}, zone z2 = {x, y}; `pods(...)` places pods with
label app=web (the selector of every constraint below) on the named nodes.
"""
from __future__ import annotations

import pytest

from builders import HOST, ZONE, Cluster, controller, make_config, node, pod, service, spread, toleration

WEB = {"app": "web"}
#: the ReplicaSet of the pods with owner="ReplicaSet/web-1"
RS = [controller("ReplicaSet", "web-1", WEB)]
SKEW = "node(s) didn't match pod topology spread constraints"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"


def zones(extra=()):
    return [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}),
            node("x", labels={ZONE: "z2"}), node("y", labels={ZONE: "z2"}), *extra]


def pods(*nodes, labels=WEB, ns="default", **kw):
    return [pod(f"e{i}-{n}", labels=labels, node_name=n, ns=ns, **kw) for i, n in enumerate(nodes)]


def web(*constraints, labels=WEB, **kw):
    return pod("new", labels=labels, spread=constraints, **kw)


# --- filter ---------------------------------------------------------------------------------

@pytest.mark.parametrize("existing, constraint, labels, fits", [
    # no pods yet: every node is at skew 1
    ((), spread(1, ZONE, WEB), WEB, {"a", "b", "x", "y"}),
    # z1 has 2, z2 has 1: placing in z1 makes 3 - 1 = 2 > 1
    (("a", "b", "x"), spread(1, ZONE, WEB), WEB, {"x", "y"}),
    # maxSkew 2 allows it
    (("a", "b", "x"), spread(2, ZONE, WEB), WEB, {"a", "b", "x", "y"}),
    # the incoming pod does not match the selector itself: it adds nothing to the skew
    (("a", "b", "x"), spread(1, ZONE, WEB), {"app": "other"}, {"a", "b", "x", "y"}),
    # per node: a has 1, the others 0
    (("a",), spread(1, HOST, WEB), WEB, {"b", "x", "y"}),
    (("a", "a", "b"), spread(1, HOST, WEB), WEB, {"x", "y"}),
])
def test_spread_filter_skew(existing, constraint, labels, fits):
    c = Cluster(zones(), pods(*existing))
    out = c.filter("PodTopologySpread", web(constraint, labels=labels))
    assert {n for n, o in out.items() if o is None} == fits
    for n, o in out.items():
        if n not in fits:
            assert o == ("Unschedulable", SKEW)


def test_spread_filter_node_without_topology_label_is_unresolvable():
    c = Cluster(zones([node("bare")]), pods("a"))
    out = c.filter("PodTopologySpread", web(spread(1, ZONE, WEB)))
    assert out["bare"] == ("UnschedulableAndUnresolvable", MISSING)
    assert out["x"] is None


def test_spread_filter_counts_only_same_namespace_live_matching_pods():
    existing = (pods("a", "a", ns="other")                    # another namespace
                + pods("b", labels={"app": "db"})             # not selected
                + [dict(pod("gone", labels=WEB, node_name="b"),
                        metadata={"name": "gone", "namespace": "default", "labels": WEB,
                                  "deletionTimestamp": "2026-01-01T00:00:00Z"})])  # terminating
    c = Cluster(zones(), existing)
    assert c.passing("PodTopologySpread", web(spread(1, HOST, WEB))) == {"a", "b", "x", "y"}


def test_spread_filter_all_constraints_must_hold():
    c = Cluster(zones(), pods("a", "x", "x"))
    # zone: z1 1, z2 2 -> z2 fails; host: a 1, x 2 -> a and x fail -> only b
    p = web(spread(1, ZONE, WEB), spread(1, HOST, WEB))
    assert c.passing("PodTopologySpread", p) == {"b"}


def test_spread_filter_first_failing_constraint_gives_the_reason():
    """kube stops at the first constraint a node fails: a skew failure on the first
    constraint is reported even when the node also lacks the second one's label."""
    c = Cluster([node("a", labels={ZONE: "z1", "rack": "r1"}), node("b", labels={ZONE: "z1"}),
                 node("x", labels={ZONE: "z2", "rack": "r2"}), node("y", labels={ZONE: "z2"})],
                pods("a", "a"))
    out = c.filter("PodTopologySpread", web(spread(1, ZONE, WEB), spread(1, "rack", WEB)))
    # z1 holds 2, z2 0: b fails the zone skew first, though it has no rack label either
    assert out == {"a": ("Unschedulable", SKEW), "b": ("Unschedulable", SKEW), "x": None,
                   "y": ("UnschedulableAndUnresolvable", MISSING)}


def test_spread_min_domains():
    """With fewer domains than minDomains the global minimum counts as 0."""
    c = Cluster(zones(), pods("a", "x"))
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB))) == {"a", "b", "x", "y"}
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB, minDomains=2))) == {"a", "b", "x", "y"}
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB, minDomains=3))) == set()


def test_spread_node_affinity_policy():
    """Honor (default): domains of nodes the pod's node affinity excludes do not count for the
    minimum; Ignore: they do (empty zone z3 then pins the minimum at 0)."""
    c = Cluster(zones([node("z", labels={ZONE: "z3"})]), pods("a", "b", "x"))
    p = web(spread(1, ZONE, WEB),
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}]}}})
    # min 1 over z1, z2; z (excluded by the affinity, which NodeAffinity enforces) has 0
    assert c.passing("PodTopologySpread", p) == {"x", "y", "z"}
    p = web(spread(1, ZONE, WEB, nodeAffinityPolicy="Ignore"),
            affinity=p["spec"]["affinity"])
    assert c.passing("PodTopologySpread", p) == {"z"}               # min 0 (z3)


def test_spread_node_taints_policy():
    """Ignore (default): a tainted empty zone still counts; Honor: only if tolerated."""
    c = Cluster(zones([node("z", labels={ZONE: "z3"}, taints=["t=1:NoSchedule"])]), pods("a", "x"))
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB))) == {"z"}
    # Honor: min 1 over z1, z2 (z itself is left to TaintToleration)
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB, nodeTaintsPolicy="Honor"))) == {"a", "b", "x", "y", "z"}
    tolerant = web(spread(1, ZONE, WEB, nodeTaintsPolicy="Honor"), tolerations=[toleration("t")])
    assert c.passing("PodTopologySpread", tolerant) == {"z"}


def test_spread_node_taints_policy_beyond_63_distinct_taints():
    """Honor with more distinct taints than the taint bitmask holds (70 in zone z3, one per
    node): the nodes whose taints overflowed are judged one by one, so z3 counts exactly when
    the pod tolerates one of its nodes' taints, whichever bit (or the overflow) it got."""
    tainted = [node(f"t{i}", labels={ZONE: "z3"}, taints=[f"k{i}=v:NoSchedule"]) for i in range(70)]
    c = Cluster(zones(tainted), pods("a", "x"))
    honor = spread(1, ZONE, WEB, nodeTaintsPolicy="Honor")
    z3 = {f"t{i}" for i in range(70)}
    # z3 left out: min 1 over z1 and z2, every node fits
    assert c.passing("PodTopologySpread", web(honor)) == {"a", "b", "x", "y"} | z3
    assert c.passing("PodTopologySpread", web(honor, tolerations=[toleration("other")])) == {"a", "b", "x", "y"} | z3
    for i in range(70):
        # z3 counts (min 0): z1 and z2, holding one pod each, would make a skew of 2
        assert c.passing("PodTopologySpread", web(honor, tolerations=[toleration(f"k{i}")])) == z3, i


def test_spread_match_label_keys():
    """matchLabelKeys adds the incoming pod's value of those labels to the selector: pods of
    another revision do not count."""
    old = pods("a", "b", labels={"app": "web", "rev": "1"})
    c = Cluster(zones(), old)
    p = web(spread(1, ZONE, WEB, matchLabelKeys=["rev"]), labels={"app": "web", "rev": "2"})
    assert c.passing("PodTopologySpread", p) == {"a", "b", "x", "y"}
    p = web(spread(1, ZONE, WEB, matchLabelKeys=["rev"]), labels={"app": "web", "rev": "1"})
    assert c.passing("PodTopologySpread", p) == {"x", "y"}


def test_spread_soft_constraints_do_not_filter():
    c = Cluster(zones(), pods("a", "a", "b"))
    assert c.passing("PodTopologySpread", web(spread(1, ZONE, WEB, hard=False))) == {"a", "b", "x", "y"}


# --- score ----------------------------------------------------------------------------------

def test_spread_score_prefers_the_emptier_domain():
    c = Cluster(zones(), pods("a", "b", "x"))
    # weight log(2 + 2); raw z1 = round(2 * 1.386) = 3, z2 = round(1.386) = 1
    # normalised 100 * (max + min - s) / max: z1 = 100 * 1 / 3 = 33, z2 = 100
    assert c.score("PodTopologySpread", web(spread(1, ZONE, WEB, hard=False))) == {"a": 33, "b": 33, "x": 100, "y": 100}


def test_spread_score_ignores_nodes_missing_the_label():
    c = Cluster(zones([node("bare")]), pods("a"))
    out = c.score("PodTopologySpread", web(spread(1, ZONE, WEB, hard=False)))
    assert out["bare"] == 0
    assert out["x"] == 100 and out["a"] < 100


def test_spread_score_hostname_counts_per_node():
    c = Cluster(zones(), pods("a", "a", "b"))
    out = c.score("PodTopologySpread", web(spread(1, HOST, WEB, hard=False)))
    assert out["x"] == out["y"] == 100
    assert out["a"] < out["b"] < 100


@pytest.mark.parametrize("owner, workloads, defaulted", [
    ("ReplicaSet/web-1", RS, True),
    ("StatefulSet/web", [controller("StatefulSet", "web", WEB)], True),
    ("ReplicationController/web", [controller("ReplicationController", "web", WEB)], True),
    (None, [service("web", WEB)], True),
    ("Job/web", [service("web", WEB)], True),
    # kube's helper.DefaultSelector: the controller the pod names, looked up in its namespace
    ("ReplicaSet/web-1", [], False),
    ("ReplicaSet/web-1", [controller("ReplicaSet", "web-1", WEB, ns="other")], False),
    ("Job/web", [], False),
    (None, [], False),
    # Services whose selector does not select the pod, or that have none
    (None, [service("db", {"app": "db"}), service("headless", None)], False),
])
def test_spread_system_default_constraints(owner, workloads, defaulted):
    """Pods without constraints of their own get hostname maxSkew 3 and zone maxSkew 5
    (ScheduleAnyway) over the pods the Services selecting them and their ReplicaSet,
    StatefulSet or ReplicationController select; with no such selector, no spreading."""
    c = Cluster(zones(), pods("a", "a", "x"), workloads=workloads)
    out = c.score("PodTopologySpread", pod("new", labels=WEB, owner=owner))
    if not defaulted:
        assert out == {"a": 0, "b": 0, "x": 0, "y": 0}
        return
    # hostname weight log(4 + 2), zone weight log(2 + 2):
    # a: 2*1.792 + 2 + 2*1.386 + 4 = 12.36 -> 12;  b: 0 + 2 + 2.77 + 4 = 8.77 -> 9
    # x: 1.792 + 2 + 1.386 + 4 = 9.18 -> 9;        y: 2 + 1.386 + 4 = 7.39 -> 7
    # normalised 100 * (12 + 7 - s) / 12
    assert out == {"a": 58, "b": 83, "x": 83, "y": 100}


def test_spread_defaults_select_by_the_selectors_not_the_pods_own_labels():
    """A StatefulSet's pods each carry their own name as a label: the default selector is the
    StatefulSet's and the Service's, so its other pods count (with the pod's own labels as the
    selector nothing but itself would)."""
    existing = [pod(f"db-{i}", node_name=n, owner="StatefulSet/db",
                    labels={"app": "db", "statefulset.kubernetes.io/pod-name": f"db-{i}"})
                for i, n in enumerate(("a", "a", "x"))]
    c = Cluster(zones(), existing, workloads=[controller("StatefulSet", "db", {"app": "db"}),
                                              service("db", {"app": "db"})])
    new = pod("db-3", owner="StatefulSet/db", labels={"app": "db", "statefulset.kubernetes.io/pod-name": "db-3"})
    assert c.score("PodTopologySpread", new) == {"a": 58, "b": 83, "x": 83, "y": 100}


def test_spread_default_selector_is_the_union_of_the_services_and_the_controllers():
    """Service app=web and ReplicaSet tier=front: only pods matching both count."""
    both = {"app": "web", "tier": "front"}
    existing = (pods("a", "a", labels=both) + pods("x", labels={"app": "web"})
                + [pod("other", labels={"tier": "front"}, node_name="y")])
    c = Cluster(zones(), existing, workloads=[service("web", {"app": "web"}),
                                              controller("ReplicaSet", "front", {"tier": "front"})])
    out = c.score("PodTopologySpread", pod("new", labels=both, owner="ReplicaSet/front"))
    # only the two pods on a count: a raw 2*1.792 + 2 + 2*1.386 + 4 = 12.36 -> 12; b 2 + 2.77 + 4 -> 9;
    # x, y: 2 + 4 = 6 -> normalised 100 * (12 + 6 - s) / 12
    assert out == {"a": 50, "b": 75, "x": 100, "y": 100}


def test_spread_default_constraints_list():
    """defaultingType List: the pluginConfig's defaultConstraints replace the system ones."""
    cfg = make_config(plugin_config={"PodTopologySpread": {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]}})
    c = Cluster(zones(), pods("a", "a", "x"), cfg=cfg, workloads=RS)
    # zone only: z1 round(2 * 1.386) = 3, z2 round(1.386) = 1 -> z1 33, z2 100
    out = c.score("PodTopologySpread", pod("new", labels=WEB, owner="ReplicaSet/web-1"))
    assert out == {"a": 33, "b": 33, "x": 100, "y": 100}


def test_spread_hard_constraint_places_pods_evenly():
    """Through whole cycles: six replicas with zone maxSkew 1 over two zones end 3/3."""
    c = Cluster(zones())
    placed = []
    for i in range(6):
        p = pod(f"r{i}", labels=WEB, spread=[spread(1, ZONE, WEB)])
        result = c.schedule(p)
        assert result.scheduled
        placed.append(result.node)
        p["spec"]["nodeName"] = result.node
        c.add_pod(p)
        z1 = sum(n in ("a", "b") for n in placed)
        assert abs(z1 - (len(placed) - z1)) <= 1
    assert sum(n in ("a", "b") for n in placed) == 3


def test_spread_system_defaults_honour_node_affinity():
    """Default constraints use nodeAffinityPolicy Honor: pods on nodes the incoming pod's
    nodeSelector excludes do not count, so here every feasible node scores the same."""
    nodes = [node("a", labels={ZONE: "z1", "disk": "ssd"}), node("b", labels={ZONE: "z1", "disk": "hdd"}),
             node("x", labels={ZONE: "z2", "disk": "ssd"}), node("y", labels={ZONE: "z2", "disk": "ssd"})]
    c = Cluster(nodes, pods("b", "b"), workloads=RS)
    p = pod("new", labels=WEB, owner="ReplicaSet/web-1", node_selector={"disk": "ssd"})
    assert c.score("PodTopologySpread", p, nodes=["a", "x", "y"]) == {"a": 100, "x": 100, "y": 100}
    # without the selector the two pods on b count for z1
    p = pod("new", labels=WEB, owner="ReplicaSet/web-1")
    out = c.score("PodTopologySpread", p, nodes=["a", "x", "y"])
    assert out["a"] < out["x"] == out["y"] == 100


def test_spread_score_weights_count_only_domains_of_live_candidates():
    """A node missing one of the pod's topology keys is ignored for every constraint, so its
    zone does not count towards the zone weight: kube's weights here are log(3 + 2) for the
    zones (z1, z2, z3; not b's z4) and log(2 + 2) for the racks."""
    nodes = [node("a", labels={ZONE: "z1", "rack": "r1"}), node("b", labels={ZONE: "z4"}),
             node("x", labels={ZONE: "z2", "rack": "r1"}), node("y", labels={ZONE: "z3", "rack": "r2"})]
    c = Cluster(nodes, pods("a", "a", "a"))
    p = web(spread(1, ZONE, WEB, hard=False), spread(1, "rack", WEB, hard=False))
    # raw: a = 3 * 1.609 + 3 * 1.386 = 8.99 -> 9; x = 3 * 1.386 = 4.16 -> 4; y = 0
    # normalised 100 * (9 + 0 - s) / 9: a 0, x 55, y 100; b ignored: 0
    assert c.score("PodTopologySpread", p) == {"a": 0, "b": 0, "x": 55, "y": 100}


def test_spread_score_system_defaults_count_missing_zone_as_a_domain():
    """Under system defaults a node without the zone label is kube's "" domain for the zone
    weight: zones z1, z2 and "" make log(3 + 2)."""
    nodes = [node("a", labels={ZONE: "z1"}), node("x", labels={ZONE: "z2"}), node("bare")]
    c = Cluster(nodes, pods("a", "a", "a", "a", "a", "a"), workloads=RS)
    out = c.score("PodTopologySpread", pod("new", labels=WEB, owner="ReplicaSet/web-1"), normalize=False)
    # hostname weight log(3 + 2) = 1.609, zone weight log(3 + 2) = 1.609
    # a: 6 * 1.609 + 2 + 6 * 1.609 + 4 = 25.31 -> 25; x: 2 + 4 = 6; bare: 2 (no zone label)
    assert out == {"a": 25, "x": 6, "bare": 2}


def test_spread_inclusion_policies_apply_per_constraint():
    """Each constraint counts with its own nodeAffinityPolicy: the zone constraint honours the
    pod's node selector, the rack one ignores it, so the empty rack r3 of the excluded node z
    pins the rack minimum at 0 and every rack holding a pod is at the limit."""
    nodes = [node("a", labels={ZONE: "z1", "rack": "r1", "disk": "ssd"}),
             node("b", labels={ZONE: "z1", "rack": "r2", "disk": "ssd"}),
             node("x", labels={ZONE: "z2", "rack": "r1", "disk": "ssd"}),
             node("z", labels={ZONE: "z3", "rack": "r3"})]
    c = Cluster(nodes, pods("a", "b"))
    p = web(spread(5, ZONE, WEB), spread(1, "rack", WEB, nodeAffinityPolicy="Ignore"),
            node_selector={"disk": "ssd"})
    assert c.passing("PodTopologySpread", p) == {"z"}
    # both honouring the selector: r3 does not count, the rack minimum is 1
    p = web(spread(5, ZONE, WEB), spread(1, "rack", WEB), node_selector={"disk": "ssd"})
    assert c.passing("PodTopologySpread", p) == {"a", "b", "x", "z"}


def test_do_not_schedule_default_constraints_filter_in_the_shard_and_the_binder():
    """defaultingType List with a DoNotSchedule constraint (kube-scheduler v1.37 runs it): a
    ReplicaSet's pod without constraints of its own is kept off the zone that would be too far
    ahead, with kube's message, and the binder's check of the profile (selecting by the same
    ReplicaSet) refuses such a decision; a pod with constraints of its own, or no controller,
    is not held by the defaults."""
    from builders import binder_view, controller
    from common.model.objects import parse_pod
    from common.scheduling.checks import Judged, first_failure, profile_checks

    cfg = make_config(plugin_config={"PodTopologySpread": {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}})
    existing = pods("a", "b", "x", owner="ReplicaSet/web-1")  # z1 holds 2, z2 1
    rs = controller("ReplicaSet", "web-1", WEB)
    c = Cluster(zones(), existing, cfg=cfg, workloads=[rs])
    new = pod("new", labels=WEB, owner="ReplicaSet/web-1")
    assert c.filter("PodTopologySpread", new) == {"a": ("Unschedulable", SKEW), "b": ("Unschedulable", SKEW),
                                                  "x": None, "y": None}
    assert c.schedule(new).node in ("x", "y")
    assert c.filter("PodTopologySpread", pod("loose", labels=WEB)) == {n: None for n in "abxy"}
    own = pod("own", labels=WEB, owner="ReplicaSet/web-1", spread=[spread(3, ZONE, WEB)])
    assert c.filter("PodTopologySpread", own) == {n: None for n in "abxy"}
    # the binder: the same profile's checks refuse the decision onto z1
    view = binder_view(*zones(), rs, *existing, new)
    checks = profile_checks(cfg)["shardsched"]
    judged = parse_pod(new)
    assert first_failure(Judged(view, judged, "a"), checks) == f"PodTopologySpread: {SKEW}"
    assert first_failure(Judged(view, judged, "x"), checks) is None
