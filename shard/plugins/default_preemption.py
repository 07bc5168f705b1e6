"""DefaultPreemption: when a pod fits nowhere, find lower-priority pods whose eviction lets it in.

kube-scheduler's PostFilter, with one addition that makes it affordable at 20,000 nodes:
before any dry run, one numpy pass over the node table drops the nodes where the node's free
resources plus everything its lower-priority pods hold (a prefix sum of each node's priority
splay tree, cached per priority and refreshed only for nodes that changed) still cannot cover
the request. A dry run on such a node removes every lower-priority pod and finds the pod does
not fit, so skipping it never changes the outcome: the same candidates are found in the same
order, and the same one is chosen.

The rules, as kube-scheduler's:
* not eligible with `preemptionPolicy: Never`, nor while lower-priority pods on the node it
  was nominated to by an earlier preemption are still terminating;
* candidates only among nodes whose rejection preemption could fix (resources, host ports,
  pod anti-affinity, spread), searched from a random offset until
  max(minCandidateNodesPercentage% of them, minCandidateNodesAbsolute) candidates are found;
* the dry run on a node removes every lower-priority pod, checks that the pod fits, then
  gives back pods while it still fits, those whose eviction would break a
  PodDisruptionBudget first, each group most important (highest priority, oldest) first;
* pods of a placed pod group are never victims for a preemptor whose priority is not above
  the group's, nor beyond the members the group has above its minMember (a placed gang stays
  whole); a group fits by preemption for all its members or none, since the victims of its
  members are evicted only when the binder commits the whole group;
* the best candidate has the fewest PDB violations, then the lowest highest-victim priority,
  the smallest sum of victim priorities, the fewest victims, and the latest start time among
  its highest-priority victims; a node that needs no victim at all wins outright.
"""
from __future__ import annotations

import numpy as np

from common.disruption import Budgets
from common.podgroup import victims_break_group
from ..framework import Plugin, PostFilterResult, unresolvable, unschedulable

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never"
TERMINATING = "not eligible due to a terminating pod on the nominated node"

#: Priorities are int32; kube-scheduler shifts them by this before summing so that a sum of
#: negative priorities still ranks more victims as worse.
PRIORITY_SHIFT = 2 ** 31


class Candidate:
    __slots__ = ("node", "victims", "pdb_violations")

    def __init__(self, node: str, victims: list, pdb_violations: int):
        self.node, self.victims, self.pdb_violations = node, victims, pdb_violations

    def rank(self) -> tuple:
        """Smaller is better (see the module docstring for the order)."""
        top = self.victims[0].priority  # victims are most important first
        earliest = min(v.start_time for v in self.victims if v.priority == top)
        return (self.pdb_violations, top, sum(v.priority + PRIORITY_SHIFT for v in self.victims),
                len(self.victims), -earliest)


class DefaultPreemption(Plugin):
    """Its args are kube's DefaultPreemptionArgs: minCandidateNodesPercentage and
    minCandidateNodesAbsolute (defaults from the config's `preemption` section)."""

    name = "DefaultPreemption"
    finds_victims = True

    def post_filter(self, state, pod, result) -> PostFilterResult:
        out = PostFilterResult()
        if pod.preemption_policy == "Never":
            out.status = unresolvable(NEVER)
            return out
        handle = self.handle
        table = handle.table
        unfixable = result.diagnosis.unresolvable_rows()
        if self._victims_still_terminating(table, pod, unfixable):
            out.status = unschedulable(TERMINATING)
            return out
        possible = np.ones(len(table), dtype=bool)
        possible[unfixable] = False
        rows = np.flatnonzero(possible)
        if not len(rows):
            out.status = unresolvable(NOT_HELPFUL)
            return out
        wanted = min(len(rows), max(len(rows) * self.args["minCandidateNodesPercentage"] // 100,
                                    self.args["minCandidateNodesAbsolute"]))
        offset = handle.rng.randrange(len(rows))
        rows = np.concatenate((rows[offset:], rows[:offset]))
        if handle.preemption_pruning:
            keep = can_make_room(table, pod, rows)
            out.pruned = len(rows) - int(keep.sum())
            rows = rows[keep]
        budgets = handle.budgets()
        candidates = []
        for row in rows:
            cand = self.dry_run(state, pod, table.infos[row], budgets)
            if cand is None:
                continue
            if not cand.victims:  # fits once its nominated pods are accounted for: take it
                out.node = cand.node
                return out
            candidates.append(cand)
            if len(candidates) >= wanted:
                break
        if not candidates:
            out.status = unschedulable(NO_VICTIMS)
            return out
        best = min(candidates, key=Candidate.rank)
        out.node, out.victims = best.node, best.victims
        return out

    def dry_run(self, state, pod, info, budgets: Budgets) -> Candidate | None:
        """The victims on one node, or None when even evicting every lower pod is not enough
        (pods that placed pod groups need are not offered: see _group_safe)."""
        handle = self.handle
        lower = [p for p in info.pods.values() if p.priority < pod.priority]
        if handle.groups.group_of:
            lower = self._group_safe(pod, lower)
        scratch = info.scratch()
        st = state.clone()
        for v in lower:
            handle.remove_pod(st, pod, v, scratch)
        if handle.filter_with_nominated(st, pod, scratch) is not None:
            return None
        lower.sort(key=lambda p: (-p.priority, p.start_time))
        budgets = budgets.copy()
        violating, other = [], []
        for v in lower:
            (violating if budgets.violates(v) else other).append(v)
        victims, broken = [], 0
        for group, breaks in ((violating, 1), (other, 0)):
            for v in group:
                handle.add_pod(st, pod, v, scratch)
                if handle.filter_with_nominated(st, pod, scratch) is not None:
                    handle.remove_pod(st, pod, v, scratch)
                    victims.append(v)
                    broken += breaks
        if victims and handle.groups.group_of and victims_break_group(
                victims, handle.groups, pod.priority, self._priority_of) is not None:
            return None
        return Candidate(info.name, victims, broken)

    def _priority_of(self, key: str):
        counted = self.handle.counted(key)
        return None if counted is None else counted.priority

    def _group_safe(self, pod, lower: list) -> list:
        """Lower-priority pods minus members of pod groups that must keep them: a group
        whose priority (its highest member's) is not below the preemptor's, or that has no
        member placed beyond its minMember. Never evicting those keeps every placed gang
        whole; a dry run that still takes too many from one group is not a candidate."""
        return [p for p in lower if victims_break_group([p], self.handle.groups, pod.priority,
                                                         self._priority_of) is None]

    @staticmethod
    def _victims_still_terminating(table, pod, unfixable) -> bool:
        """An earlier preemption of this pod is still under way on its nominated node."""
        if not pod.nominated_node:
            return False
        row = table.row_of.get(pod.nominated_node)
        if row is None or (unfixable == row).any():
            return False
        return any(p.deleting and p.priority < pod.priority for p in table.infos[row].pods.values())


def can_make_room(table, pod, rows: np.ndarray) -> np.ndarray:
    """Mask over `rows`: nodes whose free resources plus all they hold below the pod's
    priority cover its request (pod count included). The others cannot be candidates."""
    req = np.asarray(pod.requests, dtype=np.int64)
    cols = np.flatnonzero(req)
    n = len(table)
    room = table.free[:n, cols] + table.releasable(pod.priority)[:, cols]  # every row: cheaper
    return (room >= req[cols]).all(axis=1)[rows]                           # than gathering rows
