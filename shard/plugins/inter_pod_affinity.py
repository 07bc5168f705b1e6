"""InterPodAffinity: required and preferred pod affinity and anti-affinity, both ways.

Filter (kube-scheduler's rules, checked in this order; the first failure is the reason):
* the pod's required affinity: every term needs a matching pod in the node's domain (a node
  without the topology label fails); when no pod anywhere matches and the pod matches its
  own terms, it may go anywhere (the first pod of a group);
* the pod's required anti-affinity: fails if a matching pod is in the node's domain;
* existing pods' required anti-affinity: a node fails if a pod in its topology domain has a
  term matching the incoming pod ("didn't satisfy existing pods anti-affinity rules").

Score: the pod's preferred terms (+/- weight per matching pod in the domain), existing pods'
preferred terms towards it, and existing pods' required affinity (hardPodAffinityWeight),
normalised to 0..100 between the lowest and highest node.

Matching pods are counted per row with the node table's cached selector counts and summed
per topology value in numpy. Existing pods' terms are not walked pod by pod: the node table
groups them (common.scheduling.term_groups: one group per kind, namespaces, selector and
topology key, with its count per node), and a cycle matches one term per group, of the
groups the pod's labels could match.
"""
from __future__ import annotations

import numpy as np

from common.plugins import inter_pod_affinity
from common.scheduling.term_groups import PREFERRED_AFFINITY, PREFERRED_ANTI, REQUIRED_AFFINITY, REQUIRED_ANTI
from common.scheduling.predicates import (EXISTING_ANTI_AFFINITY, POD_AFFINITY_MISMATCH,
                                          POD_ANTI_AFFINITY_MISMATCH)

from ..framework import SKIP, Plugin, Status, unresolvable, unschedulable
from .scoring import MAX_NODE_SCORE

EXISTING_ANTI = EXISTING_ANTI_AFFINITY
ANTI = POD_ANTI_AFFINITY_MISMATCH
AFFINITY = POD_AFFINITY_MISMATCH
FILTER_STATE = "InterPodAffinity/filter"
SCORE_STATE = "InterPodAffinity/score"


# Terminating pods count, as in kube-scheduler: they still run until they are gone, so a pod
# with anti-affinity must not land beside one (PodTopologySpread, unlike this, skips them).
def _term_counts(table, term, ns) -> np.ndarray:
    return table.pod_counts(("term", term.cache_key(ns)), lambda p: term.matches(p, ns))


def _all_terms_counts(table, terms, ns) -> np.ndarray:
    key = ("all", tuple(t.cache_key(ns) for t in terms))
    return table.pod_counts(key, lambda p: all(t.matches(p, ns) for t in terms))


_ONE = {REQUIRED_ANTI: 1}


class _FilterState:
    __slots__ = ("forbidden", "anti", "affinity", "affinity_any", "self_match")

    def clone(self):
        c = _FilterState()
        c.forbidden = {k: v.copy() for k, v in self.forbidden.items()}
        c.anti = [(codes, sums.copy()) for codes, sums in self.anti]
        c.affinity = [(codes, sums.copy()) for codes, sums in self.affinity]
        c.affinity_any, c.self_match = self.affinity_any, self.self_match
        return c


