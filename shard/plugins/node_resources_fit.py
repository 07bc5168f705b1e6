"""NodeResourcesFit: the pod's request vector must fit in the node's free resources.

Scoring strategies (args.scoringStrategy.type): LeastAllocated (default), MostAllocated and
RequestedToCapacityRatio, each over args.scoringStrategy.resources (cpu and memory, weight 1,
by default). Like kube-scheduler, scores use "non-zero" cpu/memory requests: each container
asking for no cpu or memory counts as 100m / 200Mi, so empty pods still spread out.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from common.plugins import node_resources_fit
from common.scheduling.predicates import IgnoredResources, insufficient
from common.model.resources import CPU, MEMORY, PODS, resource_index
from ..framework import Plugin, unresolvable, unschedulable
from ..node_table import column_index, gather
from .scoring import MAX_NODE_SCORE, broken_linear

STATE = "NodeResourcesFit"


reason = insufficient


@lru_cache(maxsize=4096)
def _request_arrays(requests: tuple) -> tuple:
    """(request vector, requested columns, their amounts) as arrays; pods of one workload
    share them, and building them was a tenth of a cycle. Callers must not modify them."""
    req = np.array(requests, dtype=np.int64)
    cols = np.flatnonzero(req)
    return req, cols, req[cols]


@lru_cache(maxsize=4096)
def _score_columns(resources: tuple, requests: tuple, pod_nonzero: tuple) -> tuple:
    """The columns a pod with `requests` (and non-zero cpu and memory `pod_nonzero`) is
    scored on, as arrays, shared by pods with equal requests (read-only): cpu and memory
    always count and are read from the table's non-zero columns (as kube does); any other
    resource counts only when the pod asks for it.

    Returns (which non-zero columns; the pod's non-zero amounts; other columns; the pod's
    amounts of them; capacity columns; weights; whether all weights are positive; their sum;
    whether the columns are exactly cpu then memory, the table's `base_alloc`).
    """
    nonzero = [(0 if col == CPU else 1, col, w) for col, w in resources if col in (CPU, MEMORY)]
    others = [(col, w) for col, w in resources if col < len(requests) and col not in (CPU, MEMORY) and requests[col]]
    k = [i for i, _, _ in nonzero]
    weights = np.array([w for _, _, w in nonzero] + [w for _, w in others], dtype=np.int64)
    return (column_index(k),
            np.array([pod_nonzero[i] for i in k], dtype=np.int64),
            column_index([col for col, _ in others]),
            np.array([requests[col] for col, _ in others], dtype=np.int64),
            column_index([col for _, col, _ in nonzero] + [col for col, _ in others]),
            weights, bool((weights > 0).all()), int(weights.sum()),
            [col for _, col, _ in nonzero] == [CPU, MEMORY] and not others)


class FitState:
    __slots__ = ("req", "cols", "req_cols")

    def __init__(self, pod):
        # only requested resources are checked
        self.req, self.cols, self.req_cols = _request_arrays(pod.requests)


class NodeResourcesFit(Plugin, node_resources_fit.NodeResourcesFit):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        strategy = self.args["scoringStrategy"]
        self.strategy = strategy["type"]
        self.resources = tuple((resource_index(r["name"]), r["weight"]) for r in strategy["resources"])
        ratio = strategy["requestedToCapacityRatio"]
        points = [(p["utilization"], p["score"] * (MAX_NODE_SCORE // 10)) for p in ratio["shape"]] if ratio else []
        #: RequestedToCapacityRatio's score for every utilisation 0..100 (kube's integer
        #: broken-linear function, so interpolation truncates exactly as kube-scheduler's does).
        self.shape_lut = np.array([broken_linear(points, u) for u in range(101)], dtype=np.int64) if points else None
        self.ignored = IgnoredResources(self.args["ignoredResources"], self.args["ignoredResourceGroups"])
        #: Whether the score favours fuller nodes (bin-packing): shards that pack converge on
        #: the same nodes, so the scheduler spreads them over slices (config `packing`).
        self.packs = self.strategy == "MostAllocated" or (
            self.shape_lut is not None and int(self.shape_lut[100]) > int(self.shape_lut[0]))

    def pre_filter(self, state, pod):
        fs = FitState(pod)
        if self.ignored:
            fs.cols = np.array([c for c in fs.cols if not self.ignored.column(c)], dtype=np.int64)
            fs.req_cols = fs.req[fs.cols]
        state[STATE] = fs
        return None

    def filter(self, state, pod, info):
        """kube v1.37: UnschedulableAndUnresolvable when a resource the node lacks is more than
        its whole allocatable (no eviction can make room), else Unschedulable."""
        fs = state[STATE]
        free = info.free  # as long as its highest slot in use: the rest are zero
        short = [c for c in fs.cols if fs.req[c] > (free[c] if c < len(free) else 0)]
        if not short:
            return None
        alloc = info.node.allocatable
        beyond = any(c != PODS and fs.req[c] > (alloc[c] if c < len(alloc) else 0) for c in short)
        return (unresolvable if beyond else unschedulable)(*(reason(c) for c in short))

    def filter_vec(self, state, pod, table, rows):
        fs = state[STATE]
        return (table.free[rows][:, fs.cols] >= fs.req_cols).all(axis=1)

    def unresolvable_vec(self, state, pod, table, rows):
        """Of the rejected `rows`, those asking for more of some resource than the node's whole
        allocatable (kube v1.37's InsufficientResource.Unresolvable): preemption skips them."""
        fs = state[STATE]
        cols = fs.cols[fs.cols != PODS]
        if not len(cols):
            return np.zeros(len(rows), dtype=bool)
        return (gather(table.alloc, rows)[:, cols] < fs.req[cols]).any(axis=1)

    def reasons_vec(self, state, pod, table, rows):
        fs = state[STATE]
        short = (table.free[rows][:, fs.cols] < fs.req_cols).sum(axis=0)
        return Counter({reason(int(c)): int(n) for c, n in zip(fs.cols, short) if n})

    # --- scoring ----------------------------------------------------------------------------

    def score_vec(self, state, pod, table, rows):
        """All scored resources of all rows in one set of array operations (the per-resource
        loop this replaced cost a third of a scheduling cycle in numpy call overhead)."""
        (nonzero_cols, nonzero_req, other_cols, other_req, cap_cols, weights, positive,
         weight_total, base) = _score_columns(self.resources, pod.requests, pod.nonzero)
        if not len(weights):
            return np.zeros(len(rows), dtype=np.int64)
        if base and positive and not table.base_gaps and self.strategy != "RequestedToCapacityRatio":
            return self._base_scores(table, rows, nonzero_req, weights, weight_total)
        parts = []
        if len(nonzero_req):
            parts.append(gather(table.nonzero, rows)[:, nonzero_cols] + nonzero_req)
        if len(other_req):
            parts.append(gather(table.requested, rows)[:, other_cols] + other_req)
        requested = parts[0] if len(parts) == 1 else np.hstack(parts)
        cap = gather(table.alloc, rows)[:, cap_cols]
        if self.strategy != "RequestedToCapacityRatio" and positive and cap.min(initial=1) > 0:
            # Every resource of every row counts: no masks needed (the common case).
            if self.strategy == "LeastAllocated":
                s = np.maximum((cap - requested) * MAX_NODE_SCORE // cap, 0)
            else:
                s = np.minimum(requested, cap) * MAX_NODE_SCORE // cap
            return s @ weights // weight_total
        has = cap > 0
        safe = np.where(has, cap, 1)
        if self.strategy == "LeastAllocated":
            s = np.where(requested > cap, 0, (cap - requested) * MAX_NODE_SCORE // safe)
        elif self.strategy == "MostAllocated":
            s = np.minimum(requested, cap) * MAX_NODE_SCORE // safe
        else:
            util = np.where(requested > cap, 100, np.minimum(requested * 100 // safe, 100))
            s = self.shape_lut[util]
            has &= s > 0  # kube weighs only the resources that scored above zero
        weighed = has * weights
        total = (s * weighed).sum(axis=1)
        weight_sum = weighed.sum(axis=1)
        if self.strategy == "RequestedToCapacityRatio":  # rounded to nearest (Go's math.Round)
            return np.where(weight_sum > 0, (2 * total + weight_sum) // (2 * np.maximum(weight_sum, 1)), 0)
        return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)

    def _base_scores(self, table, rows, nonzero_req, weights, weight_total):
        """The common case: cpu and memory alone, both weighed, every node has some of each
        (the table counts those that have not). The same integer arithmetic as the general
        form, on the table's contiguous cpu and memory columns and in place: the general
        form's strided views and temporaries were most of the cost of a hundred-row score
        (benchmarks.cycle's resource_scores)."""
        cap = gather(table.base_alloc, rows)
        requested = gather(table.nonzero, rows) + nonzero_req  # (a new array: rows may be a slice)
        if self.strategy == "LeastAllocated":
            s = cap - requested
            s *= MAX_NODE_SCORE
            s //= cap
            np.maximum(s, 0, out=s)
        else:
            s = np.minimum(requested, cap, out=requested)
            s *= MAX_NODE_SCORE
            s //= cap
        return s @ weights // weight_total


