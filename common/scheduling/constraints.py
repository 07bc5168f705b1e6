"""Constraints that span nodes, judged for one pod on one node: required inter-pod affinity
and anti-affinity (both directions) and DoNotSchedule topology spread.

The binder checks every decision with them, against its own view plus its reservations, and
`verify` checks the store's final state with them. The rules and messages are the shard's
InterPodAffinity and PodTopologySpread filters' (kube-scheduler's); a property test compares
the two on random clusters. The shard computes them as numpy passes over its node table; here
they run over `ConstraintIndex`, which keeps, for each selector asked about, how many counted
pods it matches on each node and, per topology key (and spread eligibility), per domain
(common.scheduling.domain_sums), updated as pods come and go and nodes change, so a check
costs in proportion to the pods left out (victims) and the distinct domain totals, not to the
nodes holding matching pods (for a large Deployment, the whole cluster). Existing pods'
required anti-affinity is kept grouped (common.scheduling.term_groups): a check matches one
term per group of the groups the pod's labels could match, not every pod with anti-affinity.
"""
from __future__ import annotations

import time
from collections import Counter, OrderedDict

from .accounting import PodAccounting
from .domain_sums import DomainSums, EligibleDomains
from .predicates import (EXISTING_ANTI_AFFINITY, POD_AFFINITY_MISMATCH, POD_ANTI_AFFINITY_MISMATCH,
                         SPREAD_MISMATCH, SPREAD_MISSING_LABEL, node_matches, untolerated_taint)
from .term_groups import REQUIRED_ANTI, LabelFiling, TermIndex, group_key, selector_buckets, term_buckets

INTER_POD_AFFINITY = "InterPodAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
#: Selector counts kept at once; the least recently used is dropped beyond this (and so are
#: per-domain sums and eligible domain sets, each kept to as many).
MAX_COUNTERS = 1024


