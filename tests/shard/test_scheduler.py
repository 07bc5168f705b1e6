"""Whole scheduling cycles with the default profile: the vectorised and per-node filter forms
agree, kube-scheduler's unschedulable message, the scheduling context (unchanged nodes skipped
on retry) and unit locating (pinned pods go straight to their node)."""
from __future__ import annotations

import random

import pytest

from builders import (
    HOST, ZONE, Cluster, expr, make_config, node, node_affinity, pod, pod_affinity, pod_term, spread, toleration,
    with_out_of_tree_plugins,
)


# --- vectorised vs per-node -----------------------------------------------------------------

def _mixed_nodes(rng):
    out = []
    for i in range(40):
        taints = []
        if i % 7 == 0:
            taints.append("dedicated=gpu:NoSchedule")
        if i % 5 == 0:
            taints.append("soft=yes:PreferNoSchedule")
        out.append(node(f"n{i:02d}", cpu=str(rng.choice([2, 4, 8])), memory=rng.choice(["4Gi", "16Gi"]),
                        labels={ZONE: f"z{i % 3}", "disk": rng.choice(["ssd", "hdd"]), "gen": str(i % 6)},
                        taints=taints, unschedulable=(i == 13),
                        images={"app:v1": 400 * 1024 * 1024} if i % 4 == 0 else None))
    return out


