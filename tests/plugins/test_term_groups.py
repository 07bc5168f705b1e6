"""Existing pods' (anti-)affinity terms, grouped (common.scheduling.term_groups), against a
brute-force walk over every counted pod, on random clusters that change under the index.

The shard's node table and the binder's ConstraintIndex keep the groups up to date as pods
are added, removed, relabelled, moved, assumed and forgotten, and as nodes are relabelled
and removed; after every few changes:
* the node table's index equals one built afresh from its rows (NodeTable.check);
* InterPodAffinity's filter (existing pods' required anti-affinity) and raw score (existing
  pods' required affinity x hardPodAffinityWeight and preferred terms) agree with a walk over
  every pod on every node, also after preemption's dry-run removal of victims;
* the binder's inter_pod_affinity_failure agrees with the same walk over its counted pods,
  with random pods left out (victims).

Seeds are fixed, so a failure names a reproducible case.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from builders import HOST, ZONE, Cluster, node, pod
from common.model.objects import parse_node, parse_pod
from common.scheduling.constraints import ConstrainedAccounting, inter_pod_affinity_failure
from common.scheduling.predicates import EXISTING_ANTI_AFFINITY
from common.scheduling.term_groups import TermIndex
from shard.framework import SKIP, CycleState

RACK = "rack"
NAMESPACES = ("default", "other", "kube")
EXISTING_ANTI = ("Unschedulable", EXISTING_ANTI_AFFINITY)


def random_node(rng, i, hostname=True):
    labels = {}
    if rng.random() < 0.85:
        labels[ZONE] = rng.choice(["z0", "z1", "z2"])
    if rng.random() < 0.6:
        labels[RACK] = rng.choice(["r0", "r1"])
    return node(f"n{i}", cpu="64", memory="256Gi", pods="500", labels=labels, hostname_label=hostname)


def random_labels(rng) -> dict:
    labels = {}
    if rng.random() < 0.9:
        labels["app"] = rng.choice("abc")
    if rng.random() < 0.5:
        labels["tier"] = rng.choice("xy")
    return labels


def random_term(rng) -> dict:
    r = rng.random()
    if r < 0.35:
        sel = {"matchLabels": {"app": rng.choice("abc")}}
    elif r < 0.5:
        sel = {"matchLabels": {"app": rng.choice("abc"), "tier": rng.choice("xy")}}
    elif r < 0.6:
        sel = {"matchExpressions": [{"key": "app", "operator": "In", "values": rng.sample("abc", 2)}]}
    elif r < 0.68:
        sel = {"matchExpressions": [{"key": "tier", "operator": rng.choice(["Exists", "DoesNotExist"])}]}
    elif r < 0.75:
        sel = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}
    elif r < 0.82:
        sel = {}  # every pod (of the namespaces)
    else:
        sel = None  # no labelSelector: no pod
    t: dict = {"topologyKey": rng.choice([ZONE, HOST, RACK])}
    if sel is not None:
        t["labelSelector"] = sel
    r = rng.random()
    if r < 0.15:
        t["namespaces"] = rng.sample(NAMESPACES, 2)
    elif r < 0.25:
        t["namespaceSelector"] = {}
    elif r < 0.32:
        t["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": rng.choice(NAMESPACES)}}
    return t


def random_affinity(rng) -> dict | None:
    out: dict = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section: dict = {}
        if rng.random() < 0.4:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.3:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": random_term(rng)} for _ in range(rng.randint(1, 2))]
        if section:
            out[kind] = section
    return out or None


def random_pod(rng, name, node_name=None, terms=True):
    return pod(name, cpu="10m", ns=rng.choice(NAMESPACES), labels=random_labels(rng), node_name=node_name,
               affinity=random_affinity(rng) if terms and rng.random() < 0.7 else None,
               meta={"deletionTimestamp": "2026-01-01T00:00:00Z"} if rng.random() < 0.05 else None)


# --- the brute-force walks ---------------------------------------------------------------------

def walk_blocked(nodes: dict, where_pods, incoming, skip=()) -> set:
    """Nodes (name -> labels) that some counted pod's required anti-affinity closes to
    `incoming`: a walk over every pod (where_pods: (pod, node name) pairs)."""
    blocked = set()
    for other, where in where_pods:
        if other.key in skip or where not in nodes:
            continue
        for t in other.anti_affinity[0]:
            value = nodes[where].get(t.topology_key)
            if value is None or not t.matches(incoming):
                continue
            blocked |= {n for n, labels in nodes.items() if labels.get(t.topology_key) == value}
    return blocked


def walk_score(nodes: dict, where_pods, incoming, hard_weight: int) -> dict:
    """Per node, the raw score existing pods' terms give `incoming` (kube's
    processExistingPod: required affinity x hardPodAffinityWeight, preferred +/- weight)."""
    scores = dict.fromkeys(nodes, 0)
    for other, where in where_pods:
        if where not in nodes:
            continue
        terms = [(hard_weight, t) for t in other.affinity[0]] + list(other.affinity[1]) + \
            [(-w, t) for w, t in other.anti_affinity[1]]
        for w, t in terms:
            value = nodes[where].get(t.topology_key)
            if value is None or not w or not t.matches(incoming):
                continue
            for n, labels in nodes.items():
                if labels.get(t.topology_key) == value:
                    scores[n] += w
    return scores


# --- the shard ---------------------------------------------------------------------------------

class World:
    """One random cluster fed to the shard's cache and the binder's accounting alike."""

    def __init__(self, rng, hard_weight):
        from builders import make_config
        self.rng = rng
        cfg = make_config(plugin_config={"InterPodAffinity": {"hardPodAffinityWeight": hard_weight}})
        self.node_docs = {}
        for i in range(rng.randint(2, 14)):
            d = random_node(rng, i, hostname=rng.random() < 0.9)
            self.node_docs[d["metadata"]["name"]] = d
        self.c = Cluster(list(self.node_docs.values()), cfg=cfg)
        self.acc = ConstrainedAccounting()
        for d in self.node_docs.values():
            self.acc.set_node(parse_node(d))
        self.pods: dict[str, dict] = {}  # name -> doc of the pods the store holds bound
        self.assumed: set[str] = set()
        self.serial = 0

    def both(self, fn) -> None:
        fn(self.c.cache)
        fn(self.acc)

    def step(self) -> None:
        rng = self.rng
        names = list(self.node_docs)
        r = rng.random()
        if r < 0.4 or not self.pods:  # a new bound pod
            self.serial += 1
            d = random_pod(rng, f"e{self.serial}", rng.choice(names))
            self.pods[d["metadata"]["name"]] = d
            p = parse_pod(d)
            self.both(lambda acc: acc.set_pod(p))
        elif r < 0.5:  # deleted
            name = rng.choice(list(self.pods))
            d = self.pods.pop(name)
            key = f"{d['metadata']['namespace']}/{name}"
            self.both(lambda acc: acc.remove_pod(key))
        elif r < 0.6:  # relabelled
            d = self.pods[rng.choice(list(self.pods))]
            d["metadata"]["labels"] = random_labels(rng)
            p = parse_pod(d)
            self.both(lambda acc: acc.set_pod(p))
        elif r < 0.65:  # bound elsewhere (a recreated pod of the same name)
            d = self.pods[rng.choice(list(self.pods))]
            d["spec"]["nodeName"] = rng.choice(names)
            p = parse_pod(d)
            self.both(lambda acc: acc.set_pod(p))
        elif r < 0.78:  # assumed (a decision in flight), then maybe forgotten or confirmed
            self.serial += 1
            d = random_pod(rng, f"a{self.serial}")
            p = parse_pod(d)
            where = rng.choice(names)
            self.both(lambda acc: acc.assume(p, where))
            self.assumed.add(p.key)
        elif r < 0.88 and self.assumed:
            key = rng.choice(sorted(self.assumed))
            self.assumed.discard(key)
            self.both(lambda acc: acc.forget(key))
        elif r < 0.95:  # a node relabelled
            name = rng.choice(names)
            fresh = random_node(rng, int(name[1:]), hostname=rng.random() < 0.9)
            self.node_docs[name] = fresh
            n = parse_node(fresh)
            self.both(lambda acc: acc.set_node(n))
        elif len(names) > 1:  # a node removed (its pods stay bound to it, uncounted by the table)
            name = rng.choice(names)
            del self.node_docs[name]
            self.both(lambda acc: acc.remove_node(name))

    # what the shard's table sees: live nodes and the pods on them
    def table_view(self):
        table = self.c.table
        nodes = {name: info.node.labels for name, info in zip(table.names, table.infos)}
        where_pods = [(p, name) for name, info in zip(table.names, table.infos) for p in info.pods.values()]
        return nodes, where_pods


@pytest.mark.parametrize("seed", range(60))
def test_shard_index_agrees_with_a_walk_over_the_pods(seed):
    rng = random.Random(seed)
    hard_weight = rng.choice([0, 1, 5])
    w = World(rng, hard_weight)
    plugin = w.c.plugin("InterPodAffinity")
    for _ in range(8):
        for _ in range(rng.randint(1, 8)):
            w.step()
        w.c.sched.refresh()
        table = w.c.table
        table.check()  # the grouped terms equal a fresh index of the rows' pods
        nodes, where_pods = w.table_view()
        for k in range(4):
            incoming = parse_pod(random_pod(rng, f"p{k}", terms=False))
            # filter: only existing pods' anti-affinity can refuse a pod without terms
            blocked = walk_blocked(nodes, where_pods, incoming)
            out = w.c.filter("InterPodAffinity", random_pod_doc(incoming))
            assert {n for n, o in out.items() if o is not None} == blocked
            assert all(o == EXISTING_ANTI for o in out.values() if o is not None)
            # score: raw sums of existing pods' terms
            expected = walk_score(nodes, where_pods, incoming, hard_weight)
            got = w.c.score("InterPodAffinity", random_pod_doc(incoming), normalize=False)
            assert got == expected
            # preemption's dry run: victims removed from their nodes' copies
            state = CycleState()
            st = plugin.pre_filter(state, incoming)
            if st is not None and st.code == SKIP:
                assert not blocked
                continue
            victims = [(p, n) for p, n in where_pods if rng.random() < 0.3]
            for p, n in victims:
                plugin.remove_pod(state, incoming, p, table.infos[table.row_of[n]])
            gone = {p.key for p, _ in victims}
            blocked = walk_blocked(nodes, where_pods, incoming, skip=gone)
            rows = np.arange(len(table))
            ok = plugin.filter_vec(state, incoming, table, rows)
            assert {table.names[r] for r in rows if not ok[r]} == blocked
            per_node = {nm for nm in table.names if plugin.filter(state, incoming, table.infos[table.row_of[nm]])}
            assert per_node == blocked


def random_pod_doc(p) -> dict:
    """The manifest of a parsed pod without terms (Cluster.filter/score parse their own)."""
    return pod(p.name, cpu="10m", ns=p.namespace, labels=dict(p.labels))


# --- the binder --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(60))
def test_binder_index_agrees_with_a_walk_over_the_pods(seed):
    rng = random.Random(1000 + seed)
    w = World(rng, 1)
    acc = w.acc
    for _ in range(8):
        for _ in range(rng.randint(1, 8)):
            w.step()
        fresh = TermIndex()
        for key, (p, where) in acc.constraints.anti.items():
            assert acc.pod_node.get(key) == where
            for t in p.anti_affinity[0]:
                fresh.add("anti", t, where)
        assert {k: g.nodes for k, g in fresh.groups.items()} == \
            {k: g.nodes for k, g in acc.constraints.anti_terms.groups.items()}
        nodes = {info.name: info.node.labels for info in acc.live_nodes()}
        where_pods = [(p, acc.pod_node[p.key]) for p in acc.counted_pods()]
        for k in range(4):
            incoming = parse_pod(random_pod(rng, f"p{k}", terms=False))
            if rng.random() < 0.2 and where_pods:  # a counted pod judged again (itself left out)
                incoming = rng.choice(where_pods)[0]
            exclude = {p.key: n for p, n in where_pods if rng.random() < 0.2}
            blocked = walk_blocked(nodes, where_pods, incoming, skip=set(exclude) | {incoming.key})
            for info in acc.live_nodes():
                failure = inter_pod_affinity_failure(acc.constraints, incoming, info.node, exclude)
                if incoming.affinity[0] or incoming.anti_affinity[0]:
                    # its own terms come first; only the existing pods' rule is compared
                    if failure is not None and failure[1] != EXISTING_ANTI_AFFINITY:
                        continue
                    failure = inter_pod_affinity_failure(acc.constraints, _bare(incoming), info.node, exclude)
                assert (failure == EXISTING_ANTI) == (info.name in blocked), (info.name, failure)
                assert failure is None or failure == EXISTING_ANTI


def _bare(p):
    """`p` without terms of its own (same key, namespace and labels)."""
    import copy
    q = copy.copy(p)
    q.shared = copy.copy(p.shared)  # (shared with the pods of its spec: changed on a copy)
    q.shared.affinity = ((), ())
    q.shared.anti_affinity = ((), ())
    return q


# --- the node table's pod counts, pushed out of the dense cache and back -----------------------

SELECTORS = {
    ("app", "a"): lambda p: p.labels.get("app") == "a",
    ("app", "b"): lambda p: p.labels.get("app") == "b",
    ("tier", "x"): lambda p: p.labels.get("tier") == "x",
    ("ns", "other"): lambda p: p.namespace == "other",
    ("all",): lambda p: True,
}


@pytest.mark.parametrize("seed", range(40))
def test_pod_counts_pushed_out_of_the_dense_cache_stay_exact(seed, monkeypatch):
    """With room for two dense columns (and sometimes almost no sparse entries), selectors
    asked in random turns between random changes count what a walk over the rows counts."""
    import shard.node_table as nt
    rng = random.Random(2000 + seed)
    monkeypatch.setattr(nt, "MAX_CACHED_SELECTORS", 2)
    if rng.random() < 0.3:
        monkeypatch.setattr(nt, "MAX_SPARSE_ENTRIES", rng.randint(1, 12))
    w = World(rng, 1)
    for _ in range(12):
        for _ in range(rng.randint(0, 5)):
            w.step()
        w.c.sched.refresh()
        table = w.c.table
        if rng.random() < 0.2:
            order = list(table.names)
            rng.shuffle(order)
            table.reorder(order)
        for key in rng.sample(list(SELECTORS), rng.randint(1, len(SELECTORS))):
            predicate = SELECTORS[key]
            got = table.pod_counts(key, predicate)
            expected = [sum(1 for p in info.pods.values() if predicate(p)) for info in table.infos]
            assert got.tolist() == expected, key
        assert table._sparse_entries == sum(s.size for s in table._sparse.values())
        assert not (table._counts.keys() & table._sparse.keys())


# --- the binder's selector counters, filed by label pair ---------------------------------------

def random_constrained_pod(rng, name):
    """A pending pod with terms and hard spread of its own (its checks create counters)."""
    d = random_pod(rng, name, terms=True)
    if rng.random() < 0.6:
        sel = random_term(rng).get("labelSelector")
        if sel is not None:
            d["spec"]["topologySpreadConstraints"] = [{
                "maxSkew": 1, "topologyKey": rng.choice([ZONE, HOST, RACK]), "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": sel}]
    return parse_pod(d)


@pytest.mark.parametrize("seed", range(40))
def test_binder_counters_filed_by_label_pair_count_every_matching_pod(seed, monkeypatch):
    """Counters made by checks at random moments (and some pushed out of the LRU) stay equal
    to a count over every counted pod while pods come, go, change labels and move."""
    import common.scheduling.constraints as constraints
    from common.scheduling.constraints import topology_spread_failure
    rng = random.Random(3000 + seed)
    if rng.random() < 0.3:
        monkeypatch.setattr(constraints, "MAX_COUNTERS", rng.randint(1, 4))
    w = World(rng, 1)
    acc = w.acc
    for round_ in range(10):
        for _ in range(rng.randint(0, 6)):
            w.step()
        live = list(acc.live_nodes())
        for k in range(rng.randint(0, 3)):
            p = random_constrained_pod(rng, f"c{round_}-{k}")
            info = rng.choice(live)
            inter_pod_affinity_failure(acc.constraints, p, info.node)
            topology_spread_failure(acc.constraints, p, info.node)
        index = acc.constraints
        assert len(index._counters) <= constraints.MAX_COUNTERS
        for key, (predicate, counts, _) in index._counters.items():
            expected = {}
            for p in acc.counted_pods():
                if predicate(p):
                    where = acc.pod_node[p.key]
                    expected[where] = expected.get(where, 0) + 1
            assert dict(counts) == expected, key