class ConstraintIndex:
    """Per-node counts of the counted pods matching each selector asked about, their sums
    per topology domain (and the eligible domains) for the checks that read them, and the
    pods with required anti-affinity. Fed with every pod counted on or removed from a node
    and every node added, changed or removed."""

    def __init__(self, nodes):
        #: node name -> record with .node (the parsed Node, or None) and .pods
        self.nodes = nodes
        self._counters: OrderedDict = OrderedDict()  # key -> (predicate, Counter node -> n, buckets)
        #: The counters filed under the label pairs a pod must carry to match: a pod counted
        #: or uncounted is tried only against those its labels could match.
        self._filing = LabelFiling()
        #: pod key -> (pod, node name) of counted pods with required anti-affinity terms
        self.anti: dict[str, tuple] = {}
        #: Their terms, grouped, with each group's count per node.
        self.anti_terms = TermIndex()
        #: The Namespaces' labels for namespaceSelectors (common.model.workloads.Namespaces),
        #: set by a holder that watches them; None: only each namespace's name label.
        self.namespaces = None
        #: eligibility key -> EligibleDomains
        self._domains: OrderedDict = OrderedDict()
        #: (counter key, topology key, eligibility key) -> DomainSums over that counter
        self._sums: OrderedDict = OrderedDict()
        #: counter key -> {sums key: DomainSums} kept over it (moved with its counts)
        self._sums_of: dict = {}
        #: required anti-affinity group key -> DomainSums over its nodes (anti_terms), for
        #: the groups checks asked about; dropped with the group
        self._group_sums: OrderedDict = OrderedDict()
        #: label key -> value -> Counter(node name -> counted pods carrying key=value), for
        #: the keys selectors' buckets have named: a new selector's first count walks the
        #: pods of the nodes holding its pair, not every counted pod (at a million running
        #: pods, 0.1-1 s a Deployment). A key is indexed with one walk when first named.
        self._holders: dict[str, dict[str, Counter]] = {}

    # --- fed by the accounting ---------------------------------------------------------------

    def counted(self, pod, node_name: str) -> None:
        if self._holders:
            self._hold(pod, node_name, 1)
        for key, (predicate, counts, _) in self._filing.candidates(pod).items():
            if predicate(pod):
                counts[node_name] += 1
                self._pods_changed(key, node_name, 1)
        if pod.key in self.anti:
            self._unindex(pod.key)
        if pod.anti_affinity[0]:
            self.anti[pod.key] = (pod, node_name)
            for t in pod.anti_affinity[0]:
                self.anti_terms.add(REQUIRED_ANTI, t, node_name)
                self._group_changed(t, node_name, 1)

    def _unindex(self, key: str) -> None:
        pod, node_name = self.anti.pop(key)
        for t in pod.anti_affinity[0]:
            self.anti_terms.remove(REQUIRED_ANTI, t, node_name)
            self._group_changed(t, node_name, -1)

    def _group_changed(self, term, node_name: str, delta: int) -> None:
        if term.selector is None or not self._group_sums:
            return
        gkey = group_key(REQUIRED_ANTI, term)
        sums = self._group_sums.get(gkey)
        if sums is None:
            return
        if gkey not in self.anti_terms.groups:  # its last pod went: a new group starts afresh
            del self._group_sums[gkey]
            return
        info = self.nodes.get(node_name)
        sums.pods_changed(info.node if info is not None else None, delta)

    def uncounted(self, pod, node_name: str) -> None:
        if self._holders:
            self._hold(pod, node_name, -1)
        for key, (predicate, counts, _) in self._filing.candidates(pod).items():
            if predicate(pod):
                left = counts[node_name] - 1
                if left > 0:
                    counts[node_name] = left
                else:
                    del counts[node_name]
                self._pods_changed(key, node_name, -1)
        if pod.key in self.anti:
            self._unindex(pod.key)

    def _hold(self, pod, node_name: str, delta: int) -> None:
        """Move `pod` in `_holders` under each indexed key it carries."""
        labels = pod.labels
        for k, values in self._holders.items():
            v = labels.get(k)
            if v is None:
                continue
            nodes = values.get(v)
            if nodes is None:
                nodes = values[v] = Counter()
            left = nodes[node_name] + delta
            if left > 0:
                nodes[node_name] = left
            else:
                nodes.pop(node_name, None)
                if not nodes:
                    del values[v]

    def _nodes_holding(self, buckets: tuple) -> set:
        """The nodes holding a counted pod that carries one of `buckets`' label pairs (what
        a pod counted under those buckets must carry), its namespace left to the predicate."""
        names: set = set()
        for _, k, v in buckets:
            values = self._holders.get(k)
            if values is None:
                values = self._holders[k] = {}
                for name, info in self.nodes.items():
                    for p in info.pods.values():
                        pv = p.labels.get(k)
                        if pv is not None:
                            values.setdefault(pv, Counter())[name] += 1
            nodes = values.get(v)
            if nodes:
                names.update(nodes)
        return names

    def _pods_changed(self, counter_key, node_name: str, delta: int) -> None:
        kept = self._sums_of.get(counter_key)
        if kept:
            info = self.nodes.get(node_name)
            node = info.node if info is not None else None
            for sums in kept.values():
                sums.pods_changed(node, delta)

    def node_changed(self, old, new) -> None:
        """A node was added, removed or updated; only labels and taints move domains (and
        the pods on the node with them)."""
        if old is not None and new is not None and old.labels == new.labels and old.taints == new.taints:
            return
        name = (new if new is not None else old).name
        for domains in self._domains.values():
            domains.node_changed(old, new)
        for sums in self._sums.values():
            sums.node_changed(old, new, name)
        for sums in self._group_sums.values():
            sums.node_changed(old, new, name)

    # --- reading -----------------------------------------------------------------------------

    def counts(self, key, predicate, buckets: tuple = ()) -> Counter:
        """node name -> number of counted pods matching `predicate` (cached under `key`).
        `buckets` (term_groups.selector_buckets): label pairs one of which every pod the
        predicate accepts carries; () when there are none to name."""
        entry = self._counters.get(key)
        if entry is not None:
            self._counters.move_to_end(key)
            return entry[1]
        counts: Counter = Counter()
        if buckets:
            for name in self._nodes_holding(buckets):
                info = self.nodes.get(name)
                n = sum(1 for p in info.pods.values() if predicate(p)) if info is not None else 0
                if n:
                    counts[name] = n
        else:
            for name, info in self.nodes.items():
                n = sum(1 for p in info.pods.values() if predicate(p))
                if n:
                    counts[name] = n
        self._keep(key, (predicate, counts, buckets))
        return counts

    def prime(self, specs) -> None:
        """Make the counters `specs` ((key, predicate, buckets) as for `counts`) name that
        are not kept yet in one pass over the counted pods, each pod tried only against those
        its labels could match, rather than one pass over every pod each (what `verify`,
        asking about every Deployment's selector, would otherwise pay: selectors x pods).
        Those already kept become the most recently used."""
        fresh: dict = {}
        filing = LabelFiling()
        for key, predicate, buckets in specs:
            if key in self._counters:
                self._counters.move_to_end(key)
            elif key not in fresh:
                fresh[key] = (predicate, Counter(), buckets)
                filing.file(key, fresh[key], buckets)
        if not fresh:
            return
        for name, info in self.nodes.items():
            for p in info.pods.values():
                for predicate, counts, _ in filing.candidates(p).values():
                    if predicate(p):
                        counts[name] += 1
        for key, entry in fresh.items():
            self._keep(key, entry)

    def _keep(self, key, entry) -> None:
        self._counters[key] = entry
        self._filing.file(key, entry, entry[2])
        if len(self._counters) > MAX_COUNTERS:
            old_key, (_, _, old_buckets) = self._counters.popitem(last=False)
            self._filing.unfile(old_key, old_buckets)
            for sums_key in self._sums_of.pop(old_key, {}):  # no longer moved: dropped too
                del self._sums[sums_key]

    def domain_sums(self, key, predicate, buckets: tuple, topology_key: str,
                    eligible=None, eligible_key=None) -> DomainSums:
        """The counted pods matching `predicate` (the counter `key`, as for `counts`) summed
        per value of `topology_key` over the nodes `eligible(node)` admits (None: every node
        carrying the key), kept under `eligible_key` (what `eligible` depends on) as pods
        are counted and nodes change."""
        counts = self.counts(key, predicate, buckets)
        sums_key = (key, topology_key, eligible_key)
        sums = self._sums.get(sums_key)
        if sums is not None:
            self._sums.move_to_end(sums_key)
            return sums
        sums = self._sums[sums_key] = DomainSums(topology_key, eligible, counts, self.nodes)
        self._sums_of.setdefault(key, {})[sums_key] = sums
        if len(self._sums) > MAX_COUNTERS:
            old_key, _ = self._sums.popitem(last=False)
            kept = self._sums_of[old_key[0]]
            del kept[old_key]
            if not kept:
                del self._sums_of[old_key[0]]
        return sums

    def group_sums(self, gkey, group) -> DomainSums:
        """The pods of required anti-affinity group `group` (anti_terms' under `gkey`) per
        domain of its topology key, kept as its pods and the nodes change."""
        sums = self._group_sums.get(gkey)
        if sums is not None:
            self._group_sums.move_to_end(gkey)
            return sums
        sums = self._group_sums[gkey] = DomainSums(group.topology_key, None, group.nodes, self.nodes)
        if len(self._group_sums) > MAX_COUNTERS:
            self._group_sums.popitem(last=False)
        return sums

    def labels(self, name: str) -> dict | None:
        info = self.nodes.get(name)
        return info.node.labels if info is not None and info.node is not None else None

    def eligible_domains(self, key, topology_key: str, eligible) -> EligibleDomains:
        """Values of `topology_key` among the nodes `eligible(node)` admits, kept under `key`
        (which names the topology key and what `eligible` depends on) as nodes change."""
        domains = self._domains.get(key)
        if domains is not None:
            self._domains.move_to_end(key)
            return domains
        domains = self._domains[key] = EligibleDomains(topology_key, eligible, self.nodes)
        if len(self._domains) > MAX_COUNTERS:
            self._domains.popitem(last=False)
        return domains