def _mixed_pods(rng):
    """Pods that exercise every default filter and score, some of which cannot fit."""
    kinds = [
        lambda i: pod(f"plain{i}", cpu="500m", memory="512Mi", labels={"app": "plain"}, images=["app:v1"]),
        lambda i: pod(f"gpu{i}", cpu="1", tolerations=[toleration("dedicated", "gpu")],
                      node_selector={"disk": "ssd"}),
        lambda i: pod(f"aff{i}", cpu="250m", affinity=node_affinity(
            [expr("gen", "Gt", 2), expr(ZONE, "In", "z0", "z1")], [expr("disk", "In", "hdd")],
            preferred=[(5, [expr("disk", "In", "ssd")])])),
        lambda i: pod(f"port{i}", cpu="100m", ports=[(8080, "TCP")]),
        lambda i: pod(f"spread{i}", cpu="200m", labels={"app": "s"},
                      spread=[spread(1, ZONE, {"app": "s"}), spread(2, HOST, {"app": "s"}, hard=False)]),
        lambda i: pod(f"anti{i}", cpu="200m", labels={"app": "a"},
                      affinity=pod_affinity(anti_required=[pod_term({"app": "a"}, ZONE)],
                                            preferred=[(3, pod_term({"app": "plain"}, HOST))])),
        lambda i: pod(f"huge{i}", cpu="6", memory="12Gi"),
        lambda i: pod(f"rs{i}", cpu="300m", labels={"app": "rs"}, owner="ReplicaSet/rs-1"),
    ]
    return [rng.choice(kinds)(i) for i in range(80)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorised_and_per_node_filters_schedule_alike(seed):
    """The same pods on the same cluster with the same seed land on the same nodes (or fail
    with the same message) whether filters run vectorised or node by node."""
    rng = random.Random(seed)
    nodes, pods = _mixed_nodes(rng), _mixed_pods(rng)
    fast = Cluster(nodes, seed=seed, vectorised=True)
    slow = Cluster(nodes, seed=seed, vectorised=False)
    scheduled = failed = 0
    for p in pods:
        a, b = fast.schedule(p), slow.schedule(p)
        assert a.node == b.node, p["metadata"]["name"]
        if a.scheduled:
            scheduled += 1
            p["spec"]["nodeName"] = a.node
            fast.add_pod(p)
            slow.add_pod(p)
        else:
            failed += 1
            assert fast.sched.explain(a) == slow.sched.explain(b)
    assert scheduled and failed  # both paths were exercised


# --- the unschedulable message --------------------------------------------------------------

def test_message_counts_reasons_per_node():
    c = Cluster([node("small", cpu="1"), node("g1", taints=["dedicated=gpu:NoSchedule"]),
                 node("g2", taints=["dedicated=gpu:NoSchedule"])])
    assert c.explain(pod("p", cpu="2")) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def test_message_lists_every_reason_of_a_node_and_sorts_as_strings():
    """One node short of cpu and memory counts for both; reasons sort as strings, so "10 ..."
    comes before "2 ..." as in kube-scheduler."""
    c = Cluster([node("n", cpu="1", memory="1Gi")])
    assert c.explain(pod("p", cpu="2", memory="2Gi")) == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    nodes = [node(f"t{i}", taints=["a=b:NoExecute"]) for i in range(10)] + [node("s1", cpu="1"), node("s2", cpu="1")]
    assert Cluster(nodes).explain(pod("p", cpu="2")) == (
        "0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/12 nodes are available: 12 Preemption is not helpful for scheduling.")


def test_message_for_unschedulable_nodes_and_affinity():
    c = Cluster([node("off", unschedulable=True), node("z", labels={ZONE: "z9"}),
                 node("ok", labels={ZONE: "z1"}, cpu="1")])
    p = pod("p", cpu="2", affinity=node_affinity([expr(ZONE, "In", "z1")]))
    assert c.explain(p) == ("0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match "
                            "Pod's node affinity/selector, 1 node(s) were unschedulable. "
                            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("vectorised", [True, False])
def test_message_blames_the_first_filter_in_profile_order(vectorised):
    """NodePorts comes before NodeResourcesFit in kube's profile: a node short of both its
    port and cpu counts once, for the port, whichever way the filters run."""
    c = Cluster([node("n1", cpu="1")], [pod("old", node_name="n1", ports=[8080])], vectorised=vectorised)
    assert c.explain(pod("p", cpu="2", ports=[8080])) == (
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")


def test_empty_cluster_message_is_kubes():
    c = Cluster([])
    assert c.explain(pod("p")) == "no nodes available to schedule pods"


# --- scheduling context ---------------------------------------------------------------------

def _small_nodes(n=10):
    return [node(f"n{i}", cpu="1") for i in range(n)]


def test_scheduling_context_skips_unchanged_nodes_on_retry():
    c = Cluster(_small_nodes())
    big = pod("big", cpu="2")
    first = c.schedule(big)
    assert not first.scheduled and first.evaluated == 10 and first.skipped_by_context == 0
    gen = c.cache.nodes.generation
    c.add_node(node("n3", cpu="4"))                 # one node grows
    retry = c.schedule(big, last_generation=gen)
    assert retry.node == "n3"
    assert retry.skipped_by_context == 9 and retry.evaluated == 1


def test_scheduling_context_failed_retry_still_explains_every_node():
    c = Cluster(_small_nodes())
    big = pod("big", cpu="2")
    c.schedule(big)
    gen = c.cache.nodes.generation
    c.add_node(node("n3", cpu="1500m"))              # changed, still too small
    retry = c.schedule(big, last_generation=gen)
    assert not retry.scheduled and retry.skipped_by_context == 9
    assert c.sched.explain(retry) == (
        "0/10 nodes are available: 10 Insufficient cpu. preemption: 0/10 nodes are available: 10 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("constraint", [
    {"spread": [spread(1, ZONE, {"app": "x"})]},
    {"affinity": pod_affinity(anti_required=[pod_term({"app": "x"}, HOST)])},
    {"affinity": pod_affinity(required=[pod_term({"app": "x"}, HOST)])},
])
def test_scheduling_context_not_used_for_cross_node_constraints(constraint):
    """Whether one node fits such a pod depends on pods elsewhere, so no node is skipped."""
    nodes = [node(f"n{i}", cpu="1", labels={ZONE: "z1"}) for i in range(10)]
    c = Cluster(nodes)
    big = pod("big", cpu="2", labels={"app": "x"}, **constraint)
    c.schedule(big)
    gen = c.cache.nodes.generation
    c.add_node(node("n3", cpu="4", labels={ZONE: "z1"}))
    retry = c.schedule(big, last_generation=gen)
    assert retry.skipped_by_context == 0 and retry.evaluated == 10


def test_scheduling_context_can_be_switched_off():
    c = Cluster(_small_nodes(), scheduling_context=False)
    big = pod("big", cpu="2")
    c.schedule(big)
    gen = c.cache.nodes.generation
    c.add_node(node("n3", cpu="4"))
    retry = c.schedule(big, last_generation=gen)
    assert retry.node == "n3" and retry.skipped_by_context == 0 and retry.evaluated == 10


def test_zone_wide_anti_affinity_of_a_running_pod_disables_the_scheduling_context():
    """A guard pod on n2 keeps app=db pods out of zone z1. The db pod's failed attempt must
    not let its retry skip n1 (unchanged) once the guard, on another node, is gone."""
    zone = {ZONE: "z1"}
    guard = pod("guard", cpu="100m", node_name="n2",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, ZONE)]))
    c = Cluster([node("n1", cpu="4", labels=zone), node("n2", cpu="1", labels=zone)], [guard])
    db = pod("db", cpu="2", labels={"app": "db"})
    first = c.schedule(db)
    assert not first.scheduled and not first.context_safe
    gen = c.cache.nodes.generation
    c.cache.remove_pod("default/guard")
    retry = c.schedule(db, last_generation=0 if not first.context_safe else gen)
    assert retry.node == "n1"


