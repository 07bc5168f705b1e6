"""InterPodAffinity: required affinity and anti-affinity of the incoming pod, existing pods'
anti-affinity (symmetry), the first-pod-of-a-group rule and preferred scoring; after
kube-scheduler's interpodaffinity filtering/scoring tests.

Topology: zone z1 = {n1, n2}, zone z2 = {n3}, and n4 without a zone label. A pod labelled
app=web runs on n1 in every case unless the case says otherwise.
"""
from __future__ import annotations

import pytest

from common.model.objects import parse_object

from builders import HOST, ZONE, Cluster, make_config, namespace, node, pod, pod_affinity, pod_term

AFFINITY = ("UnschedulableAndUnresolvable", "node(s) didn't match pod affinity rules")
ANTI = ("Unschedulable", "node(s) didn't match pod anti-affinity rules")
EXISTING_ANTI = ("Unschedulable", "node(s) didn't satisfy existing pods anti-affinity rules")
ALL = {"n1", "n2", "n3", "n4"}


def nodes():
    return [node("n1", labels={ZONE: "z1"}), node("n2", labels={ZONE: "z1"}),
            node("n3", labels={ZONE: "z2"}), node("n4")]


def cluster(*extra_pods, cfg=None):
    return Cluster(nodes(), [pod("web", labels={"app": "web"}, node_name="n1"), *extra_pods], cfg=cfg)


@pytest.mark.parametrize("affinity, fits, failure", [
    (pod_affinity(required=[pod_term({"app": "web"}, HOST)]), {"n1"}, AFFINITY),
    (pod_affinity(required=[pod_term({"app": "web"}, ZONE)]), {"n1", "n2"}, AFFINITY),   # n4: no zone
    (pod_affinity(anti_required=[pod_term({"app": "web"}, HOST)]), {"n2", "n3", "n4"}, ANTI),
    (pod_affinity(anti_required=[pod_term({"app": "web"}, ZONE)]), {"n3", "n4"}, ANTI),   # no label: no domain
    (pod_affinity(anti_required=[pod_term({"app": "db"}, HOST)]), ALL, None),
    # terms of a different namespace do not see the default-namespace pod...
    (pod_affinity(anti_required=[pod_term({"app": "web"}, HOST, namespaces=["other"])]), ALL, None),
    # ...unless they name it, or select every namespace
    (pod_affinity(required=[pod_term({"app": "web"}, HOST, namespaces=["other", "default"])]), {"n1"}, AFFINITY),
    (pod_affinity(required=[pod_term({"app": "web"}, HOST, namespaceSelector={})]), {"n1"}, AFFINITY),
])
def test_interpod_required(affinity, fits, failure):
    out = cluster().filter("InterPodAffinity", pod("p", labels={"app": "client"}, affinity=affinity))
    assert {n for n, o in out.items() if o is None} == fits
    for n, o in out.items():
        if n not in fits:
            assert o == failure


PROD = {"matchLabels": {"env": "prod"}}


def test_interpod_namespace_selector_reads_the_namespaces_labels():
    """namespaceSelector env=prod selects the pods of the Namespaces labelled so (kube's
    Namespace lister), for the incoming pod's terms and for existing pods' terms towards it;
    an unlabelled namespace is not selected."""
    prod = namespace("team-a", {"env": "prod"})
    c = Cluster(nodes(), [pod("web", ns="team-a", labels={"app": "web"}, node_name="n1")], workloads=[prod])
    anti = pod_affinity(anti_required=[pod_term({"app": "web"}, HOST, namespaceSelector=PROD)])
    assert c.filter("InterPodAffinity", pod("p", affinity=anti)) == {"n1": ANTI, "n2": None, "n3": None, "n4": None}
    guard = pod("guard", node_name="n3",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, ZONE, namespaceSelector=PROD)]))
    c = Cluster(nodes(), [guard], workloads=[prod, namespace("team-b")])
    assert c.filter("InterPodAffinity", pod("db", ns="team-a", labels={"app": "db"}))["n3"] == EXISTING_ANTI
    assert c.filter("InterPodAffinity", pod("db", ns="team-b", labels={"app": "db"}))["n3"] is None


