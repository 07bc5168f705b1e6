"""The binder's and verify's cross-node checks (common.scheduling.constraints) against a
brute-force walk over every counted pod, on random clusters that change under the index.

The index keeps per-domain sums (common.scheduling.domain_sums) moved by every pod counted or
uncounted and every node relabelled, retainted, removed or added again; after every few
changes:
* each kept DomainSums and EligibleDomains equals one computed afresh from every counted pod
  and node, and `lowest` with random pods left out equals a minimum over the domains;
* topology_spread_failure (minDomains, nodeAffinityPolicy, nodeTaintsPolicy, several hard
  constraints, victims and the pod itself left out) and the pod's own required affinity and
  anti-affinity in inter_pod_affinity_failure give kube's answer, walked over every pod;
* counters made in one pass for many pods at once (`primed`, as verify judges every pod)
  count what a walk counts.

Seeds are fixed, so a failure names a reproducible case.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from builders import HOST, ZONE, node, pod, pod_affinity, pod_term, spread, toleration
from common.model.objects import parse_node, parse_pod
from common.scheduling import constraints
from common.scheduling.constraints import (ConstrainedAccounting, inter_pod_affinity_failure, primed,
                                           topology_spread_failure)
from common.scheduling.predicates import (POD_AFFINITY_MISMATCH, POD_ANTI_AFFINITY_MISMATCH, SPREAD_MISMATCH,
                                          SPREAD_MISSING_LABEL, node_matches, untolerated_taint)

RACK = "rack"
NAMESPACES = ("default", "other")
KEYS = (ZONE, HOST, RACK)


def random_node(rng, i: int) -> dict:
    labels = {}
    if rng.random() < 0.85:
        labels[ZONE] = rng.choice(["z0", "z1", "z2", "z3"])
    if rng.random() < 0.6:
        labels[RACK] = rng.choice(["r0", "r1"])
    if rng.random() < 0.3:
        labels["pool"] = rng.choice(["a", "b"])
    taints = ["dedicated=infra:NoSchedule"] if rng.random() < 0.25 else ()
    return node(f"n{i}", cpu="64", memory="256Gi", pods="500", labels=labels, taints=taints,
                hostname_label=rng.random() < 0.9)


def random_labels(rng) -> dict:
    labels = {}
    if rng.random() < 0.9:
        labels["app"] = rng.choice("abc")
    if rng.random() < 0.4:
        labels["tier"] = rng.choice("xy")
    return labels


def random_pod(rng, name: str, node_name: str | None = None, **kw) -> dict:
    return pod(name, cpu="10m", ns=rng.choice(NAMESPACES), labels=random_labels(rng), node_name=node_name,
               meta={"deletionTimestamp": "2026-01-01T00:00:00Z"} if rng.random() < 0.05 else None, **kw)


def random_checked_pod(rng, name: str, node_name: str | None = None) -> dict:
    """A pod with hard spread constraints and required (anti-)affinity of its own."""
    extra = {}
    constraints_ = []
    for key in rng.sample(KEYS, rng.randint(1, 2)):
        policies = {}
        if rng.random() < 0.4:
            policies["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            policies["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.4:
            policies["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        constraints_.append(spread(rng.randint(1, 2), key, {"app": rng.choice("abc")}, **policies))
    extra["spread"] = constraints_
    if rng.random() < 0.4:
        extra["node_selector"] = {"pool": rng.choice("ab")}
    if rng.random() < 0.4:
        extra["tolerations"] = [toleration("dedicated", "infra", "NoSchedule")]
    if rng.random() < 0.6:
        terms = [pod_term({"app": rng.choice("abc")}, rng.choice(KEYS)) for _ in range(rng.randint(0, 2))]
        anti = [pod_term({"app": rng.choice("abc")}, rng.choice(KEYS)) for _ in range(rng.randint(0, 2))]
        extra["affinity"] = pod_affinity(required=terms, anti_required=anti) or None
    return random_pod(rng, name, node_name, **extra)


class World:
    """One random cluster fed to the binder's accounting."""

    def __init__(self, rng):
        self.rng = rng
        self.acc = ConstrainedAccounting()
        self.node_docs = {}
        for i in range(rng.randint(2, 12)):
            self.set_node(i)
        self.pods: dict[str, dict] = {}  # name -> doc of the bound pods
        self.assumed: set[str] = set()
        self.serial = 0

    def set_node(self, i: int) -> None:
        d = random_node(self.rng, i)
        self.node_docs[d["metadata"]["name"]] = d
        self.acc.set_node(parse_node(d))

    def step(self) -> None:
        rng, acc = self.rng, self.acc
        names = list(self.node_docs)
        r = rng.random()
        if r < 0.4 or not self.pods:  # bound, some with constraints of their own
            self.serial += 1
            make = random_checked_pod if rng.random() < 0.3 else random_pod
            d = make(rng, f"e{self.serial}", rng.choice(names))
            self.pods[d["metadata"]["name"]] = d
            acc.set_pod(parse_pod(d))
        elif r < 0.5:  # deleted
            d = self.pods.pop(rng.choice(sorted(self.pods)))
            acc.remove_pod(f"{d['metadata']['namespace']}/{d['metadata']['name']}")
        elif r < 0.6:  # relabelled
            d = self.pods[rng.choice(sorted(self.pods))]
            d["metadata"]["labels"] = random_labels(rng)
            acc.set_pod(parse_pod(d))
        elif r < 0.65:  # bound elsewhere
            d = self.pods[rng.choice(sorted(self.pods))]
            d["spec"]["nodeName"] = rng.choice(names)
            acc.set_pod(parse_pod(d))
        elif r < 0.75:  # assumed
            self.serial += 1
            p = parse_pod(random_pod(rng, f"a{self.serial}"))
            acc.assume(p, rng.choice(names))
            self.assumed.add(p.key)
        elif r < 0.82 and self.assumed:  # forgotten
            key = rng.choice(sorted(self.assumed))
            self.assumed.discard(key)
            acc.forget(key)
        elif r < 0.93:  # a node relabelled or retainted (or added again)
            self.set_node(rng.randint(0, len(names) + 1))
        elif len(names) > 1:  # a node removed; its pods stay bound to it, uncounted by domain
            name = rng.choice(names)
            del self.node_docs[name]
            acc.remove_node(name)

    def where_pods(self) -> list:
        return [(p, self.acc.pod_node[p.key]) for p in self.acc.counted_pods()]


