"""One shard's scheduling loop over a cluster store, without any networking.

It lists and watches the store, keeps the cache and the scheduling queue current, and runs
cycles: pop a pod, schedule it, assume it and bind it with the profile's Bind plugins.
`shardsched simulate` drives it on the memory store; the shard server wraps the same loop.

Bad objects never stop it: a pod that cannot be parsed is recorded in `errors` and, when it
is a pod, its PodScheduled condition says why; everything else keeps flowing.
"""
from __future__ import annotations

import time

from common.errors import ObjectError
from common.informer import Informer
from common.objects import CREATE_ORDER, parse_object
from .cache import ShardCache
from .disruption import VICTIMS_TERMINATING, eviction_failures, refusal
from .framework import SUCCESS
from .queue import SchedulingQueue
from .scheduler import Scheduler
from .waiting import Wait, WaitingPods


class ShardLoop:
    def __init__(self, cfg: dict, store, seed: int = 0, accept_default: bool = False,
                 clock=time.monotonic, **scheduler_opts):
        shards = cfg["shards"]
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.cache = ShardCache(shards["assumeTtlSeconds"], clock)
        self.scheduler = Scheduler(cfg, self.cache, store, seed, **scheduler_opts)
        self.accept_default = accept_default or cfg["dispatcher"]["alsoDefaultScheduler"]
        first = next(iter(self.scheduler.profiles.values()))
        self.queue = SchedulingQueue(first.less, shards["podInitialBackoffSeconds"],
                                     shards["podMaxBackoffSeconds"], shards["unschedulableMaxSeconds"],
                                     clock)
        self.priority_classes: dict = {}
        self.pdbs: dict = {}
        self.pods: dict = {}          # every pod we have parsed, by key (pending and bound)
        self.errors: dict[str, ObjectError] = {}
        self.messages: dict[str, str] = {}  # pod key -> last unschedulable message
        self.evicted_by: dict[str, str] = {}  # victim pod key -> key of the pod that preempted it
        self.informer = Informer(store, CREATE_ORDER, self.apply, self._forget_everything)
        #: Server mode: only pods the dispatcher handed to this shard are scheduled here.
        self.dispatched: set[str] | None = None
        #: Server mode: sends a decision to a binder instead of running the Bind plugins;
        #: the outcome comes back later through `finish_binding`.
        self.commit = None
        self.waiting = WaitingPods(clock)
        self.scheduler.waiting = self.waiting  # Permit plugins allow or reject through it
        self.scheduler.pdbs = self.pdbs

    # --- keeping up with the store ------------------------------------------------------------

    def start(self) -> None:
        """Initial list of every kind; later changes come from `sync()`."""
        self.informer.start()

    def sync(self, timeout: float = 0.0) -> int:
        """Apply the store's events since the last sync; relists if history was trimmed."""
        return self.informer.sync(timeout)

    def _forget_everything(self) -> None:
        """Before a relist: the fresh list will bring back whatever still exists."""
        for key in list(self.pods):
            self.queue.delete(key)
            self.cache.remove_pod(key)
        for info_name in [name for name, _ in self.cache.nodes.items()]:
            self.cache.remove_node(info_name)
        self.pods.clear()
        self.scheduler.nominated.clear()

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        if kind == "PriorityClass":
            self._apply_simple(type_, obj, self.priority_classes)
        elif kind == "PodDisruptionBudget":
            self._apply_simple(type_, obj, self.pdbs)
        elif kind == "Node":
            self._apply_node(type_, obj)
        elif kind == "Pod":
            self._apply_pod(type_, obj)

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
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        if type_ == "DELETED":
            self._nominate(key, None)
            self.pods.pop(key, None)
            self.queue.delete(key)
            self.cache.remove_pod(key)
            self.queue.move_all_to_active()
            return
        known = self.pods.get(key)
        rv = meta.get("resourceVersion")
        if known is not None and rv and known.resource_version == rv:
            return  # seen already (the dispatcher's copy and the watch carry the same version)
        node_name = (obj.get("spec") or {}).get("nodeName")
        if (not node_name and known is None and self.dispatched is not None
                and key not in self.dispatched
                and not (obj.get("status") or {}).get("nominatedNodeName")):
            return  # another shard's pending pod: nothing to count until it is bound
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
            self.cache.set_pod(pod)
        elif self.cache.is_assumed(key):
            pass  # our binding is in flight; the watch will bring the bound version
        elif self._ours(pod) and not pod.deleting:
            self.queue.add(pod)

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

    def _ours(self, pod) -> bool:
        if self.dispatched is not None:
            return pod.key in self.dispatched
        return pod.scheduler_name in self.scheduler.profiles or (
            self.accept_default and pod.scheduler_name == "default-scheduler")

    def profile_for(self, pod):
        prof = self.scheduler.profiles.get(pod.scheduler_name)
        return prof or next(iter(self.scheduler.profiles.values()))

    # --- cycles -------------------------------------------------------------------------------

    def schedule_next(self):
        """One cycle for the next pod in activeQ; None when activeQ is empty."""
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
        """The binding cycle: PreBind, the first Bind plugin that does not skip, PostBind."""
        pod, node, prof, state = entry.pod, result.node, result.profile, result.state
        for p in prof.pre_bind:
            st = p.pre_bind(state, pod, node)
            if st is not None and st.code != SUCCESS:
                self._undo(entry, prof, state, node, f"{p.name}: {st.message()}")
                return
        if self.commit is not None:
            self.commit(entry, result)
            return
        if result.victims and not self._evict_victims(entry, result):
            return
        for p in prof.bind:
            st = p.bind(state, pod, node)
            if st is None:
                break
            if st.code != "Skip":
                self._undo(entry, prof, state, node, f"{p.name}: {st.message()}")
                return
        self._bound(entry, result)

    def _clear_lower_nominations(self, pod, node: str) -> None:
        """The preemptor takes the room on `node`: lower-priority pods nominated there lose
        their claim (they would otherwise keep later pods off the freed space)."""
        for other in list(self.scheduler.nominated.get(node, {}).values()):
            if other.priority < pod.priority:
                self.store.set_nominated_node(other.key, None)

    def _evict_victims(self, entry, result) -> bool:
        """Without a binder: nominate the pod, evict its victims; False (and undone) on refusal.

        The same PodDisruptionBudget rule as the binder's applies, so `simulate` shows what
        the distributed scheduler would do.
        """
        pod, node = entry.pod, result.node
        refused = refusal(result.victims, self.scheduler.budgets())
        if refused is None:
            self.store.set_nominated_node(pod.key, node)
            reasons = self.store.evict_many([(v.key, v.uid or None) for v in result.victims])
            refused = eviction_failures((v.key for v in result.victims), reasons)
            for v, r in zip(result.victims, reasons):
                if r is None:
                    self.evicted_by[v.key] = pod.key
        if refused is not None:
            self._undo(entry, result.profile, result.state, node, f"preemption failed: {refused}")
            return False
        return True

    def _bound(self, entry, result) -> None:
        pod = entry.pod
        self.queue.done(pod.key)
        self.messages.pop(pod.key, None)
        for p in result.profile.post_bind:
            p.post_bind(result.state, pod, result.node)

    def finish_binding(self, entry, result, bound: bool, reason: str = "") -> None:
        """Server mode: a binder's outcome for a decision `commit` sent."""
        if bound:
            self._bound(entry, result)
            return
        if reason.startswith(VICTIMS_TERMINATING):
            # Its victims are on their way out: the nomination keeps their room from pods of
            # lower priority, and the retry binds the pod once they are gone.
            self.store.set_nominated_node(entry.pod.key, result.node)
        self._undo(entry, result.profile, result.state, result.node, f"binding rejected: {reason}")

    def drop(self, key: str) -> None:
        """Stop scheduling a pod (bound elsewhere, gone, or handed to another shard)."""
        self.queue.delete(key)
        if self.dispatched is not None:
            self.dispatched.discard(key)

    def _undo(self, entry, prof, state, node: str, why: str) -> None:
        for p in reversed(prof.unreserve):
            p.unreserve(state, entry.pod, node)
        self.cache.forget(entry.pod.key)
        self.messages[entry.pod.key] = why
        self.queue.requeue_backoff(entry)