def test_interpod_namespace_label_changes_are_seen():
    """Counts cached per term are recounted when a namespace's labels change."""
    c = Cluster(nodes(), [pod("web", ns="team-a", labels={"app": "web"}, node_name="n1")])
    anti = pod("p", affinity=pod_affinity(anti_required=[pod_term({"app": "web"}, HOST, namespaceSelector=PROD)]))
    assert c.passing("InterPodAffinity", anti) == ALL
    c.sched.namespaces.set(parse_object(namespace("team-a", {"env": "prod"})))
    assert c.passing("InterPodAffinity", anti) == ALL - {"n1"}


def test_interpod_affinity_terms_are_anded_on_one_pod():
    """Several required affinity terms must all be satisfied by the same pods (kube counts
    pods matching every term)."""
    c = cluster(pod("db", labels={"app": "db"}, node_name="n2"))
    both = pod_affinity(required=[pod_term({"app": "web"}, ZONE), pod_term({"app": "db"}, ZONE)])
    assert c.passing("InterPodAffinity", pod("p", affinity=both)) == set()
    c = cluster(pod("webdb", labels={"app": "web", "tier": "db"}, node_name="n3"))
    both = pod_affinity(required=[pod_term({"app": "web"}, ZONE), pod_term({"tier": "db"}, ZONE)])
    assert c.passing("InterPodAffinity", pod("p", affinity=both)) == {"n3"}


def test_interpod_existing_pods_anti_affinity_is_symmetric():
    """A running pod's required anti-affinity keeps matching pods out of its domain even when
    the incoming pod has no affinity of its own."""
    guard = pod("guard", labels={"app": "guard"}, node_name="n3",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, ZONE)]))
    c = cluster(guard)
    out = c.filter("InterPodAffinity", pod("db", labels={"app": "db"}))
    assert out == {"n1": None, "n2": None, "n3": EXISTING_ANTI, "n4": None}
    assert c.passing("InterPodAffinity", pod("other", labels={"app": "other"})) == ALL
    # hostname-scoped guard on n1: only n1 is closed
    guard = pod("guard", labels={"app": "guard"}, node_name="n1",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, HOST)]))
    assert cluster(guard).passing("InterPodAffinity", pod("db", labels={"app": "db"})) == {"n2", "n3", "n4"}


def test_interpod_filter_order_affinity_then_anti_then_existing():
    """kube checks the pod's affinity, then its anti-affinity, then existing pods'
    anti-affinity, and reports the first that fails: the status code (and so whether
    preemption may help) follows that order."""
    guard = pod("guard", labels={"app": "guard"}, node_name="n1",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, HOST)]))
    c = cluster(guard)
    anti = pod("db", labels={"app": "db"}, affinity=pod_affinity(anti_required=[pod_term({"app": "web"}, HOST)]))
    assert c.filter("InterPodAffinity", anti)["n1"] == ANTI
    lonely = pod("db", labels={"app": "db"}, affinity=pod_affinity(required=[pod_term({"app": "nobody"}, HOST)]))
    assert c.filter("InterPodAffinity", lonely)["n1"] == AFFINITY
    plain = pod("db", labels={"app": "db"})
    assert c.filter("InterPodAffinity", plain)["n1"] == EXISTING_ANTI


