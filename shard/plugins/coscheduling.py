"""Coscheduling: pods of a PodGroup placed all or nothing (scheduler-plugins' plugin).

The rules and messages are scheduler-plugins' (pkg/coscheduling):

* QueueSort: higher priority first; then a group's members by the group's time in the queue
  (when its first member was queued here, or its last failure, so a failing group does not
  block the head of the queue), next to each other, by name; pods outside a group by the time
  they were queued, as PrioritySort.
* PreFilter refuses, as UnschedulableAndUnresolvable (no preemption): a member of a group that
  failed within podGroupBackoffSeconds; a member of a group with fewer pods than minMember
  (or too many of them gated); a member of a group whose minResources exceed what the
  cluster could free (free room plus all that pods of lower priority hold; the group's own
  placed members count as free), checked once per permitWaitingTimeSeconds.
* Reserve counts the member as placed; Permit allows it once minMember of the group are
  placed or bound, and with it every member waiting, else it waits (the group's
  scheduleTimeoutSeconds, else permitWaitingTimeSeconds). The shard then commits the
  members that were waiting and the one that completed the group as one unit, which its
  binder binds all or nothing (common/scheduling/group_commit.py).
* Unreserve (a member timed out, was rejected, or its unit was refused) rejects every
  member still waiting, so the group's assumptions are all released; the loop then backs
  off the members as one.
* PostFilter, after preemption failed for a member, rejects the waiting members unless the
  group already has its quorum or lacks at most podGroupRejectPercentage of it.

With several binder partitions (binders.count > 1) a unit is committed by one binder, so
the members placed while the group waits pin the rest to their partition; a partition where
the group failed is avoided on the next attempt while others remain.
"""
from __future__ import annotations

import numpy as np

from common.scheduling.partition import partition_of
from common.plugins import coscheduling
from common.model.podgroup import NATIVE_PREFIX, format_resources, group_key as any_group_key
from common.model.resources import PODS, padded
from ..framework import SKIP, Plugin, PostFilterResult, Status, unresolvable, unschedulable
from ..waiting import Wait

OTHER_PARTITION = "node(s) were in another binder partition than their pod group's placed members"
TRIED_PARTITION = "node(s) were in a binder partition where their pod group failed"


def group_key(pod) -> str | None:
    """The scheduler-plugins PodGroup `pod` is in (kube's own PodGroups are GangScheduling's)."""
    key = any_group_key(pod)
    return None if key is None or key.startswith(NATIVE_PREFIX) else key


