"""One shard's scheduling loop over a cluster store, without any networking.

It follows the store through its intake (shard.intake: the cache, the queue, the pods it
owns, kept current by the store's events) and runs cycles: pop a pod, schedule it, assume
it, run Reserve and Permit, then hand the decision to its committer. Two collaborators,
given at construction, make the difference between the shard server and `shardsched
simulate`:

* which pods it owns: `DispatchedPods` (the server: what the dispatcher handed over) or
  `ProfileOwnership` (every pending pod whose schedulerName names a profile), both in
  shard.intake;
* how a decision is committed: the server sends it to a binder and reports the outcome later
  through `finish_binding`; `StoreCommitter` (shard.store_committer) evicts the victims and
  runs the profile's Bind plugins at once, in this thread.
"""
from __future__ import annotations

import logging
import time

from common.scheduling.disruption import VICTIMS_TERMINATING
from common.model.podgroup import GANG, NATIVE_KIND, gave_up, group_key
from common.scheduling.pools import pool_of
from . import queueing_hints as hints
from .cache import ShardCache
from .framework import ERROR, SUCCESS
from .intake import ProfileOwnership, ShardIntake
from .queue import SchedulingQueue
from .scheduler import Scheduler
from .store_committer import StoreCommitter
from .waiting import Wait

log = logging.getLogger(__name__)


