"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay in balance.

Score = (1 - standard deviation of the requested/allocatable fractions) * 100, counting the
pod as placed, over args.resources (cpu and memory by default); fractions are capped at 1.
"""
from __future__ import annotations

import numpy as np

from common.resources import resource_index
from ..framework import Plugin
from .scoring import MAX_NODE_SCORE

STATE = "NodeResourcesBalancedAllocation"


class NodeResourcesBalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args=None, weight=1):
        super().__init__(args, weight)
        resources = self.args.get("resources") or [{"name": "cpu"}, {"name": "memory"}]
        self.cols = [resource_index(r["name"]) for r in resources]

    def pre_score(self, state, pod, rows):
        state[STATE] = np.array([pod.requests[c] for c in self.cols], dtype=np.int64)
        return None

    def score_vec(self, state, pod, table, rows):
        req = state[STATE]
        alloc = table.alloc[rows][:, self.cols]
        used = table.requested[rows][:, self.cols] + req
        has = alloc > 0
        frac = np.where(has, np.minimum(used / np.where(has, alloc, 1), 1.0), 0.0)
        count = has.sum(axis=1)
        mean = frac.sum(axis=1) / np.maximum(count, 1)
        var = (np.where(has, (frac - mean[:, None]) ** 2, 0.0)).sum(axis=1) / np.maximum(count, 1)
        std = np.sqrt(var)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