class Coscheduling(Plugin, coscheduling.Coscheduling):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        self.wait_s = self.args["permitWaitingTimeSeconds"]  # checked by common.config.plugin_args
        self.backoff_s = self.args["podGroupBackoffSeconds"]
        self.reject_fraction = self.args["podGroupRejectPercentage"] / 100
        #: group -> pod key -> (node, partition) of members assumed here (waiting or in flight)
        self.placed: dict[str, dict[str, tuple]] = {}
        #: group -> its time in the queue order: first seen, or its last failure
        self.since: dict[str, float] = {}
        self.backed_off: dict[str, float] = {}   # group -> until when its members are refused
        self.permitted: dict[str, float] = {}    # group -> until when minResources passed
        self.tried: dict[str, set] = {}          # group -> partitions it failed in
        self._partitions: dict[str, tuple] = {}  # node name -> (node object, its partition)

    # --- QueueSort ------------------------------------------------------------------------

    def less(self, a, b) -> bool:
        """The queue's order. A heap's push and pop compare a pod with twenty-odd others, so
        the common case, two pods of equal priority in no group, is told from their group
        keys alone, without building both pods' order tuples (benchmarks.cycle's queue_sort)."""
        pa, pb = a.pod, b.pod
        if pa.priority != pb.priority:
            return pa.priority > pb.priority
        if group_key(pa) is None and group_key(pb) is None:
            return a.queued_at < b.queued_at  # PrioritySort's order (arrival breaks ties)
        oa, ob = self._order(a), self._order(b)
        if not oa[2] and not ob[2]:  # neither in a group that exists (one names a missing one): arrival order
            return a.queued_at < b.queued_at
        return oa < ob

    def _order(self, entry) -> tuple:
        key = group_key(entry.pod)
        if key is None or key not in self.handle.groups.groups:
            return (entry.queued_at, entry.pod.key, "")
        since = self.since.get(key)
        if since is None:
            since = self.since[key] = entry.queued_at
        return (since, key, entry.pod.key)

    # --- PreFilter and Filter -------------------------------------------------------------

    def pre_filter(self, state, pod):
        key = group_key(pod)
        group = self.handle.groups.get(key)
        if group is None:
            return Status(SKIP)  # not in a group, or its PodGroup is missing (Permit says so)
        if len(self.since) > 2 * len(self.handle.groups.groups) + 64:
            self._tidy()
        now = self.handle.now()
        if self.backed_off.get(key, 0.0) > now:
            return unresolvable(f"podGroup {key} failed recently")
        counts = self.handle.groups.counts(key)
        if counts.total < group.min_member:
            return unresolvable(f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods "
                                f"number: {counts.total}, minMember of group: {group.min_member}")
        if counts.total - counts.gated < group.min_member:
            return unresolvable(f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup")
        if any(group.min_resources) and self.permitted.get(key, 0.0) <= now:
            gap = self._resource_gap(key, group, pod)
            if gap is not None:
                return unresolvable(f"resource gap: {format_resources(gap)}")
            self.permitted[key] = now + group.wait_seconds(self.wait_s)
        rule = self._partition_rule(key)
        if rule is None:
            return Status(SKIP)
        state[self.name] = rule
        return None

    def _resource_gap(self, key: str, group, pod):
        """What minResources (with minMember pod slots) lacks beyond all the cluster could
        free for `pod`, as a vector (None when nothing lacks)."""
        table = self.handle.table
        n = len(table)
        room = np.maximum(table.free[:n], 0) + table.releasable(pod.priority)
        width = max(room.shape[1], len(group.min_resources))
        have = np.asarray(padded(tuple(int(x) for x in room.sum(axis=0)), width), dtype=np.int64)
        for member in self.handle.groups.members.get(key, {}):
            counted = self.handle.counted(member)
            if counted is not None and counted.priority >= pod.priority:  # its room is the group's own
                have = have + np.asarray(padded(counted.requests, width)[:width], dtype=np.int64)
        want = np.asarray(padded(group.min_resources, width), dtype=np.int64)
        want[PODS] = group.min_member
        gap = want - have
        return tuple(int(x) for x in np.maximum(gap, 0)) if (gap > 0).any() else None

    def _partition_rule(self, key: str):
        """("in", p) while members wait placed in partition p; ("not", tried) after failures
        in some partitions; None when any node will do (one partition, or a fresh start)."""
        count, _ = self.handle.partitioning
        if count <= 1:
            return None
        placed = self.placed.get(key)
        if placed:
            return ("in", next(iter(placed.values()))[1])
        tried = self.tried.get(key)
        if tried and len(tried) < count:
            return ("not", frozenset(tried))
        return None

    def filter(self, state, pod, info):
        rule = state.get(self.name)
        if rule is None:
            return None
        p = self._partition_of(info.name, info.node)
        if rule[0] == "in" and p != rule[1]:
            return unresolvable(OTHER_PARTITION)
        if rule[0] == "not" and p in rule[1]:
            return unresolvable(TRIED_PARTITION)
        return None

    def _partition_of(self, name: str, node) -> int:
        known = self._partitions.get(name)
        if known is not None and known[0] is node:
            return known[1]
        count, label = self.handle.partitioning
        p = partition_of(node if node is not None else name, count, label)
        self._partitions[name] = (node, p)
        return p

    # --- PostFilter -----------------------------------------------------------------------

    def post_filter(self, state, pod, result) -> PostFilterResult:
        out = PostFilterResult()
        key = group_key(pod)
        group = self.handle.groups.get(key)
        if group is None:
            # scheduler-plugins says "can not find pod group" here; a pod outside any group
            # gets kube-scheduler's own message instead, word for word.
            return out
        if self.backed_off.get(key, 0.0) > self.handle.now():
            # Rejected already (PreFilter said so): rejecting it again would push its
            # backoff further each time a member retries, and a member's own backoff is
            # shorter than a group's can be (scheduler-plugins does extend it).
            out.status = unschedulable()
            return out
        assigned = self.assigned(key)
        if assigned >= group.min_member:
            out.status = unschedulable()
            return out
        if (group.min_member - assigned) / group.min_member <= self.reject_fraction:
            out.status = unschedulable()  # nearly there: let the next members try
            return out
        self._reject_waiting(key, "optimistic rejection in PostFilter")
        if self.backoff_s and self.handle.groups.counts(key).total >= group.min_member:
            self.backed_off[key] = self.handle.now() + self.backoff_s
        self._failed(key)
        out.status = unschedulable(f"PodGroup {key} gets rejected due to Pod {pod.name} is unschedulable "
                                   f"even after PostFilter")
        return out

    # --- Reserve, Permit, Unreserve -------------------------------------------------------

    def reserve(self, state, pod, node_name: str):
        key = group_key(pod)
        if key is not None and key in self.handle.groups.groups:
            table = self.handle.table
            row = table.row_of.get(node_name)
            node = table.infos[row].node if row is not None else None
            self.placed.setdefault(key, {})[pod.key] = (node_name, self._partition_of(node_name, node))
        return None

    def permit(self, state, pod, node_name: str):
        key = group_key(pod)
        if key is None:
            return None
        group = self.handle.groups.get(key)
        if group is None:
            return unschedulable("PodGroup not found")
        if self.assigned(key) >= group.min_member:
            waiting = self.handle.waiting
            for other in waiting.in_unit(key):
                waiting.allow(other, self.name)
            self.tried.pop(key, None)
            return None
        return Wait(group.wait_seconds(self.wait_s))

    def unreserve(self, state, pod, node_name: str) -> None:
        key = group_key(pod)
        if key is None:
            return
        placed = self.placed.get(key)
        if placed is not None:
            where = placed.pop(pod.key, None)
            if not placed:
                del self.placed[key]
            if where is not None and self.handle.partitioning[0] > 1 and self.assigned(key) < self._quorum(key):
                self.tried.setdefault(key, set()).add(where[1])
        self._reject_waiting(key, "rejection in Unreserve")
        self._failed(key)

    # --- the group's counts ----------------------------------------------------------------

    def assigned(self, key: str) -> int:
        """Members bound (as the watch shows them) or placed here: scheduler-plugins'
        assigned pods. A placed member the watch shows bound or gone is no longer ours to
        count, and is forgotten."""
        members = self.handle.groups.members.get(key, {})
        placed = self.placed.get(key, {})
        for k in [k for k in placed if k not in members or members[k].node is not None]:
            del placed[k]
        if not placed:
            self.placed.pop(key, None)
        return sum(1 for m in members.values() if m.node is not None and m.live) + len(placed)

    def _quorum(self, key: str) -> int:
        group = self.handle.groups.get(key)
        return group.min_member if group is not None else 0

    def _reject_waiting(self, key: str, message: str) -> None:
        waiting = self.handle.waiting
        for other in waiting.in_unit(key):
            waiting.reject(other, self.name, message)

    def _failed(self, key: str) -> None:
        """Forget the minResources pass and move the group behind what is queued now."""
        self.permitted.pop(key, None)
        self.since[key] = self.handle.now()

    def _tidy(self) -> None:
        """Drop what is kept about PodGroups that are gone (now and then, not per cycle)."""
        groups = self.handle.groups.groups
        for d in (self.since, self.backed_off, self.permitted, self.tried):
            for key in [k for k in d if k not in groups]:
                del d[key]