class ShardLoop:
    def __init__(self, cfg, store, seed: int = 0, *, owner=None, committer=None,
                 clock=time.monotonic, **scheduler_opts):
        """`owner`: ProfileOwnership (the default) or DispatchedPods; `committer`: an object
        whose `commit(entry, result, budgets)` returns "" (bound), the reason it was not, or
        None when the outcome will come later through `finish_binding`, and may keep those
        decisions by pod key in `in_flight` (default: StoreCommitter on `store`)."""
        shards = cfg.shards
        self.store = store
        self.clock = clock
        self.owner = owner if owner is not None else ProfileOwnership(cfg)
        self.committer = committer if committer is not None else StoreCommitter(store)
        self.cache = ShardCache(shards.assume_ttl_seconds, clock)
        self.scheduler = Scheduler(cfg, self.cache, store, seed, clock=clock, **scheduler_opts)
        first = next(iter(self.scheduler.profiles.values()))
        label = cfg.sub_clusters.label
        self.queue = SchedulingQueue(first.less, shards.pod_initial_backoff_seconds,
                                     shards.pod_max_backoff_seconds, shards.unschedulable_max_seconds,
                                     clock, pool_of=(lambda pod: pool_of(pod, label)) if label else None)
        self.waiting = self.scheduler.waiting
        self.pdbs = self.scheduler.pdbs
        self.groups = self.scheduler.groups
        self.messages: dict[str, str] = {}  # pod key -> last unschedulable message
        #: what the shard keeps of the store (shard.intake), and its parts the cycles use
        self.intake = ShardIntake(store, self.cache, self.queue, self.scheduler, self.owner,
                                  cfg.store.watch_linger_seconds)
        self.informer = self.intake.informer
        self.apply = self.intake.apply
        self.profile_for = self.intake.profile_for
        self.pods, self.claimed, self.gated = self.intake.pods, self.intake.claimed, self.intake.gated
        self.errors = self.intake.errors

    # --- keeping up with the store ------------------------------------------------------------

    def start(self) -> None:
        """Initial list of every kind; later changes come from `sync()`."""
        self.informer.start()

    def sync(self, timeout: float = 0.0, latest: bool = False, max_events: int = 10000) -> int:
        """Apply the store's events since the last sync; relists if history was trimmed.
        `latest`: each object's last event only (common.runtime.informer.Informer.sync), while
        catching up after the initial list, before any pod is this shard's to schedule."""
        n = self.informer.sync(timeout, max_events, latest=latest)
        self._expire_assumptions()
        return n

    def _pending_in_watch(self, key: str) -> bool:
        known = self.pods.get(key)
        return known is not None and not known.node_name and not known.deleting

    def _expire_assumptions(self) -> None:
        """Forget assumptions the watch never confirmed; a pod among them that is still ours
        and pending in the watch is scheduled again. Its binding was lost: the store came back
        from a snapshot older than it while this watch had not got that far (so it saw no gap
        and did not relist). Left alone it stayed held here, and the dispatcher, seeing it
        held, never handed it to anyone else."""
        in_flight = getattr(self.committer, "in_flight", ())
        expired = self.cache.expire()
        if expired:  # their room is free again for whoever waits (kube: AssignedPodDelete)
            self.queue.move_all_to_active(event="AssignedPodDelete")
        for key in expired:
            known = self.pods.get(key)
            if (not self._pending_in_watch(key) or not self.owner.owns(known)
                    or key in self.queue or key in self.waiting or key in in_flight):
                continue  # (a decision in flight is settled by its outcome: _bound or _undo)
            log.warning("the binding of %s never showed up in the watch within %.0f s (did the store "
                        "roll back?): scheduling it again", key, self.cache.assume_ttl)
            self.intake.enqueue(known)

    # --- cycles -------------------------------------------------------------------------------

    def schedule_next(self):
        """One cycle for the next pod in activeQ; None when activeQ is empty."""
        entry = self.queue.pop()
        while entry is not None and self.intake.held_back(entry.pod):
            entry = self.queue.pop()
        if entry is None:
            return None
        self._expire_assumptions()
        t = time.perf_counter()
        cloned = self.scheduler.refresh()
        snapshot_s = time.perf_counter() - t
        pod = entry.pod
        result = self.scheduler.schedule(pod, queued=len(self.queue), last_generation=entry.last_generation,
                                         profile=self.profile_for(pod))
        result.snapshot_s, result.cloned = snapshot_s, cloned
        if result.scheduled:
            self._commit(entry, result)
        else:
            gang = self._native_gang(pod, result.profile)
            self.messages[pod.key] = self.scheduler.explain(result, post_filter=gang is None)
            if result.status.code == ERROR:  # an extender failed: retried after a backoff, as kube
                self.queue.requeue_backoff(entry)
                return result
            # Nodes the scheduling context skipped were turned down by last time's rejectors.
            rejectors = result.rejectors | (entry.rejectors if result.skipped_by_context else frozenset())
            self.queue.requeue_unschedulable(entry, self.cache.nodes.generation if result.context_safe else 0,
                                             rejectors)
            if gang is not None:
                result.released = self.group_failed(entry, gang)
        return result

    def _native_gang(self, pod, prof):
        """The kube PodGroup with a gang policy `pod` is in, when the profile runs
        GangScheduling; else None."""
        group = self.groups.get(group_key(pod))
        if group is None or group.kind != NATIVE_KIND or group.policy != GANG or group.kind not in prof.gang:
            return None
        return group

    def group_failed(self, entry, group) -> list[str]:
        """After a member of kube PodGroup `group` (a gang) failed its cycle: when the members
        still to try cannot make up minCount with those scheduled (bound, or waiting at
        Permit), give up on the group as kube v1.37's pod-group cycle does: the waiting
        members are released and the queued ones back off with the failed one, with kube's
        messages (podgroup.gave_up). Returns the keys of the members given one, whose
        conditions the shard server writes as kube-scheduler writes every member's."""
        unit = group.index_key
        members = self.groups.members.get(unit, {})
        placed = [k for k, m in members.items() if m.live and (m.node is not None or self.cache.counted(k) is not None)]
        remaining = [k for k, m in members.items() if m.live and k != entry.pod.key and k not in placed
                     and k in self.queue and k not in self.gated]
        if len(placed) + len(remaining) >= group.min_member:
            return []  # the members still to try may make it
        placed_why, untried_why = gave_up(group.min_member, len(placed), len(remaining))
        waiting = [self.waiting.pods.pop(k) for k in self.waiting.in_unit(unit)]
        for wp in waiting:
            self._undo(wp.entry, wp.result.profile, wp.result.state, wp.result.node, placed_why)
        for k in remaining:
            self.messages[k] = untried_why
        self.queue.hold_back(remaining, entry.backoff_until)
        return [wp.entry.pod.key for wp in waiting] + remaining

    def _commit(self, entry, result) -> None:
        """Assume, Reserve and Permit; then the binding cycle, unless Permit said wait. A
        member of a pod group is committed with the members that waited for it (its unit)."""
        pod, node, prof, state = entry.pod, result.node, result.profile, result.state
        unit = self._unit(pod, prof)
        if result.victims:
            self._clear_lower_nominations(pod, node)
            if unit is not None:
                self._claim(pod, result.victims)
        self.cache.assume(pod, node)
        for p in prof.reserve:
            st = p.reserve(state, pod, node)
            if st is not None and st.code != SUCCESS:
                self._undo(entry, prof, state, node, f"{p.name}: {st.message()}")
                return
        waits = {}
        for p in prof.permit:
            st = p.permit(state, pod, node)
            if isinstance(st, Wait):
                waits[p.name] = st
            elif st is not None and st.code != SUCCESS:
                self._undo(entry, prof, state, node, f"{p.name}: {st.message()}")
                return
        if waits:
            self.waiting.hold(entry, result, waits, unit)
            # Its assumption lasts as long as it may wait, and its siblings are tried now.
            self.cache.hold(pod.key, max(w.timeout for w in waits.values()) + self.cache.assume_ttl)
            self.intake.wake_unit(unit)
            return
        if unit is None:
            self._bind(entry, result)
        else:
            self._bind_unit(unit, [(entry, result)] + [(wp.entry, wp.result) for wp in self.waiting.take_ready(unit)])

    def _unit(self, pod, prof) -> str | None:
        """The pod group `pod` is committed with: its group's key when the PodGroup exists,
        is a gang (a kube PodGroup may be `basic`) and the profile schedules groups of its
        kind (Coscheduling, GangScheduling)."""
        if not prof.gang:
            return None
        group = self.groups.get(group_key(pod))
        if group is None or group.kind not in prof.gang or group.policy != GANG:
            return None
        return group.index_key

    def release_waiting(self) -> int:
        """Bind the waiting pods every plugin allowed (a group's members as one unit); undo
        the rejected or timed-out ones, until no rejection leads to another."""
        done = 0
        while True:
            ready, rejected = self.waiting.due()
            units: dict = {}
            for wp in ready:
                units.setdefault(wp.unit, []).append(wp)
            for unit, wps in units.items():
                if unit is None:
                    for wp in wps:
                        self._bind(wp.entry, wp.result)
                else:
                    self._bind_unit(unit, [(wp.entry, wp.result) for wp in wps])
            for wp, why in rejected:
                self._undo(wp.entry, wp.result.profile, wp.result.state, wp.result.node, why)
            done += len(ready) + len(rejected)
            if not rejected:
                return done

    def _bind(self, entry, result) -> None:
        """The binding cycle: PreBind, then the committer (Bind, PostBind once bound)."""
        pod, node, prof, state = entry.pod, result.node, result.profile, result.state
        for p in prof.pre_bind:
            st = p.pre_bind(state, pod, node)
            if st is not None and st.code != SUCCESS:
                self._undo(entry, prof, state, node, f"{p.name}: {st.message()}")
                return
        why = self.committer.commit(entry, result, self.scheduler.budgets)
        if why is None:
            return  # the outcome comes through finish_binding
        if why:
            self._undo(entry, prof, state, node, why)
        else:
            self._bound(entry, result)

    def _bind_unit(self, unit: str, items: list) -> None:
        """The binding cycle of a pod group's unit: PreBind for each, then one commit of all
        (the committer binds them all or none); a PreBind failure fails the whole unit."""
        for entry, result in items:
            for p in result.profile.pre_bind:
                st = p.pre_bind(result.state, entry.pod, result.node)
                if st is not None and st.code != SUCCESS:
                    why = f"{p.name}: {st.message()}"
                    for e, r in items:
                        self._undo(e, r.profile, r.state, r.node, why if e is entry else
                                   f"GroupAborted: {entry.pod.key}: {why}")
                    return
        reasons = self.committer.commit_unit(unit, items, self.scheduler.budgets)
        if reasons is None:
            return  # the outcomes come through finish_binding
        for (entry, result), why in zip(items, reasons):
            if why:
                self._undo(entry, result.profile, result.state, result.node, why)
            else:
                self._bound(entry, result)

    def _claim(self, pod, victims) -> None:
        for v in victims:
            self.claimed[v.key] = pod.key
            self.cache.remove_pod(v.key)

    def _release_claims(self, pod_key: str, evicted: bool) -> None:
        """The unit of `pod_key` was bound (its victims are on their way out) or released
        (those still bound count again)."""
        if not self.claimed:
            return
        for key in [k for k, by in self.claimed.items() if by == pod_key]:
            del self.claimed[key]
            current = self.pods.get(key)
            if not evicted and current is not None and current.node_name:
                self.cache.set_pod(current)

    def units(self, keys=None) -> dict:
        """The pod groups this loop knows (or those of `keys`), as units: group key ->
        minMember, members, and how many are bound, assumed here (waiting or in flight) and
        waiting at Permit."""
        out = {}
        for key in (self.groups.groups if keys is None else keys):
            group = self.groups.groups.get(key)
            if group is None:
                continue
            members = self.groups.members.get(key, {})
            out[key] = {"minMember": group.min_member, "members": sorted(members),
                        "bound": sum(1 for m in members.values() if m.node is not None and m.live),
                        "assumed": sum(1 for k in members if self.cache.is_assumed(k)),
                        "waiting": len(self.waiting.in_unit(key))}
        return out

    def _clear_lower_nominations(self, pod, node: str) -> None:
        """The preemptor takes the room on `node`: lower-priority pods nominated there lose
        their claim (they would otherwise keep later pods off the freed space)."""
        for other in list(self.scheduler.nominated.get(node, {}).values()):
            if other.priority < pod.priority:
                self.store.set_nominated_node(other.key, None)

    def _bound(self, entry, result) -> None:
        pod = entry.pod
        # Counted until the watch shows the binding, for assume_ttl from now (kube's
        # FinishBinding); counted again if its assumption ran out while the binder decided.
        if self.cache.is_assumed(pod.key):
            self.cache.hold(pod.key, self.cache.assume_ttl)
        elif self.cache.counted(pod.key) is None and self._pending_in_watch(pod.key):
            self.cache.assume(pod, result.node)
        self._release_claims(pod.key, evicted=True)
        self.queue.done(pod.key)
        self.messages.pop(pod.key, None)
        for p in result.profile.post_bind:
            p.post_bind(result.state, pod, result.node)

    def finish_binding(self, entry, result, bound: bool, reason: str = "") -> None:
        """A binder's outcome for a decision the committer sent."""
        if bound:
            self._bound(entry, result)
            return
        if reason.startswith(VICTIMS_TERMINATING):
            # Its victims are on their way out: the nomination keeps their room from pods of
            # lower priority, and the retry binds the pod once they are gone.
            self.store.set_nominated_node(entry.pod.key, result.node)
        self._undo(entry, result.profile, result.state, result.node, f"binding rejected: {reason}")

    def take(self, key: str, uid: str, rv: str):
        """A pod the dispatcher handed to this loop: queue it as the watch shows it. True when
        taken (or bound already), None when the watch has not reached `rv` yet (ask again
        after the next sync), False when the store has no such pending pod."""
        self.owner.take(key)
        known = self.pods.get(key)
        if known is not None and (not uid or known.uid == uid):
            if not (known.node_name or known.deleting or key in self.queue or self.cache.is_assumed(key)
                    or key in self.waiting):
                self.intake.enqueue(known)  # taken back after a re-dispatch: schedule it again
            return True
        raw = self.intake.unowned_pod(key)
        if raw is not None and (not uid or (raw.get("metadata") or {}).get("uid") == uid):
            self.intake.apply_pod("MODIFIED", raw)
            return True
        if rv and not self.informer.seen("Pod", rv):
            return None
        self.owner.release(key)
        return False

    def drop(self, key: str) -> None:
        """Stop scheduling a pod (bound elsewhere, gone, or handed to another shard)."""
        self.queue.delete(key)
        self.gated.pop(key, None)
        self.owner.release(key)

    def gone(self, entry, result) -> None:
        """The binder says the pod is no longer ours (bound elsewhere, deleted, recreated):
        release what its decision held and stop scheduling it."""
        for p in reversed(result.profile.unreserve):
            p.unreserve(result.state, entry.pod, result.node)
        self._release_claims(entry.pod.key, evicted=False)
        self._forget(entry.pod.key)
        self.drop(entry.pod.key)

    def _forget(self, key: str) -> None:
        """Stop counting an assumed pod whose decision failed, and wake the parked pods its
        room may help, as kube-scheduler moves them on the assigned pod's deletion (they
        used to be sent round again only by the next update of their own status)."""
        counted = self.cache.counted(key) if self.cache.is_assumed(key) else None
        self.cache.forget(key)
        if counted is not None:
            self.queue.wake(hints.pod_left, counted, pools=self.intake.pools_on(counted.node_name))

    def _undo(self, entry, prof, state, node: str, why: str) -> None:
        for p in reversed(prof.unreserve):
            p.unreserve(state, entry.pod, node)
        self._release_claims(entry.pod.key, evicted=False)
        self._forget(entry.pod.key)
        self.messages[entry.pod.key] = why
        self.queue.requeue_backoff(entry)
        unit = self._unit(entry.pod, prof)
        if unit is not None and entry.pod.key in self.queue:
            # The group backs off as one: its queued members wait as long as this one.
            self.queue.hold_back([k for k in self.groups.members.get(unit, ()) if k != entry.pod.key],
                                 entry.backoff_until)