# --- the brute-force walks ---------------------------------------------------------------------

def eligible_nodes(acc, pod, hard, c) -> list:
    """kube's node inclusion for spread constraint `c`: every hard constraint's key, and the
    pod's node affinity and taints as the policies say."""
    out = []
    for info in acc.live_nodes():
        n = info.node
        if any(h.topology_key not in n.labels for h in hard):
            continue
        if c.honor_affinity and not node_matches(pod, n):
            continue
        if c.honor_taints and untolerated_taint(n.taints, pod.tolerations) is not None:
            continue
        out.append(n)
    return out


def walk_spread(acc, pod, node, exclude: dict):
    hard = [c for c in pod.spread_constraints if c.hard]
    for c in hard:
        value = node.labels.get(c.topology_key)
        if value is None:
            return "UnschedulableAndUnresolvable", SPREAD_MISSING_LABEL
        sums = {}
        for n in eligible_nodes(acc, pod, hard, c):
            d = n.labels[c.topology_key]
            sums[d] = sums.get(d, 0) + sum(
                1 for p in acc.nodes[n.name].pods.values()
                if p.key not in exclude and p.namespace == pod.namespace and not p.deleting
                and c.selector.matches(p.labels))
        lowest = min(sums.values(), default=0) if len(sums) >= c.min_domains else 0
        self_match = 1 if c.selector.matches(pod.labels) else 0
        if sums.get(value, 0) + self_match - lowest > c.max_skew:
            return "Unschedulable", SPREAD_MISMATCH
    return None