def test_a_retry_that_skipped_a_fitting_node_is_retried_without_the_context():
    """If the explanation's full re-run finds the pod fits after all, the next retry must not
    skip unchanged nodes again."""
    c = Cluster([node("n1", cpu="4"), node("n2", cpu="1")])
    big = pod("big", cpu="2")
    result = c.schedule(big, last_generation=c.cache.nodes.generation)  # n1 skipped as unchanged
    assert not result.scheduled and result.skipped_by_context == 2
    assert c.sched.explain(result) == "the pod fits now and will be retried"
    assert not result.context_safe


# --- unit locating --------------------------------------------------------------------------

def _pinned(name="n7", cpu="1"):
    """A DaemonSet-style pod: required node affinity on metadata.name."""
    return pod("ds", cpu=cpu, affinity=node_affinity({"matchFields": [expr("metadata.name", "In", name)]}))


@pytest.mark.parametrize("p", [_pinned(), pod("named", cpu="1", node_name="n7")], ids=["matchFields", "nodeName"])
def test_unit_locating_checks_only_the_pinned_node(p):
    nodes = [node(f"n{i}", cpu="4") for i in range(50)]
    located = Cluster(nodes).schedule(p)
    assert located.node == "n7" and located.evaluated == 1
    scanned = Cluster(nodes, unit_locating=False).schedule(p)
    assert scanned.node == "n7" and scanned.evaluated == 50


def test_unit_locating_message_names_the_narrowing_plugin():
    """kube-scheduler: nodes a PreFilter result left out count as "didn't satisfy plugin(s)"."""
    nodes = [node(f"n{i}", cpu="4") for i in range(50)]
    c = Cluster(nodes)
    assert c.explain(_pinned(cpu="8")) == (
        "0/50 nodes are available: 1 Insufficient cpu, 49 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/50 nodes are available: 50 Preemption is not helpful for scheduling.")
    assert c.explain(_pinned(name="gone")) == (
        "0/50 nodes are available: 50 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/50 nodes are available: 50 Preemption is not helpful for scheduling.")
    # without unit locating every node is filtered and gives its own reason
    c = Cluster(nodes, unit_locating=False)
    assert c.explain(_pinned(cpu="8")) == (
        "0/50 nodes are available: 1 Insufficient cpu, 49 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/50 nodes are available: 50 Preemption is not helpful for scheduling.")


# --- the scan ------------------------------------------------------------------------------

def test_per_node_scan_counts_only_the_nodes_it_examined():
    """kube mode node by node stops after 230 feasible nodes of 500: 230 were evaluated."""
    nodes = [node(f"n{i:03d}") for i in range(500)]
    result = Cluster(nodes, cfg=make_config("kube"), vectorised=False).schedule(pod("p"))
    assert result.feasible == 230 and result.evaluated == 230


# --- PreFilter results as kube merges them ----------------------------------------------------

def _fake_pre_filter(name: str, node_names):
    """A PreFilter plugin returning a fixed PreFilterResult (kube's tf.NewFakePreFilterPlugin)."""
    from shard.framework import Plugin, PreFilterResult

    class Fake(Plugin):
        def pre_filter(self, state, pod):
            return PreFilterResult(node_names)

    Fake.name = name
    return Fake