class ConstrainedAccounting(PodAccounting):
    """PodAccounting that keeps a ConstraintIndex of its counted pods current."""

    def __init__(self, assume_ttl: float = 30.0, clock=time.monotonic):
        super().__init__(assume_ttl, clock)
        self.constraints = ConstraintIndex(self.nodes)

    def _counted(self, pod, node_name: str) -> None:
        self.constraints.counted(pod, node_name)

    def _uncounted(self, pod, node_name: str) -> None:
        self.constraints.uncounted(pod, node_name)

    def _node_changed(self, old, new) -> None:
        self.constraints.node_changed(old, new)


def _excluded(index: ConstraintIndex, exclude: dict, predicate) -> Counter:
    """node name -> how many of the `exclude`d pods (key -> node) match `predicate`."""
    out: Counter = Counter()
    for key, node_name in exclude.items():
        info = index.nodes.get(node_name)
        pod = info.pods.get(key) if info is not None else None
        if pod is not None and predicate(pod):
            out[node_name] += 1
    return out


def _all_terms(terms, ns):
    return lambda p: all(t.matches(p, ns) for t in terms)


def _affinity_counter(terms, ns) -> tuple:
    """(key, predicate, buckets) of the counter of pods matching every one of `terms`."""
    # a pod matching every term matches the first: its buckets do
    return ("affinity", tuple(t.cache_key(ns) for t in terms)), _all_terms(terms, ns), term_buckets(terms[0])