class InterPodAffinity(Plugin, inter_pod_affinity.InterPodAffinity):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        self.hard_weight = self.args["hardPodAffinityWeight"]
        #: kube's ignorePreferredTermsOfExistingPods: a pod without preferred terms of its own
        #: is not scored at all (existing pods' terms towards it are not looked at).
        self.only_own_preferences = self.args["ignorePreferredTermsOfExistingPods"]

    def _existing_sums(self, pod, kinds, weights) -> dict:
        """topology key -> sums per label code (int64; code 0, no label, held at 0) of the
        existing pods' terms of `kinds` that match `pod`, each count or weight multiplied by
        `weights[kind]`. Only keys with a matching term on a node that has the label appear
        (as the walk over the pods found them)."""
        table = self.handle.table
        row_of = table.row_of
        out: dict = {}
        for g in table.terms.matching(pod, kinds, self.handle.namespaces):
            codes, values = table.label_column(g.topology_key)
            nodes = g.nodes
            c = codes.take(np.fromiter((row_of[name] for name in nodes), np.int64, len(nodes)))
            if not c.any():
                continue
            w = np.fromiter(nodes.values(), np.int64, len(nodes))
            factor = weights[g.kind]
            if factor != 1:
                w *= factor
            arr = out.get(g.topology_key)
            if arr is None or len(arr) <= len(values):
                grown = np.zeros(len(values) + 1, np.int64)
                if arr is not None:
                    grown[: len(arr)] = arr
                arr = out[g.topology_key] = grown
            np.add.at(arr, c, w)
            arr[0] = 0
        return out

    # --- filter -------------------------------------------------------------------------------

    def pre_filter(self, state, pod):
        table, ns = self.handle.table, self.handle.namespaces
        required_aff, required_anti = pod.affinity[0], pod.anti_affinity[0]
        fs = _FilterState()
        # existing pods whose required anti-affinity matches the incoming pod, per domain
        fs.forbidden = self._existing_sums(pod, (REQUIRED_ANTI,), _ONE)
        if not fs.forbidden and not required_aff and not required_anti:
            return Status(SKIP)
        fs.anti = [table.domain_counts(t.topology_key, _term_counts(table, t, ns)) for t in required_anti]
        fs.affinity = []
        fs.affinity_any = False
        if required_aff:
            counts = _all_terms_counts(table, required_aff, ns)
            fs.affinity = [table.domain_counts(t.topology_key, counts) for t in required_aff]
            fs.affinity_any = any(sums.any() for _, sums in fs.affinity)
        fs.self_match = all(t.matches(pod, ns) for t in required_aff)
        state[FILTER_STATE] = fs
        return None

    def filter_vec(self, state, pod, table, rows):
        fs = state[FILTER_STATE]
        n = len(table.generation[rows])
        ok = np.ones(n, dtype=bool)
        for key, arr in fs.forbidden.items():
            codes = table.label_column(key)[0][rows]
            ok &= arr[np.minimum(codes, len(arr) - 1)] * (codes < len(arr)) == 0
        for codes, sums in fs.anti:
            c = codes[rows]
            ok &= (c == 0) | (sums[c] == 0)
        if fs.affinity:
            if fs.affinity_any or not fs.self_match:
                for codes, sums in fs.affinity:
                    c = codes[rows]
                    ok &= (c != 0) & (sums[c] > 0)
            else:  # first pod of its group: only the topology labels are required
                for codes, _ in fs.affinity:
                    ok &= codes[rows] != 0
        return ok

    def unresolvable_vec(self, state, pod, table, rows):
        """Of the rejected `rows`, those whose first failure is the pod's own affinity (kube
        says UnschedulableAndUnresolvable there; anti-affinity, which evicting pods can cure,
        is Unschedulable)."""
        fs = state[FILTER_STATE]
        bad = np.zeros(len(rows), dtype=bool)
        for codes, sums in fs.affinity:
            c = codes[rows]
            bad |= (c == 0) | ((fs.affinity_any or not fs.self_match) & (sums[c] == 0))
        return bad

    def filter(self, state, pod, info):
        # kube-scheduler's order: the pod's affinity, its anti-affinity, then existing pods'
        # anti-affinity; the first failure decides the reason and the status code.
        fs = state[FILTER_STATE]
        table = self.handle.table
        row = table.row_of[info.name]
        for codes, sums in fs.affinity:
            if not codes[row] or ((fs.affinity_any or not fs.self_match) and not sums[codes[row]]):
                return unresolvable(AFFINITY)
        for codes, sums in fs.anti:
            if codes[row] and sums[codes[row]]:
                return unschedulable(ANTI)
        for key, arr in fs.forbidden.items():
            code = table.label_column(key)[0][row]
            if code and code < len(arr) and arr[code]:
                return unschedulable(EXISTING_ANTI)
        return None

    def add_pod(self, state, pod, added, info) -> None:
        self._adjust(state, pod, added, info, 1)

    def remove_pod(self, state, pod, removed, info) -> None:
        self._adjust(state, pod, removed, info, -1)

    def _adjust(self, state, pod, other, info, delta) -> None:
        """Preemption's dry runs: a pod added to or removed from one node changes the counts."""
        fs = state.get(FILTER_STATE)
        if fs is None:
            return
        table = self.handle.table
        row = table.row_of.get(info.name)
        if row is None:
            return
        ns = self.handle.namespaces
        for term, (codes, sums) in zip(pod.anti_affinity[0], fs.anti):
            if codes[row] and term.matches(other, ns):
                sums[codes[row]] += delta
        if fs.affinity and all(t.matches(other, ns) for t in pod.affinity[0]):
            for codes, sums in fs.affinity:
                if codes[row]:
                    sums[codes[row]] += delta
        for term in other.anti_affinity[0]:
            if term.matches(pod, ns):
                codes, values = table.label_column(term.topology_key)
                arr = fs.forbidden.get(term.topology_key)
                code = codes[row]
                if code and arr is not None and code < len(arr):
                    arr[code] += delta
                elif code and delta > 0:
                    arr = np.zeros(len(values) + 1, np.int64)
                    arr[code] = 1
                    fs.forbidden[term.topology_key] = arr

    # --- score --------------------------------------------------------------------------------

    def pre_score(self, state, pod, rows):
        table = self.handle.table
        preferred_aff, preferred_anti = pod.affinity[1], pod.anti_affinity[1]
        if self.only_own_preferences and not preferred_aff and not preferred_anti:
            return Status(SKIP)
        parts = []  # (codes per row, weighted sums per code)
        for sign, terms in ((1, preferred_aff), (-1, preferred_anti)):
            for weight, term in terms:
                codes, sums = table.domain_counts(term.topology_key, _term_counts(table, term, self.handle.namespaces))
                parts.append((codes, sums * (sign * weight)))
        # existing pods' terms towards the incoming pod
        kinds = (REQUIRED_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI) if self.hard_weight else \
            (PREFERRED_AFFINITY, PREFERRED_ANTI)
        weights = {REQUIRED_AFFINITY: self.hard_weight, PREFERRED_AFFINITY: 1, PREFERRED_ANTI: -1}
        for key, sums in self._existing_sums(pod, kinds, weights).items():
            parts.append((table.label_column(key)[0][: len(table)], sums))
        if not parts:
            return Status(SKIP)
        state[SCORE_STATE] = parts
        return None

    def score_vec(self, state, pod, table, rows):
        total = np.zeros(len(rows), dtype=np.int64)
        for codes, sums in state[SCORE_STATE]:
            c = codes[rows]
            total += np.where(c != 0, sums[np.minimum(c, len(sums) - 1)], 0)
        return total

    def normalize(self, state, pod, scores) -> None:
        lo, hi = int(scores.min()), int(scores.max())
        if hi == lo:
            scores[:] = 0
        else:
            # kube-scheduler's float64 arithmetic, truncated: 100 * (29 / 100) is 28.999...
            # there, so 28, where integer arithmetic would give 29.
            scores[:] = (float(MAX_NODE_SCORE) * ((scores - lo) / float(hi - lo))).astype(np.int64)
