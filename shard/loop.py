"""One shard's scheduling loop over a cluster store, without any networking.

It lists and watches the store, keeps the cache and the scheduling queue current, and runs
cycles: pop a pod, schedule it, assume it, run Reserve and Permit, then hand the decision to
its committer. Two collaborators, given at construction, make the difference between the
shard server and `shardsched simulate`:

* which pods it owns: `DispatchedPods` (the server: what the dispatcher handed over) or
  `ProfileOwnership` (every pending pod whose schedulerName names a profile);
* how a decision is committed: the server sends it to a binder and reports the outcome later
  through `finish_binding`; `StoreCommitter` evicts the victims and runs the profile's Bind
  plugins at once, in this thread.

Bad objects never stop it: a pod that cannot be parsed is recorded in `errors` and its
PodScheduled condition says why; everything else keeps flowing.
"""
from __future__ import annotations

import logging
import time

from common.changes import node_unchanged, pod_status_only
from common.disruption import VICTIMS_TERMINATING, eviction_failures, refusal
from common.errors import ObjectError
from common.group_commit import GroupCommit
from common.informer import Informer
from common.objects import CREATE_ORDER, object_key, parse_object, raw_pod_key
from common.podgroup import group_key, object_key_of
from common.plugin_names import VOLUME_BINDING
from common.volume_binding import TIMED_OUT, bindings_done, store_lookups, write_bindings
from common.volumes import counts_volumes
from .cache import ShardCache
from . import queueing_hints as hints
from .framework import SUCCESS
from .plugins.volume_binding import planned_volumes
from .queue import SchedulingQueue
from .scheduler import Scheduler
from .waiting import Wait

log = logging.getLogger(__name__)


class ProfileOwnership:
    """The loop owns every pending pod whose schedulerName names one of its profiles (and,
    with `accept_default`, default-scheduler's pods too)."""

    def __init__(self, cfg, accept_default: bool = False):
        self.names = {p.scheduler_name for p in cfg.profiles}
        if accept_default or cfg.dispatcher.also_default_scheduler:
            self.names.add("default-scheduler")

    def may_skip(self, key: str) -> bool:
        """Whether a pending pod under `key` can be passed over without parsing it."""
        return False

    def owns(self, pod) -> bool:
        return pod.scheduler_name in self.names

    def release(self, key: str) -> None:
        """The pod is no longer this loop's to schedule."""


class DispatchedPods:
    """The loop owns exactly the pods the dispatcher handed to it."""

    def __init__(self):
        self.keys: set[str] = set()

    def take(self, key: str) -> None:
        self.keys.add(key)

    def may_skip(self, key: str) -> bool:
        return key not in self.keys  # another shard's pending pod: nothing to count yet

    def owns(self, pod) -> bool:
        return pod.key in self.keys

    def release(self, key: str) -> None:
        self.keys.discard(key)