def _term_counter(t, ns) -> tuple:
    def predicate(p):
        return t.matches(p, ns)
    return ("term", t.cache_key(ns)), predicate, term_buckets(t)


def _spread_counter(pod, c) -> tuple:
    ns, sel = pod.namespace, c.selector

    def predicate(p):
        return p.namespace == ns and not p.deleting and sel.matches(p.labels)
    return ("spread", ns, sel.key), predicate, selector_buckets((ns,), sel)


def _counters_of(index: ConstraintIndex, pod) -> list:
    """The counters the checks of `pod`'s own terms and hard spread constraints read."""
    ns = index.namespaces
    out = [_affinity_counter(pod.affinity[0], ns)] if pod.affinity[0] else []
    out += [_term_counter(t, ns) for t in pod.anti_affinity[0]]
    out += [_spread_counter(pod, c) for c in pod.spread_constraints if c.hard and c.selector is not None]
    return out


def primed(index: ConstraintIndex, pods):
    """`pods` in turn, in batches whose counters (`_counters_of`, at most half MAX_COUNTERS
    selectors a batch, so none is pushed out before its pods are judged) are made together
    by `ConstraintIndex.prime` first: judging every pod of a cluster costs one pass over the
    counted pods per batch, not one per selector."""
    batch: list = []
    specs: dict = {}
    limit = max(1, MAX_COUNTERS // 2)
    for pod in pods:
        mine = {spec[0]: spec for spec in _counters_of(index, pod)}
        if batch and len(specs.keys() | mine.keys()) > limit:
            index.prime(specs.values())
            yield from batch
            batch, specs = [], {}
        batch.append(pod)
        specs.update(mine)
    if batch:
        index.prime(specs.values())
        yield from batch


def inter_pod_affinity_failure(index: ConstraintIndex, pod, node, exclude: dict | None = None,
                               existing: bool = True):
    """(code, message) of the first required inter-pod rule `pod` breaks on `node`, in
    kube's order (its affinity, its anti-affinity, existing pods' anti-affinity, unless not
    `existing`), or None. `exclude`: pod key -> node of counted pods to leave out (victims,
    or the pod itself)."""
    exclude = exclude or {}
    labels, ns = node.labels, index.namespaces
    required_aff, required_anti = pod.affinity[0], pod.anti_affinity[0]
    if required_aff:
        key, predicate, buckets = _affinity_counter(required_aff, ns)
        minus = _excluded(index, exclude, predicate)
        per_term = []
        for t in required_aff:
            sums = index.domain_sums(key, predicate, buckets, t.topology_key)
            per_term.append((t, sums, sums.adjustments(minus, index.nodes)))
        # a matching pod left on some node carrying one of the terms' topology keys
        anywhere = any(sums.total + sum(adjust.values()) > 0 for _, sums, adjust in per_term)
        self_match = predicate(pod)
        for t, sums, adjust in per_term:
            value = labels.get(t.topology_key)
            if value is None or ((anywhere or not self_match) and not sums.count(value, adjust)):
                return "UnschedulableAndUnresolvable", POD_AFFINITY_MISMATCH
    for t in required_anti:
        value = labels.get(t.topology_key)
        if value is None:
            continue
        key, predicate, buckets = _term_counter(t, ns)
        sums = index.domain_sums(key, predicate, buckets, t.topology_key)
        if sums.count(value, sums.adjustments(_excluded(index, exclude, predicate), index.nodes)):
            return "Unschedulable", POD_ANTI_AFFINITY_MISMATCH
    if existing and index.anti:
        # counted pods left out: their groups' counts on their nodes are lowered
        minus: Counter = Counter()
        for key in (exclude.keys() | {pod.key}):
            entry = index.anti.get(key)
            if entry is not None:
                other, where = entry
                for t in other.anti_affinity[0]:
                    minus[(group_key(REQUIRED_ANTI, t), where)] += 1
        for g in index.anti_terms.matching(pod, namespaces=ns):
            value = labels.get(g.topology_key)
            if value is None:
                continue
            gkey = group_key(REQUIRED_ANTI, g.term)
            sums = index.group_sums(gkey, g)
            left_out = Counter({where: n for (k, where), n in minus.items() if k == gkey})
            if sums.count(value, sums.adjustments(left_out, index.nodes) if left_out else None):
                return "Unschedulable", EXISTING_ANTI_AFFINITY
    return None


def _spread_eligibility(pod, hard, c):
    """kube's node inclusion for constraint `c`: every hard constraint's topology label, and
    the pod's node affinity (nodeAffinityPolicy Honor) and taints (nodeTaintsPolicy Honor)."""
    keys = tuple(h.topology_key for h in hard)
    honor_affinity = c.honor_affinity and bool(pod.node_selector or pod.required_node_terms)

    def eligible(node) -> bool:
        labels = node.labels
        if any(k not in labels for k in keys):
            return False
        if honor_affinity and not node_matches(pod, node):
            return False
        return not (c.honor_taints and untolerated_taint(node.taints, pod.tolerations) is not None)

    cache_key = (c.topology_key, keys,
                 (tuple(sorted(pod.node_selector.items())), pod.required_node_terms) if honor_affinity else None,
                 pod.tolerations if c.honor_taints else None)
    return eligible, cache_key


def topology_spread_failure(index: ConstraintIndex, pod, node, exclude: dict | None = None, hard=None):
    """(code, message) of the first DoNotSchedule constraint of `pod` that `node` breaks, or
    None. `exclude` as for inter_pod_affinity_failure; `hard` the constraints to check when not
    the pod's own (its profile's default ones)."""
    hard = [c for c in pod.spread_constraints if c.hard] if hard is None else hard
    exclude = exclude or {}
    for c in hard:
        value = node.labels.get(c.topology_key)
        if value is None:
            return "UnschedulableAndUnresolvable", SPREAD_MISSING_LABEL
        eligible, cache_key = _spread_eligibility(pod, hard, c)
        domains = len(index.eligible_domains(cache_key, c.topology_key, eligible))
        here = lowest = 0
        if c.selector is not None:
            key, predicate, buckets = _spread_counter(pod, c)
            sums = index.domain_sums(key, predicate, buckets, c.topology_key, eligible, cache_key)
            adjust = sums.adjustments(_excluded(index, exclude, predicate), index.nodes)
            here, lowest = sums.count(value, adjust), sums.lowest(domains, adjust)
        if domains < c.min_domains:
            lowest = 0
        self_match = 1 if c.selector is not None and c.selector.matches(pod.labels) else 0
        if here + self_match - lowest > c.max_skew:
            return "Unschedulable", SPREAD_MISMATCH
    return None
