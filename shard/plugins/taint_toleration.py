"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule ones
lower the score (fewer untolerated preferred taints score higher).

The vectorised forms compare each row's taint bitmask with the bits this pod tolerates.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from common.plugins import taint_toleration
from common.scheduling.predicates import UNTOLERATED_TAINT, untolerated_taint
from ..framework import Plugin, unresolvable
from ..node_table import OVERFLOW_BIT, gather
from .scoring import default_normalize

STATE = "TaintToleration"


class TaintToleration(Plugin, taint_toleration.TaintToleration):
    def pre_filter(self, state, pod):
        self._prepare(state, pod)
        return None

    def pre_score(self, state, pod, rows):
        """Scoring reads what PreFilter prepares; a profile may score with this plugin and
        not filter with it."""
        if STATE not in state:
            self._prepare(state, pod)
        return None

    def _prepare(self, state, pod) -> None:
        table = self.handle.table
        prefer_tols = [t for t in pod.tolerations if not t.effect or t.effect == "PreferNoSchedule"]
        state[STATE] = (np.uint64(table.taint_bits.tolerated_mask(pod.tolerations)),
                        np.uint64(table.prefer_bits.tolerated_mask(prefer_tols)), prefer_tols)

    def filter(self, state, pod, info):
        t = untolerated_taint(info.node.taints, pod.tolerations)
        return unresolvable(UNTOLERATED_TAINT) if t is not None else None

    def filter_vec(self, state, pod, table, rows):
        tolerated, _, _ = state[STATE]
        return table.tolerating(pod.tolerations, tolerated, rows)

    def reasons_vec(self, state, pod, table, rows):
        """Reasons for failing `rows` (absolute indices): kube's one reason for them all, which
        in v1.37 names no taint."""
        return Counter({UNTOLERATED_TAINT: len(rows)}) if len(rows) else Counter()

    def score(self, state, pod, info) -> int:
        _, _, prefer_tols = state[STATE]
        return sum(1 for t in info.node.taints if t.effect == "PreferNoSchedule"
                   and not any(tol.tolerates(t) for tol in prefer_tols))

    def score_vec(self, state, pod, table, rows):
        prefer = table.prefer_bits
        if not prefer.taints and not prefer.overflowed:
            # No node has had a PreferNoSchedule taint (most clusters): every row scores 0,
            # without gathering and counting the rows' bits (a few numpy calls every cycle).
            return np.zeros(len(range(len(table))[rows]) if isinstance(rows, slice) else len(rows), dtype=np.int64)
        _, tolerated, _ = state[STATE]
        bits = gather(table.prefer_taints, rows)
        scores = np.bitwise_count(bits & ~tolerated).astype(np.int64)
        if not table.prefer_bits.overflowed:
            return scores
        overflow = np.flatnonzero((bits & OVERFLOW_BIT) != 0)
        if len(overflow):  # taints past the 63 bits share one bit: count those rows one by one
            infos = table.infos
            for i in overflow:
                row = rows.start + i if isinstance(rows, slice) else rows[i]
                scores[i] = self.score(state, pod, infos[row])
        return scores

    def normalize(self, state, pod, scores) -> None:
        default_normalize(scores, reverse=True)
