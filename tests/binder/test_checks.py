"""Every refusal of the binder's checks (common/scheduling/checks.py), each decision sent through the
binder's real gRPC port as a shard (or anyone who reaches the port) would send it. The
binder judges the pod as its own watch shows it: nothing in a decision but names."""
from __future__ import annotations

import pytest

from builders import (LiveBinder, decision, make_config, node, node_affinity, pdb, pod, pod_affinity,
                      pod_term, running, spread, toleration)
from common.scheduling.partition import PARTITION_ROLE, partition_of
from common.store.memory import MemoryStore

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def cluster():
    """A memory store with a few nodes, and a live binder on it (closed afterwards)."""
    store = MemoryStore()
    for obj in (node("n1", cpu="2", pods="3", labels={ZONE: "a", "disk": "ssd"}),
                node("n2", cpu="2", labels={ZONE: "b"}),
                node("cordoned", unschedulable=True, labels={ZONE: "a"}),
                node("gpu", taints=["nvidia.com/gpu=present:NoSchedule"], labels={ZONE: "b"}),
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                 "metadata": {"name": "system-node-critical"}, "value": 2000001000}):
        store.create(obj)
    binders = []

    def start(*objs, cfg=None) -> LiveBinder:
        for o in objs:
            store.create(o)
        b = LiveBinder(store, cfg)
        binders.append(b)
        return b

    yield store, start
    for b in binders:
        b.close()


def reason(outcome) -> str:
    return outcome.reason.split(":", 1)[0]


def test_a_decision_that_fits_is_bound(cluster):
    store, start = cluster
    b = start(pod("a", cpu="1"))
    out = b.decide(decision("default/a", "n1"))["default/a"]
    assert out.bound and store.get("Pod", "default/a")["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize("case, pod_doc, node_name, expected", [
    ("node gone", pod("p"), "nowhere", "NodeNotFound"),
    ("cordoned node", pod("p"), "cordoned", "NodeUnschedulable"),
    ("untolerated taint", pod("p"), "gpu", "TaintToleration"),
    ("nodeSelector", pod("p", node_selector={"disk": "hdd"}), "n1", "NodeAffinity"),
    ("required node affinity", pod("p", affinity=node_affinity([{"key": ZONE, "operator": "In", "values": ["b"]}])),
     "n1", "NodeAffinity"),
    ("too much cpu", pod("p", cpu="3"), "n1", "NodeResourcesFit"),
    ("host port in use", pod("p", ports=[8080]), "n2", "NodePorts"),
])
def test_node_checks_refuse_with_the_plugins_reason(cluster, case, pod_doc, node_name, expected):
    store, start = cluster
    b = start(pod_doc, running("web", "n2", "100m", 0, ports=[8080]))
    out = b.decide(decision("default/p", node_name))["default/p"]
    assert not out.bound and reason(out) == expected, (case, out.reason)
    assert not store.get("Pod", "default/p")["spec"].get("nodeName")


def test_kubes_messages_are_carried(cluster):
    store, start = cluster
    b = start(pod("p", cpu="3", memory="100Gi"), pod("q"))
    out = b.decide(decision("default/p", "n1"), decision("default/q", "gpu"))
    assert out["default/p"].reason == "NodeResourcesFit: Insufficient cpu, Insufficient memory"
    assert out["default/q"].reason == "TaintToleration: node(s) had untolerated taint(s)"


def test_tolerated_taints_and_matching_affinity_pass(cluster):
    store, start = cluster
    b = start(pod("g", tolerations=[toleration("nvidia.com/gpu", effect="NoSchedule")]),
              pod("s", node_selector={"disk": "ssd"}))
    out = b.decide(decision("default/g", "gpu"), decision("default/s", "n1"))
    assert out["default/g"].bound and out["default/s"].bound


def test_the_pod_count_is_a_resource(cluster):
    store, start = cluster
    b = start(*(running(f"r{i}", "n1", "10m", 0) for i in range(3)), pod("p"))
    assert b.decide(decision("default/p", "n1"))["default/p"].reason == "NodeResourcesFit: Too many pods"


def test_reservations_count_between_decisions_in_one_batch(cluster):
    store, start = cluster
    b = start(pod("a", cpu="1500m"), pod("b", cpu="1500m"))
    out = b.decide(decision("default/a", "n1"), decision("default/b", "n1"))
    assert out["default/a"].bound and out["default/b"].reason == "NodeResourcesFit: Insufficient cpu"