class StoreCommitter:
    """Commits a decision in the loop's own thread: checks the PodDisruptionBudgets, nominates
    the pod and evicts its victims, binds its volumes (VolumeBinding's PreBind), then runs the
    profile's Bind plugins. Used where no binder runs (`simulate`, tests); the same budget rule
    as the binder's applies, so the outcome is what the distributed scheduler would do."""

    def __init__(self, store, failpoint=None, provision=None):
        """`failpoint`: common.group_commit's hook, for tests that cut a group commit short;
        `provision`, when given, plays the storage controllers between writing a pod's volume
        bindings and checking they are done (simulate's common.provisioner)."""
        self.store = store
        self.groups = GroupCommit(store, "shard", failpoint)
        self.provision = provision
        #: victim pod key -> key of the pod that preempted it
        self.evicted_by: dict[str, str] = {}

    def commit(self, entry, result, budgets) -> str:
        """"" when bound, else why not (the loop undoes the pod's assumption with it)."""
        pod, node = entry.pod, result.node
        if result.victims:
            refused = refusal(result.victims, budgets())
            if refused is None:
                self.store.set_nominated_node(pod.key, node)
                reasons = self.store.evict_many([(v.key, v.uid or None) for v in result.victims])
                refused = eviction_failures((v.key for v in result.victims), reasons)
                for v, r in zip(result.victims, reasons):
                    if r is None:
                        self.evicted_by[v.key] = pod.key
            if refused is not None:
                return f"preemption failed: {refused}"
        plan = planned_volumes(result.state, node)
        if plan is not None:
            why = self._bind_volumes(plan, node)
            if why is not None:
                return f"{VOLUME_BINDING}: {why}"
        for p in result.profile.bind:
            st = p.bind(result.state, pod, node)
            if st is None:
                return ""
            if st.code != "Skip":
                return f"{p.name}: {st.message()}"
        return ""

    def commit_unit(self, unit: str, items: list, budgets) -> list[str]:
        """A pod group's unit: every member's victims evicted (or none, if the budgets
        refuse one), then all members bound or none (common.group_commit, which takes the
        place of the Bind plugins for a unit); one reason per member, "" when bound."""
        victims = [(entry.pod, v) for entry, result in items for v in result.victims]
        if victims:
            refused = refusal([v for _, v in victims], budgets())
            if refused is None:
                for entry, result in items:
                    if result.victims:
                        self.store.set_nominated_node(entry.pod.key, result.node)
                reasons = self.store.evict_many([(v.key, v.uid or None) for _, v in victims])
                refused = eviction_failures((v.key for _, v in victims), reasons)
                for (preemptor, v), r in zip(victims, reasons):
                    if r is None:
                        self.evicted_by[v.key] = preemptor.key
            if refused is not None:
                return [f"preemption failed: {refused}"] * len(items)
        results = self.groups.commit(unit, [(e.pod.key, e.pod.uid or "", r.node) for e, r in items])
        return [r or "" for r in results]


    def _bind_volumes(self, plan, node_name: str) -> str | None:
        """VolumeBinding's PreBind in place: write the bindings, let the provisioner act, and
        fail at once (rather than after bindTimeoutSeconds) unless the claims are bound."""
        written, why = write_bindings(self.store, plan, node_name)
        if why is not None:
            return why
        if self.provision is not None:
            self.provision()
        node = parse_object(self.store.get("Node", node_name) or {"kind": "Node", "metadata": {"name": node_name}})
        done, why = bindings_done(node, plan, written, *store_lookups(self.store))
        return None if done else (why or TIMED_OUT)


