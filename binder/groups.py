"""The binder's side of gang scheduling: pod groups are bound all or nothing.

* **The unit rule.** A pod of a PodGroup, under a profile that schedules groups
  (Coscheduling), is bound only within a unit that completes its group: the members bound
  already plus the unit's must reach minMember. A shard sends a waiting group's members as
  one GroupDecision; a member that comes once the group has its quorum arrives alone, a
  unit of one. The PodGroup must exist. So no shard, however wrong, makes the binder leave a
  group partly bound.
* **Judging a unit.** Each member is judged as a lone decision would be (common/scheduling/checks.py)
  with the members before it already reserved, so the unit is checked as if it were bound at
  once; the first refusal releases every reservation of the unit and refuses all members
  (the failing one with its reason, the others with "GroupRefused: <member>: <reason>").
* **Victims.** None belongs to a group whose priority is not below the preemptor's, and
  the victims of every decision in flight together never take a group below its minMember
  (common.model.podgroup.victims_break_group): preemption never breaks a placed gang.
* **Committing.** common/scheduling/group_commit.py: the intent on the PodGroup, the bindings, the
  intent removed (a failed binding rolls the unit back).
* **Recovery** (`IntentRecovery`). A binder that takes a partition over first resolves
  every intent left on a group of that partition (a binder died mid-commit); it also
  resolves, now and then, intents on its partitions that no commit of its own is carrying
  out and that have stayed for longer than a commit can take (a commit whose store calls
  failed half way). Rolling forward binds the pending members only if each still passes the
  checks against this binder's view; otherwise the intent is rolled back.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from common.scheduling.checks import Judged, first_failure
from common.model.podgroup import (INTENT_ANNOTATION, KIND, NATIVE_KIND, Intent, group_key, index_key_of, store_ref,
                                   victims_break_group)
from .view import Reservation

log = logging.getLogger(__name__)


class GroupRules:
    def __init__(self, view, gang_names: dict):
        """`gang_names`: PodGroup store kind -> the schedulerNames whose profile schedules
        groups of that kind (Coscheduling's, GangScheduling's)."""
        self.view = view
        self.gang_names = gang_names

    def unit_failure(self, pod, size: int) -> str | None:
        """Why a unit of `size` members with `pod` cannot be bound, or None."""
        key = group_key(pod)
        if key is None:
            return None
        kind, name = store_ref(key)
        if pod.scheduler_name not in self.gang_names.get(kind, ()):
            return None
        plugin = "Coscheduling" if kind == KIND else "GangScheduling"
        groups = self.view.groups
        group = groups.get(key)
        if group is None:
            return f"{plugin}: PodGroup {name} not found"
        bound = groups.counts(key).bound
        if bound + size < group.min_member:
            quorum = "minMember" if kind == KIND else "minCount"
            return (f"{plugin}: pod group {name} has {bound} member(s) bound; a unit of {size} does not "
                    f"make up its {quorum} {group.min_member}")
        return None

    def victims_failure(self, pod, victims) -> str | None:
        if not victims or not self.view.groups.groups:
            return None
        view = self.view
        already: dict[str, int] = {}
        for victim, claimant in view.claimed.items():
            key = view.groups.group_of.get(victim)
            if key is not None and claimant != pod.key:
                already[key] = already.get(key, 0) + 1
        why = victims_break_group(victims, view.groups, pod.priority, view.priority_of, already)
        return None if why is None else f"InvalidVictim: {why}"


class GroupPending:
    """A reserved unit waiting for its commit, and where its members' outcomes go."""

    __slots__ = ("group", "reservations", "reply", "shard")

    def __init__(self, group: str, reservations: list, reply, shard: str):
        self.group, self.reservations, self.reply, self.shard = group, reservations, reply, shard

    @property
    def partition(self) -> int:
        return self.reservations[0].partition


