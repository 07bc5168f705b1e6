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

When it finds nothing, its status is kube's words after "preemption: ": why the pod is not
eligible, or a fit message over every node: the reason each node tried failed its dry run
(the nodes pruning skipped get the reason their dry run would have given, worked out from
the same columns) and "Preemption is not helpful for scheduling" for the nodes whose
rejection preemption cannot cure.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from common.scheduling.disruption import Budgets
from common.plugins import default_preemption
from common.model.podgroup import victims_break_group
from common.scheduling.predicates import PORTS_IN_USE, host_ports_conflict, insufficient
from common.model.resources import PODS
from common.scheduling.extenders import ExtenderError
from ..diagnosis import fit_message
from ..framework import ERROR, Plugin, PostFilterResult, Status, unschedulable

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_CANDIDATE = "no candidate node for preemption"
#: kube's DefaultPreemption prefixes every message it returns with this.
PREFIX = "preemption: "

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


class DefaultPreemption(Plugin, default_preemption.DefaultPreemption):
    """Its args are kube's DefaultPreemptionArgs: minCandidateNodesPercentage and
    minCandidateNodesAbsolute (defaults from the config's `preemption` section)."""

    def post_filter(self, state, pod, result) -> PostFilterResult:
        """A node and victims, or kube's reason why not ("preemption: ..."): not eligible, or
        the statuses of the nodes it tried as a fit message, every node it could not try
        (preemption cannot cure its rejection) counted as not helpful."""
        out = PostFilterResult()
        if pod.preemption_policy == "Never":
            out.status = unschedulable(PREFIX + NEVER)
            return out
        handle = self.handle
        table = handle.table
        unfixable = result.diagnosis.unresolvable_rows(result.state, pod, table)
        if self._victims_still_terminating(table, pod, unfixable):
            out.status = unschedulable(PREFIX + TERMINATING)
            return out
        possible = np.ones(len(table), dtype=bool)
        possible[unfixable] = False
        rows = np.flatnonzero(possible)
        tried: Counter = Counter()
        if len(rows) and handle.lowest_priority() < pod.priority:
            if self._search(state, pod, rows, out, tried):
                return out
        else:  # no pod of lower priority anywhere: every dry run would find no victim
            tried[NO_VICTIMS] = len(rows)
        tried[NOT_HELPFUL] += len(table) - len(rows)
        out.status = unschedulable(PREFIX + fit_message(len(table), +tried))
        return out

    def _search(self, state, pod, rows, out: PostFilterResult, tried: Counter) -> bool:
        """Dry runs from a random offset until enough candidates are found, then the
        extenders' say on them; True when `out` got a node, or the extenders' verdict. Otherwise `tried` counts the reasons of every node tried (pruned ones
        included, with the reason their dry run would have given)."""
        handle = self.handle
        table = handle.table
        wanted = min(len(rows), max(len(rows) * self.args["minCandidateNodesPercentage"] // 100,
                                    self.args["minCandidateNodesAbsolute"]))
        offset = handle.rng.randrange(len(rows))
        rows = np.concatenate((rows[offset:], rows[:offset]))
        pruned, room = None, None
        if handle.preemption_pruning:
            room = Room(table, pod)
            keep = room.enough(rows)
            out.pruned = len(rows) - int(keep.sum())
            if out.pruned:
                pruned = np.zeros(len(table), dtype=bool)
                pruned[rows[~keep]] = True
                rows = rows[keep]
        budgets = handle.budgets()
        candidates = []
        for row in rows:
            cand, failure = self.dry_run(state, pod, table.infos[row], budgets)
            if cand is None:
                tried.update(failure.reasons)
                continue
            if not cand.victims:  # fits once its nominated pods are accounted for: take it
                out.node = cand.node
                return True
            candidates.append(cand)
            if len(candidates) >= wanted:
                break
        if not candidates:
            if pruned is not None:
                self._explain_pruned(state, pod, pruned, room, budgets, tried)
            return False
        candidates = self._through_extenders(pod, candidates, out)
        if not candidates:  # the extenders kept none, or one failed (out.status says which)
            return True
        best = min(candidates, key=Candidate.rank)
        out.node, out.victims = best.node, best.victims
        return True

    def _through_extenders(self, pod, candidates: list, out: PostFilterResult) -> list:
        """The candidates the preempting extenders keep, with the victims they chose (kube's
        callExtenders); none left sets kube's "no candidate node for preemption", an
        extender's error sets that error, on `out`."""
        try:
            kept = self.handle.preempt_through_extenders(
                pod, {c.node: (c.victims, c.pdb_violations) for c in candidates})
        except ExtenderError as e:
            out.status = Status(ERROR, PREFIX + str(e))
            return []
        if not kept:
            out.status = unschedulable(PREFIX + NO_CANDIDATE)
            return []
        return [c if (c.victims, c.pdb_violations) == kept[c.node] else
                Candidate(c.node, sorted(kept[c.node][0], key=lambda p: (-p.priority, p.start_time)),
                          kept[c.node][1]) for c in candidates if c.node in kept]

    def _explain_pruned(self, state, pod, pruned: np.ndarray, room: "Room", budgets, tried: Counter) -> None:
        """What the dry runs pruning skipped (`pruned`, a mask over the rows) would have said
        (kube runs them all when it finds no candidate): no victim on a node without
        lower-priority pods; else the first filter still failing with them gone, NodePorts
        before NodeResourcesFit, and the resources short. From the columns pruning read, in
        whole-column passes, but for nodes holding nominated pods (dry-run for real) and, for a
        pod with host ports, the port check."""
        handle = self.handle
        table = handle.table
        has_lower = room.lower[:, PODS] > 0
        tried[NO_VICTIMS] += int(np.count_nonzero(pruned & ~has_lower))
        rest = pruned & has_lower
        if handle.has_nominated() or pod.host_ports:
            names, infos = table.names, table.infos
            for row in np.flatnonzero(rest):
                if handle.nominated_on(pod, names[row]):
                    tried.update(self.dry_run(state, pod, infos[row], budgets)[1].reasons)
                elif pod.host_ports and host_ports_conflict(pod.host_ports, _ports_kept(infos[row], pod.priority)):
                    tried[PORTS_IN_USE] += 1
                else:
                    continue
                rest[row] = False
        for c, n in zip(room.cols, room.short(rest)):
            if n:
                tried[insufficient(int(c))] += int(n)

    def dry_run(self, state, pod, info, budgets: Budgets):
        """(the candidate, None), or (None, the failing filter's status) when even evicting
        every lower pod is not enough, or (None, NO_VICTIMS) when there is no lower pod (pods
        that placed pod groups need are not offered: see _group_safe)."""
        handle = self.handle
        lower = [p for p in info.pods.values() if p.priority < pod.priority]
        if lower and handle.groups.group_of:
            lower = self._group_safe(pod, lower)
        if not lower:
            return None, unschedulable(NO_VICTIMS)
        scratch = info.scratch()
        st = state.clone()
        for v in lower:
            handle.remove_pod(st, pod, v, scratch)
        failure = handle.filter_with_nominated(st, pod, scratch)
        if failure is not None:
            return None, failure
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
            return None, unschedulable(NO_VICTIMS)  # it would take too many from one placed group
        return Candidate(info.name, victims, broken), None

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


def _ports_kept(info, priority: int) -> list:
    """Host ports in use on the node by pods preemption may not evict."""
    return [port for p in info.pods.values() if p.priority >= priority for port in p.host_ports]


class Room:
    """Per node, what evicting every pod below the preemptor's priority would leave free, in
    the columns it requests (pod count included): pruning drops the nodes where that is not
    enough, and the reasons their dry runs would give come from the same numbers."""

    def __init__(self, table, pod):
        req = np.asarray(pod.requests, dtype=np.int64)
        self.cols = np.flatnonzero(req)
        self.req = req[self.cols]
        n = len(table)
        self.lower = table.releasable(pod.priority)
        self.room = table.free[:n, self.cols] + self.lower[:, self.cols]  # every row: cheaper than gathering

    def enough(self, rows: np.ndarray) -> np.ndarray:
        """Mask over `rows`: the nodes that could be candidates."""
        return (self.room >= self.req).all(axis=1)[rows]

    def short(self, rows: np.ndarray) -> np.ndarray:
        """Per requested column, how many of the rows `rows` (a mask) select lack it even with
        the lower pods gone."""
        return ((self.room < self.req) & rows[:, None]).sum(axis=0)