def test_the_pod_comes_from_the_watch_not_the_message(cluster):
    """Forged or stale names: unknown pod, another uid, bound already, not this scheduler's,
    gated, being deleted."""
    store, start = cluster
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    b = start(pod("p"), running("bound", "n2", "100m", 0), pod("theirs", scheduler="default-scheduler"), gated)
    out = b.decide(decision("default/ghost", "n1"), decision("default/p", "n1", uid="forged"),
                   decision("default/bound", "n1"), decision("default/theirs", "n1"),
                   decision("default/gated", "n1"))
    assert reason(out["default/ghost"]) == "PodNotFound"
    assert reason(out["default/p"]) == "UIDMismatch"
    assert out["default/bound"].reason == "AlreadyBound: default/bound is bound to n2"
    assert reason(out["default/theirs"]) == "PodNotFound"
    assert reason(out["default/gated"]) == "SchedulingGated"
    assert not any(o.bound for o in out.values())


def test_a_pod_the_watch_has_not_shown_yet_is_waited_for(cluster):
    """The shard saw a newer resourceVersion than the binder's watch: the binder waits for
    it instead of refusing a pod it does not know yet."""
    store, start = cluster
    b = start()
    created = store.create(pod("late"))
    d = decision("default/late", "n1", rv=created["metadata"]["resourceVersion"])
    assert b.decide(d)["default/late"].bound


@pytest.mark.parametrize("case, victims, expected", [
    ("victim gone", ["default/nobody"], "VictimGone"),
    ("victim with another uid", [("default/low", "forged")], "VictimGone"),
    ("victim on another node", ["default/elsewhere"], "VictimGone"),
    ("victim named twice", ["default/low", "default/low"], "InvalidVictim"),
    ("victim of equal priority", ["default/peer"], "InvalidVictim"),
    ("critical pod", ["default/critical"], "InvalidVictim"),
])
def test_forged_victims_are_refused_and_nothing_is_evicted(cluster, case, victims, expected):
    store, start = cluster
    critical = running("critical", "n1", "100m", 0)
    critical["spec"]["priorityClassName"] = "system-node-critical"
    critical["spec"].pop("priority", None)
    b = start(running("low", "n1", "1", 1), running("peer", "n1", "100m", 100), critical,
              running("elsewhere", "n2", "1", 1), pod("high", cpu="1500m", priority=100))
    out = b.decide(decision("default/high", "n1", victims))["default/high"]
    assert not out.bound and reason(out) == expected, (case, out.reason)
    for name in ("low", "peer", "critical", "elsewhere"):
        assert store.get("Pod", f"default/{name}") is not None, f"{case}: {name} was evicted"


def test_a_decision_for_a_pod_that_does_not_exist_evicts_nobody(cluster):
    store, start = cluster
    b = start(running("low", "n1", "2", 1))
    out = b.decide(decision("default/phantom", "n1", ["default/low"]))["default/phantom"]
    assert reason(out) == "PodNotFound" and store.get("Pod", "default/low") is not None


def test_valid_victims_are_evicted_and_make_room(cluster):
    store, start = cluster
    b = start(running("low", "n1", "1500m", 1), pod("high", cpu="1500m", priority=100))
    out = b.decide(decision("default/high", "n1", ["default/low"]))["default/high"]
    assert out.bound and list(out.evicted) == ["default/low"]
    assert store.get("Pod", "default/low") is None


def test_a_victim_cannot_be_claimed_twice(cluster):
    store, start = cluster
    b = start(running("low", "n1", "1500m", 1), pod("h1", cpu="1500m", priority=100),
              pod("h2", cpu="1500m", priority=100))
    out = b.decide(decision("default/h1", "n1", ["default/low"]), decision("default/h2", "n1", ["default/low"]))
    assert out["default/h1"].bound and reason(out["default/h2"]) in ("VictimClaimed", "VictimGone")


def test_victims_breaking_a_budget_are_deleted_as_kube_does(cluster):
    """PDBs are best effort in preemption: the chosen victims go even when that breaks a
    budget (kube-scheduler deletes them rather than evicting)."""
    store, start = cluster
    b = start(running("v1", "n1", "1", 1, labels={"app": "db"}), running("v2", "n1", "1", 1, labels={"app": "db"}),
              pdb("db", {"app": "db"}, max_unavailable=0), pod("high", cpu="2", priority=100))
    out = b.decide(decision("default/high", "n1", ["default/v1", "default/v2"]))["default/high"]
    assert out.bound and sorted(out.evicted) == ["default/v1", "default/v2"]
    assert b.server.counters["victims_deleted"] == 2


def test_a_malformed_decision_is_refused_and_the_stream_keeps_serving(cluster):
    store, start = cluster
    b = start(pod("ok"))
    out = b.decide(decision("not/a/key", "n1", uid=""), decision("", "", uid=""))
    assert not any(o.bound for o in out.values())
    assert b.decide(decision("default/ok", "n1"))["default/ok"].bound