def walk_own_terms(acc, pod, node, exclude: dict):
    """The pod's own required affinity, then anti-affinity (kube's order), walked."""
    live = [(p, acc.nodes[where].node) for p, where in
            ((p, acc.pod_node[p.key]) for p in acc.counted_pods())
            if p.key not in exclude and acc.nodes[where].node is not None]
    terms = pod.affinity[0]
    if terms:
        matching = [(p, n) for p, n in live if all(t.matches(p) for t in terms)]
        anywhere = any(t.topology_key in n.labels for t in terms for _, n in matching)
        self_match = all(t.matches(pod) for t in terms)
        for t in terms:
            value = node.labels.get(t.topology_key)
            here = any(n.labels.get(t.topology_key) == value for _, n in matching)
            if value is None or ((anywhere or not self_match) and not here):
                return "UnschedulableAndUnresolvable", POD_AFFINITY_MISMATCH
    for t in pod.anti_affinity[0]:
        value = node.labels.get(t.topology_key)
        if value is not None and any(t.matches(p) and n.labels.get(t.topology_key) == value for p, n in live):
            return "Unschedulable", POD_ANTI_AFFINITY_MISMATCH
    return None


def fresh_sums(acc, sums) -> dict:
    """A DomainSums' sums computed afresh over every counted pod."""
    predicate, counts, _ = acc.constraints._counters[next(k for k, kept in acc.constraints._sums_of.items()
                                                         if any(s is sums for s in kept.values()))]
    out: dict = {}
    for p, where in ((p, acc.pod_node[p.key]) for p in acc.counted_pods()):
        n = acc.nodes[where].node
        if n is None or sums.topology_key not in n.labels or not predicate(p):
            continue
        if sums.eligible is not None and not sums.eligible(n):
            continue
        d = n.labels[sums.topology_key]
        out[d] = out.get(d, 0) + 1
    return out


# --- the tests ---------------------------------------------------------------------------------

def check_kept(acc, rng) -> None:
    """Every kept sum and domain set equals its fresh computation; `lowest` with random
    matching pods left out equals the minimum taken by hand."""
    index = acc.constraints
    for key, (predicate, counts, _) in index._counters.items():
        assert counts == Counter(acc.pod_node[p.key] for p in acc.counted_pods() if predicate(p)), key
    assert len(index._sums) <= constraints.MAX_COUNTERS
    assert {k for kept in index._sums_of.values() for k in kept} == set(index._sums)
    for (counter_key, _, _), sums in index._sums.items():
        assert counter_key in index._counters
        expected = fresh_sums(acc, sums)
        assert sums.sums == expected
        assert sums.levels == Counter(expected.values())
        assert sums.total == sum(expected.values())
        minus = Counter({n: rng.randint(0, c) for n, c in sums.counts.items() if rng.random() < 0.3})
        adjust = sums.adjustments(minus, acc.nodes)
        left = {d: n + adjust.get(d, 0) for d, n in expected.items()}
        for domains in range(len(left), len(left) + 3):  # domains without a matching pod hold 0
            want = min(list(left.values()) + [0] * (domains - len(left)), default=0)
            assert sums.lowest(domains, adjust) == want
    for key, domains in index._domains.items():
        expected = Counter(n.labels[domains.topology_key] for n in (info.node for info in acc.live_nodes())
                           if domains.topology_key in n.labels and domains.eligible(n))
        assert domains.nodes == expected, key


@pytest.mark.parametrize("seed", range(80))
def test_checks_agree_with_a_walk_over_the_pods(seed, monkeypatch):
    rng = random.Random(5000 + seed)
    if rng.random() < 0.3:  # counters, sums and domain sets pushed out of their LRUs
        monkeypatch.setattr(constraints, "MAX_COUNTERS", rng.randint(1, 4))
    w = World(rng)
    acc = w.acc
    for round_ in range(10):
        for _ in range(rng.randint(1, 8)):
            w.step()
        where_pods = w.where_pods()
        for k in range(3):
            incoming = parse_pod(random_checked_pod(rng, f"p{round_}-{k}"))
            exclude = {p.key: n for p, n in where_pods if rng.random() < 0.15}
            for info in list(acc.live_nodes()):
                got = topology_spread_failure(acc.constraints, incoming, info.node, exclude)
                assert got == walk_spread(acc, incoming, info.node, exclude), (seed, info.name)
                got = inter_pod_affinity_failure(acc.constraints, incoming, info.node, exclude, existing=False)
                assert got == walk_own_terms(acc, incoming, info.node, exclude), (seed, info.name)
        # verify's form: a counted pod judged on its own node, itself left out, sometimes with
        # the counters of many made at once
        judged = [p for p, where in where_pods if acc.nodes[where].node is not None]
        for p in primed(acc.constraints, judged) if rng.random() < 0.5 else judged:
            where = acc.pod_node[p.key]
            alone, node_ = {p.key: where}, acc.nodes[where].node
            assert topology_spread_failure(acc.constraints, p, node_, alone) == walk_spread(acc, p, node_, alone)
            assert inter_pod_affinity_failure(acc.constraints, p, node_, alone, existing=False) == \
                walk_own_terms(acc, p, node_, alone)
        check_kept(acc, rng)


