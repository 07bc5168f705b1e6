"""PodTopologySpread: keep matching pods evenly spread over topology domains.

Hard constraints (DoNotSchedule) filter: placing the pod in a node's domain must keep
``count(domain) + self - min(count over eligible domains) <= maxSkew``; a node missing a
constraint's topology label is unresolvable. Soft constraints (ScheduleAnyway) score: fewer
matching pods in the node's domains score higher. Pods without constraints get the profile's
defaults (common.plugins.topology_spread.constraints_of: the system defaults, hostname maxSkew
3 and zone maxSkew 5, ScheduleAnyway, or the args' List, whose DoNotSchedule ones filter) over
the pods of their workload: the selector of the Services selecting them and of their
ReplicaSet, StatefulSet or ReplicationController (common.scheduling.workloads, kube's
helper.DefaultSelector); a pod without one is not spread by default.

Counting matching pods per domain is one numpy pass: per-row counts come from the node
table's cached selector counts and are summed per label value.
"""
from __future__ import annotations

import math

import numpy as np

from common.plugins import topology_spread
from common.scheduling.predicates import SPREAD_MISMATCH, SPREAD_MISSING_LABEL
from ..framework import SKIP, Plugin, Status, unresolvable, unschedulable
from .node_affinity import matches_mask
from .scoring import MAX_NODE_SCORE

REASON = SPREAD_MISMATCH
MISSING = SPREAD_MISSING_LABEL
HOSTNAME = topology_spread.HOSTNAME
FILTER_STATE = "PodTopologySpread/filter"
SCORE_STATE = "PodTopologySpread/score"


def _counts(table, pod, constraint) -> np.ndarray:
    ns, sel = pod.namespace, constraint.selector
    if sel is None:
        return np.zeros(len(table), dtype=np.int64)
    return table.pod_counts(("spread", ns, sel.key),
                            lambda p: p.namespace == ns and not p.deleting and sel.matches(p.labels))


def _eligible(table, pod, constraints) -> list:
    """Per constraint, the rows whose pods count: they have every constraint's topology key
    (kube requires all of them) and pass that constraint's own node inclusion policies."""
    n = len(table)
    base = np.ones(n, dtype=bool)
    for c in constraints:
        base &= table.label_column(c.topology_key)[0][:n] != 0
    affinity = tolerated = None
    out = []
    for c in constraints:
        ok = base
        if c.honor_affinity and (pod.node_selector or pod.required_node_terms):
            if affinity is None:
                affinity = matches_mask(pod, table, slice(0, n))
            ok = ok & affinity
        if c.honor_taints:
            if tolerated is None:
                mask = np.uint64(table.taint_bits.tolerated_mask(pod.tolerations))
                tolerated = table.tolerating(pod.tolerations, mask, slice(0, n))
            ok = ok & tolerated
        out.append(ok)
    return out


def _global_min(codes, sums, eligible, min_domains: int) -> int:
    """The smallest matching-pod count over the domains that hold an eligible row (0 when
    there are fewer such domains than minDomains, or none). The domains present come from
    one counting pass over the rows (codes are small dense integers), not a sort of them,
    so each pod pays O(nodes) and not O(nodes log nodes)."""
    present = np.bincount(codes[eligible], minlength=len(sums)) != 0
    present[0] = False  # code 0: the node lacks the topology label, not a domain
    found = int(np.count_nonzero(present))
    if not found or found < min_domains:
        return 0
    return int(sums[present].min())


def _affinity_mask(table, pod) -> np.ndarray | None:
    """Rows passing the pod's nodeSelector and required node affinity (None: every row)."""
    if not (pod.node_selector or pod.required_node_terms):
        return None
    return matches_mask(pod, table, slice(0, len(table)))


class _Hard:
    __slots__ = ("constraint", "codes", "sums", "min", "self_match")

    def clone(self) -> "_Hard":
        c = _Hard()
        c.constraint, c.codes, c.min, c.self_match = self.constraint, self.codes, self.min, self.self_match
        c.sums = self.sums.copy()
        return c


class _HardState(list):
    """The hard constraints' domain sums; cloned for preemption's dry runs."""

    def clone(self) -> "_HardState":
        return _HardState(h.clone() for h in self)


