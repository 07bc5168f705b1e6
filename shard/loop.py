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

import time

from common.disruption import VICTIMS_TERMINATING, eviction_failures, refusal
from common.errors import ObjectError
from common.informer import Informer
from common.objects import CREATE_ORDER, object_key, parse_object, raw_pod_key
from common.plugin_names import VOLUME_BINDING
from common.volume_binding import TIMED_OUT, bindings_done, store_lookups, write_bindings
from common.volumes import counts_volumes
from common.store.base import rv_order
from .cache import ShardCache
from .framework import SUCCESS
from .plugins.volume_binding import planned_volumes
from .queue import SchedulingQueue
from .scheduler import Scheduler
from .waiting import Wait


def _depends_on_other_pods(pod) -> bool:
    return pod.has_cross_node_constraints()


class ProfileOwnership:
    """The loop owns every pending pod whose schedulerName names one of its profiles (and,
    with `accept_default`, default-scheduler's pods too)."""

    def __init__(self, cfg: dict, accept_default: bool = False):
        self.names = {p["schedulerName"] for p in cfg["profiles"]}
        if accept_default or cfg["dispatcher"]["alsoDefaultScheduler"]:
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

    def __init__(self, store, provision=None):
        """`provision`, when given, plays the storage controllers between writing a pod's
        volume bindings and checking they are done (simulate's common.provisioner)."""
        self.store = store
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
    def __init__(self, cfg: dict, store, seed: int = 0, *, owner=None, committer=None,
                 clock=time.monotonic, **scheduler_opts):
        """`owner`: ProfileOwnership (the default) or DispatchedPods; `committer`: an object
        whose `commit(entry, result, budgets)` returns "" (bound), the reason it was not, or
        None when the outcome will come later through `finish_binding` (default:
        StoreCommitter on `store`)."""
        shards = cfg["shards"]
        self.store = store
        self.clock = clock
        self.owner = owner if owner is not None else ProfileOwnership(cfg)
        self.committer = committer if committer is not None else StoreCommitter(store)
        self.cache = ShardCache(shards["assumeTtlSeconds"], clock)
        self.scheduler = Scheduler(cfg, self.cache, store, seed, clock=clock, **scheduler_opts)
        first = next(iter(self.scheduler.profiles.values()))
        self.queue = SchedulingQueue(first.less, shards["podInitialBackoffSeconds"],
                                     shards["podMaxBackoffSeconds"], shards["unschedulableMaxSeconds"],
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
        self.scheduler.volumes.clear()

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        if kind == "PriorityClass":
            self._apply_simple(type_, obj, self.priority_classes)
        elif kind == "PodDisruptionBudget":
            self._apply_simple(type_, obj, self.pdbs)
        elif kind == "Node":
            self._apply_node(type_, obj)
        elif kind == "Pod":
            self._apply_pod(type_, obj)
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
            self.errors[f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}"] = e
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
        if type_ == "DELETED":
            name = (obj.get("metadata") or {}).get("name")
            self.cache.remove_node(name)
            return
        node = self._parse(obj)
        if node is not None:
            self.cache.set_node(node)
            self.queue.move_all_to_active()

    def _apply_pod(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)
        self.unowned.pop(key, None)
        if type_ == "DELETED":
            self._nominate(key, None)
            self.pods.pop(key, None)
            self.gated.pop(key, None)
            self.queue.delete(key)
            self.cache.remove_pod(key)
            self.queue.move_all_to_active()
            return
        meta = obj.get("metadata") or {}
        known = self.pods.get(key)
        rv = meta.get("resourceVersion")
        if known is not None and rv and known.resource_version == rv:
            return  # seen already (the dispatcher's copy and the watch carry the same version)
        node_name = (obj.get("spec") or {}).get("nodeName")
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
        self._nominate(key, None if pod.node_name or pod.deleting else pod)
        self.pods[key] = pod
        if pod.node_name:
            self.queue.delete(key)
            self.gated.pop(key, None)
            self.cache.set_pod(pod)
            if known is None or not known.node_name:
                # A pod newly placed can only help pods whose fit depends on other pods (a
                # spread's minimum rose, an affinity's partner arrived); kube's queueing hint
                # for an assigned pod's arrival does the same.
                self.queue.move_all_to_active(only=_depends_on_other_pods)
        elif self.cache.is_assumed(key):
            pass  # our binding is in flight; the watch will bring the bound version
        elif self.owner.owns(pod) and not pod.deleting:
            self._enqueue(pod)

    def _enqueue(self, pod) -> None:
        """Queue an owned pending pod, unless a PreEnqueue plugin holds it back."""
        if not self._held_back(pod):
            self.gated.pop(pod.key, None)
            self.queue.add(pod)

    def _held_back(self, pod) -> bool:
        """Run the pod's PreEnqueue plugins; a pod they refuse leaves the queue and waits in
        `gated` for an update (kube also asks again when a pod moves to activeQ)."""
        why = self.profile_for(pod).gate(pod)
        if why is None:
            return False
        self.queue.delete(pod.key)
        self.gated[pod.key] = why
        return True

    def _nominate(self, key: str, pod) -> None:
        """Keep the scheduler's nominated pods: `pod` if it is nominated somewhere, else none."""
        nominated = self.scheduler.nominated
        old = self.pods.get(key)
        if old is not None and old.nominated_node in nominated:
            nominated[old.nominated_node].pop(key, None)
            if not nominated[old.nominated_node]:
                del nominated[old.nominated_node]
        if pod is not None and pod.nominated_node:
            nominated.setdefault(pod.nominated_node, {})[key] = pod

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
            self.queue.requeue_unschedulable(entry, self.cache.nodes.generation if result.context_safe else 0)
        return result

    def _commit(self, entry, result) -> None:
        """Assume, Reserve and Permit; then the binding cycle, unless Permit said wait."""
        pod, node, prof, state = entry.pod, result.node, result.profile, result.state
        if result.victims:
            self._clear_lower_nominations(pod, node)
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
            self.waiting.hold(entry, result, waits)
            return
        self._bind(entry, result)

    def release_waiting(self) -> int:
        """Bind the waiting pods every plugin allowed; undo the rejected or timed-out ones."""
        ready, rejected = self.waiting.due()
        for wp in ready:
            self._bind(wp.entry, wp.result)
        for wp, why in rejected:
            self._undo(wp.entry, wp.result.profile, wp.result.state, wp.result.node, why)
        return len(ready) + len(rejected)

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

    def _clear_lower_nominations(self, pod, node: str) -> None:
        """The preemptor takes the room on `node`: lower-priority pods nominated there lose
        their claim (they would otherwise keep later pods off the freed space)."""
        for other in list(self.scheduler.nominated.get(node, {}).values()):
            if other.priority < pod.priority:
                self.store.set_nominated_node(other.key, None)

    def _bound(self, entry, result) -> None:
        pod = entry.pod
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
        if rv and self.informer.rv and rv_order(rv) > rv_order(self.informer.rv):
            return None
        self.owner.release(key)
        return False

    def drop(self, key: str) -> None:
        """Stop scheduling a pod (bound elsewhere, gone, or handed to another shard)."""
        self.queue.delete(key)
        self.gated.pop(key, None)
        self.owner.release(key)

    def _undo(self, entry, prof, state, node: str, why: str) -> None:
        for p in reversed(prof.unreserve):
            p.unreserve(state, entry.pod, node)
        self.cache.forget(entry.pod.key)
        self.messages[entry.pod.key] = why
        self.queue.requeue_backoff(entry)