def test_interpod_first_pod_of_a_group():
    """No pod anywhere matches the affinity and the pod matches its own term: it may go to any
    node that has the topology label. Not matching itself: nowhere."""
    self_aff = pod_affinity(required=[pod_term({"app": "cache"}, ZONE)])
    c = cluster()
    assert c.passing("InterPodAffinity", pod("c0", labels={"app": "cache"}, affinity=self_aff)) == {"n1", "n2", "n3"}
    assert c.passing("InterPodAffinity", pod("c0", labels={"app": "other"}, affinity=self_aff)) == set()
    # once one member runs, the rest must follow it
    c = cluster(pod("c0", labels={"app": "cache"}, node_name="n3"))
    assert c.passing("InterPodAffinity", pod("c1", labels={"app": "cache"}, affinity=self_aff)) == {"n3"}


def test_interpod_no_terms_anywhere_skips():
    st = cluster().pre_filter("InterPodAffinity", pod("p"))
    assert st is not None and st.code == "Skip"


# --- score ----------------------------------------------------------------------------------

def test_interpod_preferred_affinity_score():
    aff = pod_affinity(preferred=[(5, pod_term({"app": "web"}, HOST))])
    assert cluster().score("InterPodAffinity", pod("p", affinity=aff)) == {"n1": 100, "n2": 0, "n3": 0, "n4": 0}
    aff = pod_affinity(preferred=[(5, pod_term({"app": "web"}, ZONE))])
    assert cluster().score("InterPodAffinity", pod("p", affinity=aff)) == {"n1": 100, "n2": 100, "n3": 0, "n4": 0}


def test_interpod_preferred_anti_affinity_score():
    aff = pod_affinity(anti_preferred=[(5, pod_term({"app": "web"}, ZONE))])
    # raw -5 in z1, 0 elsewhere; normalised between min and max
    assert cluster().score("InterPodAffinity", pod("p", affinity=aff)) == {"n1": 0, "n2": 0, "n3": 100, "n4": 100}


def test_interpod_weights_add_up_and_normalise_between_min_and_max():
    c = cluster(pod("db", labels={"app": "db"}, node_name="n3"), pod("db2", labels={"app": "db"}, node_name="n3"))
    aff = pod_affinity(preferred=[(4, pod_term({"app": "web"}, ZONE)), (3, pod_term({"app": "db"}, HOST))],
                       anti_preferred=[(2, pod_term({"app": "db"}, ZONE))])
    raw = c.score("InterPodAffinity", pod("p", affinity=aff), normalize=False)
    # n1, n2: +4 (web in z1); n3: +3 * 2 db pods - 2 * 2 db pods in z2 = 2; n4: 0
    assert raw == {"n1": 4, "n2": 4, "n3": 2, "n4": 0}
    assert c.score("InterPodAffinity", pod("p", affinity=aff)) == {"n1": 100, "n2": 100, "n3": 50, "n4": 0}


def test_interpod_existing_pods_preferred_terms_score_the_incoming_pod():
    fan = pod("fan", labels={"app": "fan"}, node_name="n3",
              affinity=pod_affinity(preferred=[(7, pod_term({"app": "db"}, ZONE))]))
    hater = pod("hater", labels={"app": "hater"}, node_name="n2",
                affinity=pod_affinity(anti_preferred=[(7, pod_term({"app": "db"}, HOST))]))
    c = cluster(fan, hater)
    raw = c.score("InterPodAffinity", pod("db", labels={"app": "db"}), normalize=False)
    assert raw == {"n1": 0, "n2": -7, "n3": 7, "n4": 0}
    assert c.score("InterPodAffinity", pod("db", labels={"app": "db"})) == {"n1": 50, "n2": 0, "n3": 100, "n4": 50}


