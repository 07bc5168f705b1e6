"""Existing pods' inter-pod affinity terms, grouped so that a cycle looks only at the terms
that could match the incoming pod.

kube-scheduler's PreFilter walks every existing pod that has affinity terms
(HavePodsWithRequiredAntiAffinityList) and matches each of its terms against the incoming
pod: O(existing pods with terms) per cycle. Here the terms are grouped by what decides a
match and where it applies, `(kind, namespaces, namespaceSelector, labelSelector,
topologyKey)`: a Deployment's replicas share one group, and a group keeps, per node, how many
of its pods (or their summed weights) are there, updated as pods come and go. A cycle then
matches one term per group, and only of the groups that could match at all: a group is
filed under one `(namespace, label key, label value)` its term requires (a matchLabels pair,
or each value of an `In` expression; the namespace is None when the term's namespaces are
not a fixed list), so the candidates for a pod come from its own labels. Groups whose
selector requires no particular label value are always candidates. Matching each candidate's
term against the pod stays exact, so the answer is the one a walk over the pods would give.

Both the shard (its node table, over the snapshot's rows) and the binder (its
ConstraintIndex, over its counted pods and reservations) keep one. The filing itself
(LabelFiling) also serves the binder's selector counters: a pod counted or uncounted is
tried only against the counters its labels could concern.
"""
from __future__ import annotations

#: Kinds of terms (a group holds terms of one kind).
REQUIRED_ANTI, REQUIRED_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI = "anti", "affinity", "pref", "pref-anti"


def group_key(kind: str, term) -> tuple:
    """The key of the group `term` of `kind` belongs to."""
    return (kind, term.key, term.topology_key)


class TermGroup:
    """Terms of one kind that match the same pods in the same topology: `term` stands for
    them all; `nodes` maps node name -> count (required kinds) or summed weight (preferred)."""

    __slots__ = ("kind", "term", "topology_key", "nodes", "buckets")

    def __init__(self, kind: str, term, buckets: tuple):
        self.kind = kind
        self.term = term
        self.topology_key = term.topology_key
        self.nodes: dict[str, int] = {}
        self.buckets = buckets

    def __repr__(self) -> str:
        return f"TermGroup({self.kind}, {self.term.key!r}, {self.topology_key}, {len(self.nodes)} nodes)"


def selector_buckets(namespaces, selector) -> tuple:
    """The (namespace or None, label key, label value) keys under which to file something
    only pods matching `selector` (a LabelSelector) in `namespaces` (names; None: any) can
    concern: a pod it concerns carries one of them (with its own namespace, or None). ()
    when the selector requires no particular value, or matches nothing (None)."""
    if selector is None:
        return ()
    namespaces = (None,) if namespaces is None else tuple(sorted(namespaces))
    if selector.match_labels:
        pairs = (min(selector.match_labels.items()),)
    else:
        pairs = ()
        for key, op, values in selector.expressions:
            if op == "In":
                pairs = tuple((key, v) for v in sorted(values))
                break
    return tuple((ns, k, v) for ns in namespaces for k, v in pairs)


def term_buckets(term) -> tuple:
    """selector_buckets of an affinity term: its namespaces are a fixed list unless it has a
    namespaceSelector or selects every namespace."""
    fixed = term.namespaces is not None and term.namespace_selector is None
    return selector_buckets(term.namespaces if fixed else None, term.selector)


class LabelFiling:
    """Items filed under label pairs (selector_buckets), looked up by a pod's labels."""

    __slots__ = ("_filed", "_always")

    def __init__(self):
        self._filed: dict[tuple, dict] = {}  # bucket -> key -> item
        self._always: dict = {}  # key -> item, a candidate for every pod

    def file(self, key, item, buckets: tuple) -> None:
        if buckets:
            for b in buckets:
                self._filed.setdefault(b, {})[key] = item
        else:
            self._always[key] = item

    def unfile(self, key, buckets: tuple) -> None:
        if buckets:
            for b in buckets:
                filed = self._filed[b]
                del filed[key]
                if not filed:
                    del self._filed[b]
        else:
            del self._always[key]

    def candidates(self, pod) -> dict:
        """key -> item of every item filed under a pair `pod` carries, or under none."""
        found = dict(self._always)
        filed = self._filed
        if filed:
            ns = pod.namespace
            for k, v in pod.labels.items():
                b = filed.get((ns, k, v))
                if b:
                    found.update(b)
                b = filed.get((None, k, v))
                if b:
                    found.update(b)
        return found


class TermIndex:
    """The groups of every indexed term, filed for lookup by the labels of a pod."""

    __slots__ = ("groups", "_filing")

    def __init__(self):
        #: (kind, term key, topology key) -> TermGroup
        self.groups: dict[tuple, TermGroup] = {}
        self._filing = LabelFiling()

    def __len__(self) -> int:
        return len(self.groups)

    # --- feeding ------------------------------------------------------------------------------

    def add(self, kind: str, term, node: str, weight: int = 1) -> None:
        if term.selector is None:  # matches no pod
            return
        gkey = group_key(kind, term)
        group = self.groups.get(gkey)
        if group is None:
            group = self.groups[gkey] = TermGroup(kind, term, term_buckets(term))
            self._filing.file(gkey, group, group.buckets)
        group.nodes[node] = group.nodes.get(node, 0) + weight

    def remove(self, kind: str, term, node: str, weight: int = 1) -> None:
        if term.selector is None:
            return
        gkey = group_key(kind, term)
        group = self.groups.get(gkey)
        if group is None or node not in group.nodes:
            return
        left = group.nodes[node] - weight
        if left > 0:
            group.nodes[node] = left
            return
        del group.nodes[node]
        if not group.nodes:
            del self.groups[gkey]
            self._filing.unfile(gkey, group.buckets)

    def add_pod(self, pod, node: str) -> None:
        """Index every (anti-)affinity term of `pod`, counted on `node`."""
        self._pod(pod, node, self.add)

    def remove_pod(self, pod, node: str) -> None:
        self._pod(pod, node, self.remove)

    @staticmethod
    def _pod(pod, node: str, op) -> None:
        required_aff, preferred_aff = pod.affinity
        required_anti, preferred_anti = pod.anti_affinity
        for t in required_anti:
            op(REQUIRED_ANTI, t, node)
        for t in required_aff:
            op(REQUIRED_AFFINITY, t, node)
        for w, t in preferred_aff:
            op(PREFERRED_AFFINITY, t, node, w)
        for w, t in preferred_anti:
            op(PREFERRED_ANTI, t, node, w)

    # --- reading ------------------------------------------------------------------------------

    def candidates(self, pod) -> dict:
        """Group key -> group of every group whose term could match `pod` (a superset)."""
        return self._filing.candidates(pod)

    def matching(self, pod, kinds=None, namespaces=None) -> list[TermGroup]:
        """The groups (of `kinds`, default all) whose term matches `pod` (`namespaces`: the
        labels of its namespace, for terms with a namespaceSelector)."""
        return [g for g in self.candidates(pod).values()
                if (kinds is None or g.kind in kinds) and g.term.matches(pod, namespaces)]