def test_a_node_relabelled_moves_its_pods_between_domains():
    """Five matching pods on n0 in zone z0; n0 moves to z1: the spread now sees z1 full."""
    acc = ConstrainedAccounting()
    for i, zone in enumerate(("z0", "z1")):
        acc.set_node(parse_node(node(f"n{i}", labels={ZONE: zone})))
    for i in range(5):
        acc.set_pod(parse_pod(pod(f"w{i}", labels={"app": "a"}, node_name="n0")))
    incoming = parse_pod(pod("new", labels={"app": "a"}, spread=[spread(1, ZONE, {"app": "a"})]))
    n0, n1 = (acc.nodes[n].node for n in ("n0", "n1"))
    assert topology_spread_failure(acc.constraints, incoming, n1) is None
    assert topology_spread_failure(acc.constraints, incoming, n0) == ("Unschedulable", SPREAD_MISMATCH)
    acc.set_node(parse_node(node("n0", labels={ZONE: "z1"})))
    # both nodes in z1 now: one domain, which holds the five (skew 5 + 1 - 5 = 1)
    assert topology_spread_failure(acc.constraints, incoming, acc.nodes["n1"].node) is None
    acc.set_node(parse_node(node("n2", labels={ZONE: "z2"})))
    assert topology_spread_failure(acc.constraints, incoming, acc.nodes["n1"].node) == \
        ("Unschedulable", SPREAD_MISMATCH)
    assert topology_spread_failure(acc.constraints, incoming, acc.nodes["n2"].node) is None


def test_a_new_selector_is_counted_over_the_nodes_holding_its_label_pair():
    """The first check of a Deployment's selector counts only the pods on nodes that hold a
    pod carrying the label pair the selector requires, once the label key is indexed (the
    first selector over the key pays one walk): not every running pod of the cluster each
    time a new selector is asked about. The counts are those of a full walk, and follow pods
    counted and uncounted after the key was indexed."""
    acc = ConstrainedAccounting()
    for i in range(50):
        acc.set_node(parse_node(node(f"n{i}", labels={ZONE: f"z{i % 3}"})))
    for i in range(50):
        for j in range(10):
            acc.set_pod(parse_pod(pod(f"o{i}-{j}", labels={"app": f"other{j}"}, node_name=f"n{i}")))
    for i in (3, 7):
        acc.set_pod(parse_pod(pod(f"w{i}", labels={"app": "web"}, node_name=f"n{i}")))
    index = acc.constraints
    asked = []

    def selector(app):
        def predicate(p):
            asked.append(p.key)
            return p.namespace == "default" and p.labels.get("app") == app
        return predicate

    index.counts(("first", "other0"), selector("other0"), (("default", "app", "other0"),))
    asked.clear()
    counts = index.counts(("first", "web"), selector("web"), (("default", "app", "web"),))
    assert counts == Counter({"n3": 1, "n7": 1})
    assert len(asked) <= 2 * 11  # the pods of n3 and n7, not the 502 of the cluster
    acc.set_pod(parse_pod(pod("w9", labels={"app": "web"}, node_name="n9")))
    acc.remove_pod("default/w3")
    asked.clear()
    counts = index.counts(("second", "web"), selector("web"), (("default", "app", "web"),))
    assert counts == Counter({"n7": 1, "n9": 1})
    assert len(asked) <= 2 * 11
    assert index.counts(("any", "web"), lambda p: p.labels.get("app") == "web") == counts  # no buckets: a walk