@pytest.mark.parametrize("results, want", [
    # kube-scheduler v1.37, schedule_one_test.go "test prefilter plugin returning non-intersecting nodes"
    ({"FakePreFilter2": {"n2"}, "FakePreFilter3": {"n1"}},
     "0/3 nodes are available: node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously. "
     "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
    # "test prefilter plugin returning empty node set"
    ({"FakePreFilter2": set()},
     "0/3 nodes are available: node(s) didn't satisfy plugin FakePreFilter2. "
     "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
    # names are merged before the snapshot is read: a node that does not exist still overlaps
    ({"FakePreFilter2": {"ghost"}, "FakePreFilter3": {"ghost", "n1"}},
     "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3]. "
     "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."),
])
def test_pre_filter_results_that_share_no_node_fail_with_kubes_message(results, want):
    from shard.registry import REGISTRY

    registry = dict(REGISTRY, **{name: _fake_pre_filter(name, names) for name, names in results.items()})
    cfg = with_out_of_tree_plugins(make_config(), *results)
    c = Cluster([node("n1"), node("n2"), node("n3")], cfg=cfg, registry=registry)
    assert c.explain(pod("p")) == want


def test_an_unschedulable_pre_filter_lets_the_others_run_and_the_last_rejection_counts():
    """kube's RunPreFilterPlugins (kubernetes#119770): after an Unschedulable PreFilter the
    other PreFilters still run (preemption, and DynamicResources' PostFilter in v1.37's default
    profile, read their state), and the last Unschedulable is the cycle's; an
    UnschedulableAndUnresolvable one stops PreFilter at once."""
    from shard.framework import Plugin, Status
    from shard.registry import REGISTRY

    ran = []

    def fake(name, code):
        class Fake(Plugin):
            def pre_filter(self, state, pod):
                ran.append(name)
                return Status(code, f"{name} says no") if code else None
        Fake.name = name
        return Fake

    plugins = {"First": "Unschedulable", "Second": None, "Third": "Unschedulable", "Fourth": "UnschedulableAndUnresolvable",
               "Fifth": None}
    registry = dict(REGISTRY, **{name: fake(name, code) for name, code in plugins.items()})
    c = Cluster([node("n1")], cfg=with_out_of_tree_plugins(make_config(), *plugins), registry=registry)
    result = c.schedule(pod("p"))
    assert ran == ["First", "Second", "Third", "Fourth"]
    assert (result.status.plugin, result.status.code) == ("Fourth", "UnschedulableAndUnresolvable")
    ran.clear()
    del plugins["Fourth"]
    c = Cluster([node("n1")], cfg=with_out_of_tree_plugins(make_config(), *plugins), registry=registry)
    result = c.schedule(pod("p"))
    assert ran == ["First", "Second", "Third", "Fifth"]
    assert (result.status.plugin, result.status.message()) == ("Third", "Third says no")


def test_node_name_is_only_a_hint_and_others_are_told_its_reason():
    """kube's NodeName has no PreFilter: the nodes other than the named one fail its filter
    ("didn't match the requested node name"), and with a node affinity on another node's name
    only NodeAffinity's PreFilter result counts. (Both used to read "didn't satisfy plugin(s)
    [... NodeName]".)"""
    nodes = [node(f"n{i}", cpu="4") for i in range(5)]
    c = Cluster(nodes)
    assert c.explain(pod("named", cpu="8", node_name="n3")) == (
        "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) didn't match the requested node name. "
        "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")
    both = pod("both", node_name="n3", affinity=node_affinity({"matchFields": [expr("metadata.name", "In", "n1")]}))
    assert c.explain(both) == (
        "0/5 nodes are available: 1 node(s) didn't match the requested node name, "
        "4 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.")


def test_preemption_follows_a_pre_filter_that_says_unschedulable():
    """kube runs PostFilter after a PreFilter's Unschedulable (not after an unresolvable one):
    evicting a lower-priority pod may cure it, and the dry runs judge the node by its filters."""
    from shard.framework import Plugin, unschedulable
    from shard.registry import REGISTRY

    class Waiting(Plugin):
        name = "FakeWaiting"

        def pre_filter(self, state, pod):
            return unschedulable("waiting for something")

    cfg = with_out_of_tree_plugins(make_config(), "FakeWaiting")
    low = pod("low", cpu="2", node_name="n1", priority=1)
    c = Cluster([node("n1", cpu="2")], [low], cfg=cfg, registry=dict(REGISTRY, FakeWaiting=Waiting))
    result = c.schedule(pod("high", cpu="2", priority=100))
    assert result.node == "n1" and [v.key for v in result.victims] == ["default/low"]
    assert c.explain(pod("peer", cpu="2", priority=1)) == (
        "0/1 nodes are available: waiting for something. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
