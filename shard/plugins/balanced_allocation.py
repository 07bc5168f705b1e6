"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay in balance.

Score = (1 - standard deviation of the requested/allocatable fractions) * 100, counting the
pod as placed, over args.resources (cpu and memory by default); fractions are capped at 1.
Like kube-scheduler, best-effort pods (requesting none of those resources) are not scored, and
extended resources the pod does not request are left out.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from common.plugins import balanced_allocation
from common.model.resources import BASE_RESOURCES, CPU, MEMORY, resource_index
from ..framework import SKIP, Plugin, Status
from ..node_table import column_index, gather
from .scoring import MAX_NODE_SCORE

STATE = "NodeResourcesBalancedAllocation"


@lru_cache(maxsize=4096)
def _request_arrays(cols: tuple, requests: tuple) -> tuple:
    """(the pod's requests of `cols`, which of them are scored) as arrays, or (None, None)
    for a pod asking for none of them; pods of one workload share them (read-only), as
    building them was a twentieth of a cycle. An extended resource the pod does not ask
    for is left out, as in kube-scheduler."""
    req = np.array([requests[c] if c < len(requests) else 0 for c in cols], dtype=np.int64)
    if not req.any():
        return None, None
    return req, np.array([c < len(BASE_RESOURCES) or r > 0 for c, r in zip(cols, req)], dtype=bool)


class NodeResourcesBalancedAllocation(Plugin, balanced_allocation.NodeResourcesBalancedAllocation):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        self.cols = [resource_index(r["name"]) for r in self.args["resources"]]
        self.cols_key = tuple(self.cols)  # (hashable: the key of _request_arrays)
        self.col_index = column_index(self.cols)
        #: exactly two base resources (the default cpu and memory): always scored, fast path
        self.two_base = len(self.cols) == 2 and all(c < len(BASE_RESOURCES) for c in self.cols)
        #: exactly cpu then memory: the table's contiguous `base_alloc` holds them
        self.cpu_memory = self.cols == [CPU, MEMORY]

    def pre_score(self, state, pod, rows):
        req, use = _request_arrays(self.cols_key, pod.requests)
        if use is None:
            # kube-scheduler skips best-effort pods: scoring them by the existing load alone
            # would draw every one of them to the same most balanced node.
            return Status(SKIP)
        state[STATE] = (req, use)
        return None

    def score_vec(self, state, pod, table, rows):
        req, use = state[STATE]
        if self.cpu_memory and not table.base_gaps:
            return self._base_scores(table, rows, req)
        alloc = gather(table.alloc, rows)[:, self.col_index]  # the scored columns of the rows
        used = gather(table.requested, rows)[:, self.col_index] + req
        if self.two_base and alloc.min(initial=1) > 0:
            # cpu and memory on every row: kube's |f1 - f2| / 2 without masks (the common case)
            frac = np.minimum(used / alloc, 1.0)
            std = np.abs(frac[:, 0] - frac[:, 1]) / 2
            return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        has = (alloc > 0) & use
        frac = np.where(has, np.minimum(used / np.where(has, alloc, 1), 1.0), 0.0)
        count = has.sum(axis=1)
        if frac.shape[1] == 2:
            # kube-scheduler takes |f1 - f2| / 2 for exactly two resources; the standard
            # deviation is the same in exact arithmetic, but not always in floating point, and
            # scores are truncated. Two columns is the default (cpu, memory): the fast path.
            std = np.abs(frac[:, 0] - frac[:, 1]) / 2
        else:
            mean = frac.sum(axis=1) / np.maximum(count, 1)
            var = (np.where(has, (frac - mean[:, None]) ** 2, 0.0)).sum(axis=1) / np.maximum(count, 1)
            std = np.sqrt(var)
            if frac.shape[1] > 2:
                order = np.argsort(~has, axis=1, kind="stable")  # present columns first, in order
                f1 = np.take_along_axis(frac, order[:, :1], axis=1)[:, 0]
                f2 = np.take_along_axis(frac, order[:, 1:2], axis=1)[:, 0]
                std = np.where(count == 2, np.abs((f1 - f2) / 2), std)
        std = np.where(count < 2, 0.0, std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)

    @staticmethod
    def _base_scores(table, rows, req):
        """The default resources on a table where every node has cpu and memory (it counts
        those that have not): the two-resource fast path's floating-point operations in the
        same order, so the same scores, on the table's contiguous cpu and memory columns
        and in place (benchmarks.cycle's resource_scores)."""
        frac = gather(table.requested, rows)[:, :2] + req
        frac = np.divide(frac, gather(table.base_alloc, rows))
        np.minimum(frac, 1.0, out=frac)
        std = frac[:, 0] - frac[:, 1]
        np.abs(std, out=std)
        std /= 2
        np.subtract(1, std, out=std)
        std *= MAX_NODE_SCORE
        return std.astype(np.int64)