class ShardLoop:
    def __init__(self, cfg, store, seed: int = 0, *, owner=None, committer=None,
                 clock=time.monotonic, **scheduler_opts):
        """`owner`: ProfileOwnership (the default) or DispatchedPods; `committer`: an object
        whose `commit(entry, result, budgets)` returns "" (bound), the reason it was not, or
        None when the outcome will come later through `finish_binding` (default:
        StoreCommitter on `store`)."""
        shards = cfg.shards
        self.store = store
        self.clock = clock
        self.owner = owner if owner is not None else ProfileOwnership(cfg)
        self.committer = committer if committer is not None else StoreCommitter(store)
        self.cache = ShardCache(shards.assume_ttl_seconds, clock)
        self.scheduler = Scheduler(cfg, self.cache, store, seed, clock=clock, **scheduler_opts)
        first = next(iter(self.scheduler.profiles.values()))
        self.queue = SchedulingQueue(first.less, shards.pod_initial_backoff_seconds,
                                     shards.pod_max_backoff_seconds, shards.unschedulable_max_seconds,
                                     clock)
        self.waiting = self.scheduler.waiting
        self.pdbs = self.scheduler.pdbs
        self.priority_classes: dict = {}
        self.pods: dict = {}          # every pod we have parsed, by key (pending and bound)
        #: Pending pods we do not own, unparsed, as the watch showed them: what a dispatch
        #: names is taken from here (the message carries no pod).
        self.unowned: dict[str, dict] = {}
        self.errors: dict[str, ObjectError] = {}
        self.messages: dict[str, str] = {}  # pod key -> last unschedulable message
        self.groups = self.scheduler.groups
        #: Victims of pod group members that wait for their group (or whose unit is being
        #: committed): victim key -> preemptor key. They are left out of the cache until
        #: the unit is bound (the binder evicts them) or released (they count again), so the
        #: group's other members neither count their room twice nor claim them again.
        self.claimed: dict[str, str] = {}
        #: Owned pending pods a PreEnqueue plugin keeps out of the queue (scheduling gates):
        #: pod key -> its message. An update of the pod asks again.
        self.gated: dict[str, str] = {}
        self.informer = Informer(store, CREATE_ORDER, self.apply, self._forget_everything)

    # --- keeping up with the store ------------------------------------------------------------

    def start(self) -> None:
        """Initial list of every kind; later changes come from `sync()`."""
        self.informer.start()

    def sync(self, timeout: float = 0.0) -> int:
        """Apply the store's events since the last sync; relists if history was trimmed."""
        return self.informer.sync(timeout)

    def _forget_everything(self) -> None:
        """Before a relist: the fresh list will bring back whatever still exists."""
        self.unowned.clear()
        for key in list(self.pods):
            self.queue.delete(key)
            self.cache.remove_pod(key)
        for info_name in [name for name, _ in self.cache.nodes.items()]:
            self.cache.remove_node(info_name)
        self.pods.clear()
        self.gated.clear()
        self.scheduler.nominated.clear()
        self.groups.clear()
        self.claimed.clear()
        self.scheduler.volumes.clear()

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        if kind == "PriorityClass":
            self._apply_simple(type_, obj, self.priority_classes)
        elif kind == "PodDisruptionBudget":
            self._apply_simple(type_, obj, self.pdbs)
            self.queue.wake(hints.preemption_changed)
        elif kind == "Node":
            self._apply_node(type_, obj)
        elif kind == "Pod":
            self._apply_pod(type_, obj)
        elif kind == "PodGroup":
            key = object_key_of(obj)
            if self.groups.apply_group(type_, obj) is None and type_ != "DELETED":
                self.errors[f"PodGroup {key}"] = self.groups.errors[key]
            self._wake_unit(key)
        else:
            self._apply_storage(type_, kind, obj)

    def _apply_storage(self, type_: str, kind: str, obj: dict) -> None:
        """A claim, volume, storage class or CSINode changed: it can only matter to pods
        with volumes (kube's VolumeBinding, VolumeZone and NodeVolumeLimits hints)."""
        volumes = self.scheduler.volumes
        if type_ == "DELETED":
            meta = obj.get("metadata") or {}
            volumes.remove(kind, object_key(kind, meta.get("namespace") or "default", meta.get("name")))
        else:
            parsed = self._parse(obj)
            if parsed is None:
                return
            volumes.set(parsed)
        self.queue.move_all_to_active(only=counts_volumes)

    def _parse(self, obj: dict):
        try:
            return parse_object(obj, self.priority_classes)
        except ObjectError as e:
            meta = obj.get("metadata") or {}
            key = f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}"
            if key not in self.errors:
                log.warning("ignoring an object the store holds but shardsched cannot read: %s", e)
            self.errors[key] = e
            return None

    def _apply_simple(self, type_: str, obj: dict, into: dict) -> None:
        parsed = self._parse(obj)
        if parsed is None:
            return
        if type_ == "DELETED":
            into.pop(parsed.key, None)
        else:
            into[parsed.key] = parsed

    def _apply_node(self, type_: str, obj: dict) -> None:
        name = (obj.get("metadata") or {}).get("name")
        if type_ == "DELETED":
            self.cache.remove_node(name)
            self.queue.wake(hints.node_deleted)
            return
        info = self.cache.nodes.get(name)
        old = info.node if info is not None else None
        if old is not None and node_unchanged(old.raw, obj):
            return  # a heartbeat: no parse, no snapshot clone, no pod woken up
        node = self._parse(obj)
        if node is not None:
            self.cache.set_node(node)
            if old is None:
                self.queue.wake(hints.node_added, node)
            else:
                self.queue.wake(hints.node_updated, old, node)

    def _apply_pod(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)
        self.unowned.pop(key, None)
        joined = self.groups.apply_pod(type_, key, obj)
        if joined is not None and type_ == "ADDED":
            self._wake_unit(joined)  # one more member may complete the group
        if type_ == "DELETED":
            gone = self.cache.counted(key)
            nominated = self._nominate(key, None)
            self.pods.pop(key, None)
            self.claimed.pop(key, None)
            self.gated.pop(key, None)
            self.queue.delete(key)
            self.cache.remove_pod(key)
            if gone is not None:
                self.queue.wake(hints.pod_left, gone)
            elif nominated:
                self.queue.wake(hints.preemption_changed)
            return
        meta = obj.get("metadata") or {}
        known = self.pods.get(key)
        rv = meta.get("resourceVersion")
        if known is not None and rv and known.resource_version == rv:
            return  # seen already (the dispatcher's copy and the watch carry the same version)
        node_name = (obj.get("spec") or {}).get("nodeName")
        if node_name and known is not None and known.node_name == node_name and self._refreshed(known, obj):
            return
        if (not node_name and known is None and self.owner.may_skip(key)
                and not (obj.get("status") or {}).get("nominatedNodeName")):
            self.unowned[key] = obj  # another shard's pending pod, until one is dispatched here
            return
        if (node_name and known is not None and not known.node_name
                and known.uid == meta.get("uid") and self.cache.is_assumed(key)):
            pod = known.bound_copy(obj)  # the binding of our own decision
        else:
            pod = self._parse(obj)
        if pod is None:
            self._report_bad_pod(key, obj)
            return
        if self._nominate(key, None if pod.node_name or pod.deleting else pod):
            self.queue.wake(hints.preemption_changed)
        self.pods[key] = pod
        if pod.node_name:
            self.queue.delete(key)
            self.gated.pop(key, None)
            if key in self.claimed:
                return  # a victim of a member waiting at Permit: counted as gone already
            counted = self.cache.counted(key)
            self.cache.set_pod(pod)
            if counted is not None and self.cache.counted(key) is None:
                self.queue.wake(hints.pod_left, counted)  # it finished: its room is free
            elif known is None or not known.node_name or known.labels != pod.labels:
                self.queue.wake(hints.pod_arrived, pod)
        elif self.cache.is_assumed(key):
            pass  # our binding is in flight; the watch will bring the bound version
        elif self.owner.owns(pod) and not pod.deleting:
            self._enqueue(pod)

    def _enqueue(self, pod) -> None:
        """Queue an owned pending pod, unless a PreEnqueue plugin holds it back."""
        if not self._held_back(pod):
            self.gated.pop(pod.key, None)
            self.queue.add(pod)

    def _refreshed(self, known, obj: dict) -> bool:
        """A status update of a bound pod (kubelet or kwok saying it runs): swapped in without
        a parse and without marking its node changed, when that is all it is."""
        if not pod_status_only(known.raw, obj):
            return False
        try:
            pod = known.with_status(obj)
        except ObjectError:
            return False  # parsed in full, and reported, by the usual path
        self.pods[pod.key] = pod
        if pod.key not in self.claimed and not self.cache.refresh_pod(pod):
            self.cache.set_pod(pod)  # (a claimed victim is counted as gone already)
        return True

    def _held_back(self, pod) -> bool:
        """Run the pod's PreEnqueue plugins; a pod they refuse leaves the queue and waits in
        `gated` for an update (kube also asks again when a pod moves to activeQ)."""
        why = self.profile_for(pod).gate(pod)
        if why is None:
            return False
        self.queue.delete(pod.key)
        self.gated[pod.key] = why
        return True

    def _nominate(self, key: str, pod) -> bool:
        """Keep the scheduler's nominated pods: `pod` if it is nominated somewhere, else none.
        True when a nomination was withdrawn or moved (room left for other pods)."""
        nominated = self.scheduler.nominated
        old = self.pods.get(key)
        withdrawn = False
        if old is not None and old.nominated_node in nominated:
            withdrawn = nominated[old.nominated_node].pop(key, None) is not None and (
                pod is None or pod.nominated_node != old.nominated_node)
            if not nominated[old.nominated_node]:
                del nominated[old.nominated_node]
        if pod is not None and pod.nominated_node:
            nominated.setdefault(pod.nominated_node, {})[key] = pod
        return withdrawn

    def _report_bad_pod(self, key: str, obj: dict) -> None:
        err = self.errors.get(f"Pod {key}")
        already = any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                      and c.get("message") == str(err)
                      for c in ((obj.get("status") or {}).get("conditions") or []) if isinstance(c, dict))
        if err is not None and not already:
            self.store.set_unschedulable(key, f"invalid pod: {err.field}: {err.message}")

    def profile_for(self, pod):
        prof = self.scheduler.profiles.get(pod.scheduler_name)
        return prof or next(iter(self.scheduler.profiles.values()))

    # --- cycles -------------------------------------------------------------------------------

    def schedule_next(self):
        """One cycle for the next pod in activeQ; None when activeQ is empty."""
        entry = self.queue.pop()
        while entry is not None and self._held_back(entry.pod):
            entry = self.queue.pop()
        if entry is None:
            return None
        self.cache.expire()
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
            self.messages[pod.key] = self.scheduler.explain(result)
            # Nodes the scheduling context skipped were turned down by last time's rejectors.
            rejectors = result.rejectors | (entry.rejectors if result.skipped_by_context else frozenset())
            self.queue.requeue_unschedulable(entry, self.cache.nodes.generation if result.context_safe else 0,
                                             rejectors)
        return result

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
            self._wake_unit(unit)
            return
        if unit is None:
            self._bind(entry, result)
        else:
            self._bind_unit(unit, [(entry, result)] + [(wp.entry, wp.result) for wp in self.waiting.take_ready(unit)])

    def _unit(self, pod, prof) -> str | None:
        """The pod group `pod` is committed with: its group's key when the profile schedules
        groups (Coscheduling) and the PodGroup exists."""
        if not prof.gang:
            return None
        key = group_key(pod)
        return key if key is not None and key in self.groups.groups else None

    def _wake_unit(self, unit: str | None) -> None:
        """Try the group's queued members now (kube's PodsToActivate for the siblings)."""
        if unit is not None:
            self.queue.activate(list(self.groups.members.get(unit, ())))

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
                self._enqueue(known)  # taken back after a re-dispatch: schedule it again
            return True
        raw = self.unowned.get(key)
        if raw is not None and (not uid or (raw.get("metadata") or {}).get("uid") == uid):
            self._apply_pod("MODIFIED", raw)
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
        self.cache.forget(entry.pod.key)
        self.drop(entry.pod.key)

    def _undo(self, entry, prof, state, node: str, why: str) -> None:
        for p in reversed(prof.unreserve):
            p.unreserve(state, entry.pod, node)
        self._release_claims(entry.pod.key, evicted=False)
        self.cache.forget(entry.pod.key)
        self.messages[entry.pod.key] = why
        self.queue.requeue_backoff(entry)
        unit = self._unit(entry.pod, prof)
        if unit is not None and entry.pod.key in self.queue:
            # The group backs off as one: its queued members wait as long as this one.
            self.queue.hold_back([k for k in self.groups.members.get(unit, ()) if k != entry.pod.key],
                                 entry.backoff_until)