def test_interpod_existing_pods_required_affinity_uses_hard_weight():
    follower = pod("follower", labels={"app": "f"}, node_name="n3",
                   affinity=pod_affinity(required=[pod_term({"app": "db"}, HOST)]))
    raw = cluster(follower).score("InterPodAffinity", pod("db", labels={"app": "db"}), normalize=False)
    assert raw == {"n1": 0, "n2": 0, "n3": 1, "n4": 0}          # hardPodAffinityWeight defaults to 1
    cfg = make_config(plugin_config={"InterPodAffinity": {"hardPodAffinityWeight": 10}})
    raw = cluster(follower, cfg=cfg).score("InterPodAffinity", pod("db", labels={"app": "db"}), normalize=False)
    assert raw["n3"] == 10
    cfg = make_config(plugin_config={"InterPodAffinity": {"hardPodAffinityWeight": 0}})
    assert cluster(follower, cfg=cfg).score("InterPodAffinity", pod("db", labels={"app": "db"})) == dict.fromkeys(ALL, 0)


def test_interpod_anti_affinity_spreads_replicas_through_cycles():
    """Whole cycles: replicas with hostname anti-affinity to each other take one node each,
    and the fifth finds none."""
    c = Cluster(nodes())
    anti = pod_affinity(anti_required=[pod_term({"app": "r"}, HOST)])
    used = set()
    for i in range(4):
        p = pod(f"r{i}", labels={"app": "r"}, affinity=anti)
        result = c.schedule(p)
        assert result.scheduled and result.node not in used
        used.add(result.node)
        p["spec"]["nodeName"] = result.node
        c.add_pod(p)
    msg = c.explain(pod("r4", labels={"app": "r"}, affinity=anti))
    assert msg == ("0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules. "
                   "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")


def test_interpod_terminating_pods_still_count():
    """kube counts pods being deleted for inter-pod (anti-)affinity: they still run."""
    leaving = pod("leaving", labels={"app": "db"}, node_name="n3")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    c = cluster(leaving)
    anti = pod("p", affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, HOST)]))
    assert c.passing("InterPodAffinity", anti) == {"n1", "n2", "n4"}
    aff = pod("p", affinity=pod_affinity(required=[pod_term({"app": "db"}, HOST)]))
    assert c.passing("InterPodAffinity", aff) == {"n3"}


def test_interpod_normalisation_uses_kubes_float_arithmetic():
    """kube normalises with float64(100) * (float64(s - min) / float64(max - min)), truncated:
    a raw 29 between 0 and 100 becomes 28 (100 * 0.29 = 28.999999999999996)."""
    c = Cluster(nodes(), [pod("a", labels={"app": "a"}, node_name="n1"), pod("b", labels={"app": "b"}, node_name="n2")])
    aff = pod_affinity(preferred=[(100, pod_term({"app": "a"}, HOST)), (29, pod_term({"app": "b"}, HOST))])
    assert c.score("InterPodAffinity", pod("p", affinity=aff), normalize=False) == {"n1": 100, "n2": 29, "n3": 0, "n4": 0}
    assert c.score("InterPodAffinity", pod("p", affinity=aff)) == {"n1": 100, "n2": 28, "n3": 0, "n4": 0}


def test_interpod_can_ignore_existing_pods_preferred_terms():
    """ignorePreferredTermsOfExistingPods: a pod without preferred terms of its own is not
    scored at all (kube skips the plugin), one with them is scored as usual."""
    fan = pod("fan", labels={"app": "fan"}, node_name="n3",
              affinity=pod_affinity(preferred=[(7, pod_term({"app": "db"}, ZONE))]))
    cfg = make_config(plugin_config={"InterPodAffinity": {"ignorePreferredTermsOfExistingPods": True}})
    assert cluster(fan).score("InterPodAffinity", pod("db", labels={"app": "db"}), normalize=False)["n3"] == 7
    assert cluster(fan, cfg=cfg).score("InterPodAffinity", pod("db", labels={"app": "db"})) == dict.fromkeys(ALL, 0)
    own = pod_affinity(preferred=[(2, pod_term({"app": "fan"}, HOST))])
    raw = cluster(fan, cfg=cfg).score("InterPodAffinity", pod("db", labels={"app": "db"}, affinity=own),
                                      normalize=False)
    assert raw["n3"] == 9  # its own term (2) and the existing pod's term towards it (7)