class PodTopologySpread(Plugin, topology_spread.PodTopologySpread):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        #: kube's systemDefaulted: scoring then does not require every topology label
        self.system_defaulted = self.args["defaultingType"] == "System"

    # --- filter -------------------------------------------------------------------------------

    def pre_filter(self, state, pod):
        hard = [c for c in topology_spread.constraints_of(pod, self.args, self.handle.workloads.default_selector)[0]
                if c.hard]
        if not hard:
            return Status(SKIP)
        table = self.handle.table
        out = _HardState()
        for c, eligible in zip(hard, _eligible(table, pod, hard)):
            h = _Hard()
            h.constraint = c
            h.codes, h.sums = table.domain_counts(c.topology_key, _counts(table, pod, c), eligible)
            h.min = _global_min(h.codes, h.sums, eligible, c.min_domains)
            h.self_match = 1 if c.selector is not None and c.selector.matches(pod.labels) else 0
            out.append(h)
        state[FILTER_STATE] = out
        return None

    def filter(self, state, pod, info):
        table = self.handle.table
        return self._judge(state, np.array([table.row_of[info.name]]))[0]

    def filter_vec(self, state, pod, table, rows):
        ok = np.ones(len(table.generation[rows]), dtype=bool)
        for h in state[FILTER_STATE]:
            codes = h.codes[rows]
            skew = h.sums[codes] + h.self_match - h.min
            ok &= (codes != 0) & (skew <= h.constraint.max_skew)
        return ok

    def unresolvable_vec(self, state, pod, table, rows):
        """Of the rejected `rows`, those whose first failing constraint lacks its topology
        label (UnschedulableAndUnresolvable in kube; a skew is Unschedulable)."""
        bad = np.zeros(len(rows), dtype=bool)
        decided = np.zeros(len(rows), dtype=bool)
        for h in state[FILTER_STATE]:
            codes = h.codes[rows]
            missing = codes == 0
            bad |= missing & ~decided
            decided |= missing | (h.sums[codes] + h.self_match - h.min > h.constraint.max_skew)
        return bad

    def _judge(self, state, rows):
        """Per row, the status of the first constraint it fails (kube stops there too)."""
        out = []
        for row in rows:
            status = None
            for h in state[FILTER_STATE]:
                code = h.codes[row]
                if code == 0:
                    status = unresolvable(MISSING)
                    break
                if h.sums[code] + h.self_match - h.min > h.constraint.max_skew:
                    status = unschedulable(REASON)
                    break
            out.append(status)
        return out

    def add_pod(self, state, pod, added, info) -> None:
        self._adjust(state, pod, added, info, 1)

    def remove_pod(self, state, pod, removed, info) -> None:
        self._adjust(state, pod, removed, info, -1)

    def _adjust(self, state, pod, other, info, delta) -> None:
        """Preemption's dry runs add or remove pods on one node: update the domain sums."""
        hard = state.get(FILTER_STATE)
        if not hard or other.namespace != pod.namespace:
            return
        row = self.handle.table.row_of.get(info.name)
        if row is None:
            return
        for h in hard:
            code = h.codes[row]
            if code and h.constraint.selector is not None and h.constraint.selector.matches(other.labels):
                h.sums[code] += delta

    # --- score --------------------------------------------------------------------------------

    def _soft_constraints(self, pod):
        """(the ScheduleAnyway constraints, whether nodes need all their topology labels:
        kube's requireAllTopologies, true unless the constraints are the system defaults)."""
        constraints, own = topology_spread.constraints_of(pod, self.args, self.handle.workloads.default_selector)
        return [c for c in constraints if not c.hard], own or not self.system_defaulted

    def pre_score(self, state, pod, rows):
        soft, require_all = self._soft_constraints(pod)
        if not soft:
            return Status(SKIP)
        table = self.handle.table
        if require_all:
            eligibles = _eligible(table, pod, soft)
        else:
            # System defaults do not require the topology labels, but they honour the pod's
            # node affinity (kube's nodeAffinityPolicy default): pods on nodes the pod could
            # never use do not count.
            eligibles = [_affinity_mask(table, pod)] * len(soft)
        columns = []
        ignored = np.zeros(len(rows), dtype=bool)
        for c, eligible in zip(soft, eligibles):
            counts = _counts(table, pod, c)
            codes, sums = table.domain_counts(c.topology_key, counts, eligible)
            cand = codes[rows]
            if require_all:
                ignored |= cand == 0
            columns.append((c, counts, sums, cand))
        # kube's normalizing weight log(size + 2): size counts the topology values of the
        # candidates that are not ignored (a node missing a key of the pod's own constraints
        # is ignored for all of them; under system defaults a missing label is the "" value),
        # and for the hostname key it is the number of those candidates.
        live = ~ignored
        parts = []
        for c, counts, sums, cand in columns:
            size = int(live.sum()) if c.topology_key == HOSTNAME else len(np.unique(cand[live]))
            weight = math.log(size + 2)
            per_row = counts[rows] if c.topology_key == HOSTNAME else sums[cand]
            parts.append((cand, per_row, weight, c.max_skew))
        state[SCORE_STATE] = (parts, ignored)
        return None

    def score_vec(self, state, pod, table, rows):
        parts, _ = state[SCORE_STATE]
        total = np.zeros(len(rows), dtype=np.float64)
        for cand, per_row, weight, max_skew in parts:
            total += np.where(cand != 0, per_row * weight + (max_skew - 1), 0.0)
        return np.floor(total + 0.5).astype(np.int64)  # Go's math.Round (half away from zero)

    def normalize(self, state, pod, scores) -> None:
        _, ignored = state[SCORE_STATE]
        live = scores[~ignored]
        if not len(live):
            scores[:] = 0
            return
        lo, hi = int(live.min()), int(live.max())
        if hi == 0:
            scores[:] = MAX_NODE_SCORE
        else:
            scores[:] = MAX_NODE_SCORE * (hi + lo - scores) // hi
        scores[ignored] = 0
