"""NodeAffinity: nodeSelector, required node affinity (terms ORed, expressions ANDed,
matchFields on metadata.name) as a filter; preferred terms as a weighted score.

Required terms that all pin `metadata.name` (what DaemonSet pods carry) narrow the cycle to
those nodes in PreFilter, as kube-scheduler's does: the pod is checked against its node
only (unit locating). The
vectorised forms evaluate labels through the node table's label columns.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from common.plugins import node_affinity
from common.scheduling.predicates import NODE_AFFINITY_MISMATCH, node_matches
from common.model.selectors import label_int
from ..framework import SKIP, Plugin, PreFilterResult, Status, unresolvable
from .scoring import default_normalize

REASON = NODE_AFFINITY_MISMATCH


def _numbers(values: dict) -> np.ndarray:
    """Label value codes -> integer value (NaN where not an integer), for Gt/Lt."""
    nums = np.full(len(values) + 1, np.nan)
    for v, code in values.items():
        n = label_int(v)
        if n is not None:
            nums[code] = n
    return nums


def term_mask(term, table, rows) -> np.ndarray:
    n = len(table.generation[rows])
    if not term.expressions and not term.fields:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for key, op, values in term.expressions:
        codes, vmap = table.label_column(key)
        c = codes[rows]
        if op == "In" or op == "NotIn":
            wanted = np.zeros(len(vmap) + 1, dtype=bool)  # by label code: one gather, no sort
            wanted[[vmap[v] for v in values if v in vmap]] = True
            hit = wanted[c]
            mask &= hit if op == "In" else ~hit
        elif op == "Exists":
            mask &= c != 0
        elif op == "DoesNotExist":
            mask &= c == 0
        else:
            nums = _numbers(vmap)[c]
            with np.errstate(invalid="ignore"):
                mask &= (nums > values) if op == "Gt" else (nums < values)
    for op, names in term.fields:
        targets = np.zeros(len(table.names), dtype=bool)
        targets[[table.row_of[nm] for nm in names if nm in table.row_of]] = True
        hit = targets[rows]
        mask &= hit if op == "In" else ~hit
    return mask


def matches_mask(pod, table, rows) -> np.ndarray:
    """node_matches over `rows` of the node table, in one numpy pass per selector term."""
    n = len(table.generation[rows])
    mask = np.ones(n, dtype=bool)
    for k, v in pod.node_selector.items():
        codes, vmap = table.label_column(k)
        mask &= codes[rows] == vmap.get(v, -1)
    if pod.required_node_terms is not None:
        any_term = np.zeros(n, dtype=bool)
        for t in pod.required_node_terms:
            any_term |= term_mask(t, table, rows)
        mask &= any_term
    return mask


#: kube's PreFilter status when the terms' metadata.name requirements admit no node at all.
CONFLICT = "pod affinity terms conflict"


def pinned_nodes(pod):
    """Node names the pod's required affinity pins it to (the union over its terms), or None
    when some term leaves every node possible. Empty when the terms admit no node."""
    terms = pod.required_node_terms
    if not terms:
        return None
    names = set()
    for t in terms:
        pinned = t.pinned_names()
        if pinned is None:
            return None
        names |= pinned
    return names


class NodeAffinity(Plugin, node_affinity.NodeAffinity):
    def pre_filter(self, state, pod):
        if not pod.node_selector and pod.required_node_terms is None:
            return Status(SKIP)
        names = pinned_nodes(pod)
        if names is None:
            return None
        return PreFilterResult(names) if names else unresolvable(CONFLICT)

    def filter(self, state, pod, info):
        return None if node_matches(pod, info.node) else unresolvable(REASON)

    def filter_vec(self, state, pod, table, rows):
        return matches_mask(pod, table, rows)

    def reasons_vec(self, state, pod, table, rows):
        return Counter({REASON: len(rows)})

    def pre_score(self, state, pod, rows):
        return None if pod.preferred_node_terms else Status(SKIP)

    def score_vec(self, state, pod, table, rows):
        total = np.zeros(len(table.generation[rows]), dtype=np.int64)
        for weight, term in pod.preferred_node_terms:
            total += np.where(term_mask(term, table, rows), weight, 0)
        return total

    def normalize(self, state, pod, scores) -> None:
        default_normalize(scores)