def judge_unit(gd, judge, view, rules: GroupRules, may_wait: bool):
    """A GroupDecision judged member by member; returns the reservations (all made), None to
    wait for the watch (nothing reserved), or (member key, reason) for the first refusal
    (nothing reserved)."""
    reserved: list[Reservation] = []

    def release() -> None:
        for r in reserved:
            view.settle(r.pod.key, "refused")

    def refuse(key: str, why: str):
        release()
        return key, why

    if not gd.members:
        return "", "InvalidGroup: a group decision without members"
    seen = set()
    for d in gd.members:
        if d.pod_key in seen:
            return refuse(d.pod_key, f"InvalidGroup: {d.pod_key} is named twice")
        seen.add(d.pod_key)
        verdict = judge(d, may_wait)
        if verdict is None:
            release()
            return None
        if isinstance(verdict, str):
            return refuse(d.pod_key, verdict)
        if group_key(verdict.pod) != gd.group:
            return refuse(d.pod_key, f"InvalidGroup: {d.pod_key} is not in pod group {gd.group}")
        if reserved and verdict.partition != reserved[0].partition:
            return refuse(d.pod_key, f"InvalidGroup: {d.pod_key} is in partition {verdict.partition}, "
                                     f"the group's first member in {reserved[0].partition}")
        view.reserve(verdict)
        reserved.append(verdict)
    why = rules.unit_failure(reserved[0].pod, len(reserved))
    if why is not None:
        return refuse(reserved[0].pod.key, why)
    return reserved


class IntentRecovery:
    """Resolves the binding intents a crashed or failed group commit left (see the module
    doc). Runs in the binder's partition thread."""

    def __init__(self, store, commit, view, lock, checks_for, in_flight, grace_s: float, clock=time.monotonic):
        """`commit`: the binder's GroupCommit; `checks_for(pod)`: the checks of the pod's
        profile; `in_flight()`:
        the groups its own commits are working on; `grace_s`: how long an intent may stay
        before it counts as orphaned."""
        self.store = store
        self.commit = commit
        self.view = view
        self.lock = lock
        self.checks_for = checks_for
        self.in_flight = in_flight
        self.grace_s = grace_s
        self.clock = clock
        self.first_seen: dict[tuple, float] = {}  # (group, intent text) -> when first seen

    def on_acquire(self, partition: int) -> int:
        """Resolve every intent of `partition` (read afresh from the store) before this
        binder takes decisions for it; returns how many."""
        done = 0
        # both kinds' lists at once: at start-up this is on the way to the first binding (the
        # shards' decisions wait for a holder), and each is a round trip or two on kube://
        with ThreadPoolExecutor(2, thread_name_prefix="intents") as pool:
            listed = list(pool.map(lambda kind: self.store.list(kind)[0], (KIND, NATIVE_KIND)))
        for obj in [o for objs in listed for o in objs]:
            key, intent = self._intent(obj)
            if intent is not None and intent.partition == partition:
                self.resolve(key, partition)
                done += 1
        return done

    def sweep(self, held) -> int:
        """Resolve intents on partitions in `held` left for longer than the grace time by
        commits that are not this binder's in flight."""
        now = self.clock()
        with self.lock:
            found = [(k, g.intent_json) for k, g in self.view.groups.groups.items() if g.intent_json]
        busy = self.in_flight()
        seen = {}
        done = 0
        for key, text in found:
            since = seen[(key, text)] = self.first_seen.get((key, text), now)
            if key in busy or now - since < self.grace_s:
                continue
            intent = self._decode(key, text)
            if intent is not None and intent.partition in held:
                self.resolve(key, intent.partition)
                done += 1
        self.first_seen = seen
        return done

    def resolve(self, key: str, partition: int) -> str:
        reserved: list[str] = []

        def admit(pending):
            with self.lock:
                for pod_key, _, node in pending:
                    pod = self.view.pending_pod(pod_key)
                    why = (f"{pod_key} is not a pending pod in the binder's view" if pod is None
                           else first_failure(Judged(self.view, pod, node), self.checks_for(pod)))
                    if why is not None:
                        for k in reserved:
                            self.view.settle(k, "refused")
                        reserved.clear()
                        return why
                    self.view.reserve(Reservation(pod, node, [], set(), partition))
                    reserved.append(pod_key)
            return None

        how = "doubt"  # the store failed half way: counted until the watch shows what landed
        try:
            outcome = self.commit.resolve(key, admit)
            how = "bound" if outcome == "forward" else "refused"
            return outcome
        finally:
            with self.lock:
                for k in reserved:
                    self.view.settle(k, how)

    def _intent(self, obj: dict):
        key = index_key_of(obj)
        text = ((obj.get("metadata") or {}).get("annotations") or {}).get(INTENT_ANNOTATION)
        return key, (self._decode(key, text) if text else None)

    @staticmethod
    def _decode(key: str, text: str) -> Intent | None:
        try:
            return Intent.parse(text)
        except ValueError as e:
            log.error("PodGroup %s: unreadable binding intent (resolved as none): %s", key, e)
            return None