def test_a_partition_this_binder_does_not_hold_is_refused(cluster):
    store, start = cluster
    b = start(pod("p"), cfg=make_config(binders={"count": 2}))
    lost = partition_of(b.server.view.nodes["n1"].node, 2, ZONE)
    b.server.partitions.release(lost)
    assert store.acquire_lease(PARTITION_ROLE, str(lost), "another binder", 60)
    out = b.decide(decision("default/p", "n1"))["default/p"]
    assert reason(out) == "NotPartitionHolder" and not out.bound


# --- constraints across nodes ---------------------------------------------------------------

def test_anti_affinity_both_ways_and_affinity(cluster):
    store, start = cluster
    anti = pod_affinity(anti_required=[pod_term({"app": "web"}, ZONE)])
    b = start(running("web", "n1", "100m", 0, labels={"app": "web"}),
              running("loner", "n2", "100m", 0, affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, ZONE)])),
              pod("w2", labels={"app": "web"}, affinity=anti),
              pod("db", labels={"app": "db"}),
              pod("follower", affinity=pod_affinity(required=[pod_term({"app": "web"}, ZONE)])))
    out = b.decide(decision("default/w2", "n1"), decision("default/db", "n2"),
                   decision("default/follower", "n2"))
    assert out["default/w2"].reason == "InterPodAffinity: node(s) didn't match pod anti-affinity rules"
    assert out["default/db"].reason == ("InterPodAffinity: node(s) didn't satisfy existing pods "
                                        "anti-affinity rules")
    assert out["default/follower"].reason == "InterPodAffinity: node(s) didn't match pod affinity rules"
    out = b.decide(decision("default/w2", "n2"), decision("default/follower", "n1"))
    assert out["default/w2"].bound and out["default/follower"].bound


def test_namespace_selector_reads_the_namespaces_labels(cluster):
    """The binder re-checks pod affinity's namespaceSelector against the Namespaces it watches."""
    from builders import namespace
    store, start = cluster
    term = pod_term({"app": "web"}, "kubernetes.io/hostname", namespaceSelector={"matchLabels": {"env": "prod"}})
    b = start(namespace("team-a", {"env": "prod"}),
              running("web", "n1", "100m", 0, labels={"app": "web"}, ns="team-a"),
              pod("p", affinity=pod_affinity(anti_required=[term])))
    out = b.decide(decision("default/p", "n1"))["default/p"]
    assert out.reason == "InterPodAffinity: node(s) didn't match pod anti-affinity rules"
    assert b.decide(decision("default/p", "n2"))["default/p"].bound


def test_topology_spread_counts_reservations(cluster):
    store, start = cluster
    c = spread(1, ZONE, {"app": "s"})
    b = start(*(pod(f"s{i}", cpu="10m", labels={"app": "s"}, spread=[c]) for i in range(3)))
    out = b.decide(decision("default/s0", "n1"), decision("default/s1", "n1"))
    assert out["default/s0"].bound
    assert out["default/s1"].reason == "PodTopologySpread: node(s) didn't match pod topology spread constraints"
    assert b.decide(decision("default/s2", "n2"))["default/s2"].bound


def test_cross_node_checks_can_be_switched_off(cluster):
    store, start = cluster
    c = spread(1, ZONE, {"app": "s"})
    b = start(*(pod(f"s{i}", cpu="10m", labels={"app": "s"}, spread=[c]) for i in range(2)),
              cfg=make_config(binders={"crossNodeChecks": False}))
    out = b.decide(decision("default/s0", "n1"), decision("default/s1", "n1"))
    assert out["default/s0"].bound and out["default/s1"].bound


def test_a_filter_the_pods_profile_does_not_run_is_not_checked(cluster):
    """A profile that switches TaintToleration's filter off (keeping its score) places pods on
    tainted nodes; the binder checks the filters the pod's profile runs, no more."""
    store, start = cluster
    cfg = make_config(disabled=[{"name": "TaintToleration", "extensionPoints": ["filter"]}],
                      extra_profiles=[{"schedulerName": "other"}])
    b = start(pod("p", cpu="10m"), pod("q", cpu="10m", scheduler="other"), cfg=cfg)
    out = b.decide(decision("default/p", "gpu"), decision("default/q", "gpu"))
    assert out["default/p"].bound
    assert reason(out["default/q"]) == "TaintToleration"


def test_ignored_extended_resources_are_not_checked(cluster):
    """NodeResourcesFit's ignoredResources and ignoredResourceGroups hold in the binder too."""
    store, start = cluster
    cfg = make_config(plugin_config={"NodeResourcesFit": {"ignoredResources": ["example.com/foo"],
                                                          "ignoredResourceGroups": ["vendor.io"]}})
    b = start(pod("p", extra={"example.com/foo": 2, "vendor.io/card": 1}), pod("q", extra={"example.com/bar": 1}),
              cfg=cfg)
    out = b.decide(decision("default/p", "n1"), decision("default/q", "n1"))
    assert out["default/p"].bound
    assert out["default/q"].reason == "NodeResourcesFit: Insufficient example.com/bar"
