"""The binder's commit pipeline: reservations in, store writes out, outcomes back.

Decisions are checked and reserved as they arrive (binder/server.py); this module commits
them. `workers` threads each take whatever is waiting as one chunk and commit it as
pipelined store calls (evictions, then bindings); the store's connection pool is sized to
`binders.maxInFlight`, so that many requests can be in flight. A worker takes its chunk from
the queue itself (no feeder thread handing chunks to a pool: at 1,000 pods a second a chunk
is a few pods, and each hand-over was two more thread wake-ups per chunk). Each chunk's
outcomes go back to their shards' streams as soon as it completes: nothing waits for
another shard's batch, or for the next batch of the same shard.

A pod group's unit is committed by one worker as a whole: the victims of all its members,
then the group commit of common/scheduling/group_commit.py (all members bound or none).
A pod the binding extender (bindVerb) is interested in is bound by it instead of the store,
after the same checks and fencing; a pod group's unit is always bound by the group commit.
A decision whose pod has claims to bind (VolumeBinding's PreBind) has the volume bindings
written after its victims are gone; it then waits, off the pipeline, until the claims are
bound (binder/volume_waits.py), and comes back to be bound (`resume`) or is refused
(`finish`): no chunk, and no shard, waits for a provisioner.

Every reservation is settled exactly once, on every path: bound, refused, or in doubt when
the store failed part-way (see BinderView.settle).
"""
from __future__ import annotations

import logging
import queue
import threading

from common.scheduling.disruption import VICTIMS_TERMINATING, eviction_failures
from common.scheduling.extenders import ExtenderError
from common.runtime.events import NORMAL, PREEMPTED, SCHEDULED, pod_ref
from common.runtime.logs import ErrorLog
from common.config.plugin_names import DYNAMIC_RESOURCES, VOLUME_BINDING
from common.scheduling.dra_binding import write_claims_many
from common.scheduling.volume_binding import write_bindings
from proto import shardsched_pb2 as pb

from .groups import GroupPending

log = logging.getLogger(__name__)

CHUNK = 256  # reservations per chunk: one pipelined store call each for evictions and bindings
#: What `_commit` records for a decision handed to the volume waits: no outcome yet.
WAITING = ("waiting", None)


class Pending:
    """A reserved decision waiting for its commit, and where its outcome goes. `written`
    holds the versions of the volume bindings PreBind wrote, once it did."""

    __slots__ = ("reservation", "reply", "shard", "written", "deadline")

    def __init__(self, reservation, reply, shard: str):
        self.reservation, self.reply, self.shard = reservation, reply, shard
        self.written: dict | None = None
        self.deadline = 0.0

    @property
    def partition(self) -> int:
        return self.reservation.partition


class Commits:
    def __init__(self, store, settle, holds, workers: int, stop: threading.Event, count, groups, status,
                 wait_for_volumes=None, extender=None):
        """`settle([(pending, outcome, how)])` ends reservations and sends their outcomes;
        `holds(partition)` says whether we may still commit for it; `count(name, n)` bumps a
        counter; `groups` (common.scheduling.group_commit.GroupCommit) binds a unit all or nothing;
        `status` (common.runtime.events.StatusWriter) takes the Scheduled and Preempted events of
        what was committed; `wait_for_volumes(items)` takes decisions whose volume bindings
        were written until their claims are bound (they come back through `resume` or
        `finish`); `extender` (common.scheduling.extenders.Extender, the one with bindVerb, or
        None) binds the pods it is interested in instead of the store."""
        self.store = store
        self.extender = extender
        self.status = status
        self.settle = settle
        self.holds = holds
        self.count = count
        self.groups = groups
        #: pod groups whose unit is being committed (their intent is ours, not an orphan)
        self.groups_in_flight: set[str] = set()
        self.wait_for_volumes = wait_for_volumes
        self.stop = stop
        #: lists of Pending and GroupPending, as submitted
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.workers = workers
        self._threads: list[threading.Thread] = []
        self.errors = ErrorLog(log)
        self.in_flight: dict[int, int] = {}  # partition -> reservations not yet settled
        self._lock = threading.Lock()

    def submit(self, items: list) -> None:
        """Queue Pending decisions and GroupPending units for commit."""
        with self._lock:
            for it in items:
                self.in_flight[it.partition] = self.in_flight.get(it.partition, 0) + 1
                if isinstance(it, GroupPending):
                    self.groups_in_flight.add(it.group)
        self.queue.put(items)

    def groups_busy(self) -> set[str]:
        with self._lock:
            return set(self.groups_in_flight)

    def resume(self, items: list[Pending]) -> None:
        """Decisions whose claims are bound now: on to their binding (still counted in flight)."""
        if items:
            self.queue.put(items)

    def finish(self, refused: list[tuple]) -> None:
        """End decisions refused while their claims were awaited: [(pending, reason)]."""
        self.settle([(it, self._outcome(it, False, reason), "refused") for it, reason in refused])
        with self._lock:
            for it, _ in refused:
                self.in_flight[it.reservation.partition] -= 1

    def busy(self, partition: int) -> bool:
        with self._lock:
            return self.in_flight.get(partition, 0) > 0

    def feed_forever(self, beat=lambda: None) -> None:
        """Commit until stopped: `workers - 1` threads of their own and the calling one, each
        taking what waits as a chunk; `beat()` each time round (liveness)."""
        self._threads = [threading.Thread(target=self._work_forever, args=(beat,), daemon=True,
                                          name=f"commit_{i}") for i in range(1, self.workers)]
        for t in self._threads:
            t.start()
        self._threads.append(threading.current_thread())
        self._work_forever(beat)

    def _work_forever(self, beat) -> None:
        while not self.stop.is_set():
            beat()
            chunk = self.take()
            if not chunk:
                continue
            try:
                self._run(chunk)
            except Exception as e:  # _run settled what it could; the next chunk is another matter
                self.count("commit_errors", 1)
                self.errors.error("commit worker", e)

    def take(self, timeout: float = 0.2) -> list:
        """What waits, as one chunk (about CHUNK reservations at most; a submitted batch is
        never split), after waiting up to `timeout` for the first; [] if nothing came."""
        try:
            chunk = list(self.queue.get(timeout=timeout))
        except queue.Empty:
            return []
        while len(chunk) < CHUNK:
            try:
                chunk += self.queue.get_nowait()
            except queue.Empty:
                break
        return chunk

    def _run(self, chunk: list) -> None:
        singles = [it for it in chunk if isinstance(it, Pending)]
        units = [it for it in chunk if isinstance(it, GroupPending)]
        settled, waiting = [], []
        try:
            if singles:
                for t in self._guarded(singles, self._commit):
                    (waiting if t[1] is WAITING else settled).append(t)
            for unit in units:
                members = [Pending(r, unit.reply, unit.shard) for r in unit.reservations]
                settled += self._guarded(members, lambda items, done, u=unit: self._commit_unit(u, items, done))
        finally:
            try:
                self.settle(settled)
            finally:  # (a failing settle is the worker's to report; the partitions are not busy for ever)
                still = {id(it) for it, _, _ in waiting}  # in flight until their claims are bound
                with self._lock:
                    for it in chunk:
                        if id(it) in still:
                            continue
                        self.in_flight[it.partition] -= 1
                        if isinstance(it, GroupPending):
                            self.groups_in_flight.discard(it.group)
                if waiting:
                    self.wait_for_volumes([it for it, _, _ in waiting])

    def _guarded(self, items: list[Pending], commit) -> list[tuple]:
        """(pending, outcome, how) of each item after `commit(items, done)`; whatever it had
        not decided when the store failed is in doubt."""
        done: dict[int, tuple] = {}  # index in items -> (outcome, how)
        try:
            commit(items, done)
        except Exception as e:
            self.errors.error("commit failed; the undecided reservations are in doubt", e)
            self.count("commit_errors", 1)
            for i, it in enumerate(items):
                if i not in done:
                    done[i] = (self._outcome(it, False, f"StoreError: {e}"), "doubt")
        return [(it, WAITING, None) if done.get(i) is WAITING
                else (it, *(done.get(i) or (self._outcome(it, False, "StoreError: not committed"), "doubt")))
                for i, it in enumerate(items)]

    @staticmethod
    def _outcome(it: Pending, bound: bool, reason: str = "", evicted=()):
        r = it.reservation
        return pb.Outcome(pod_key=r.pod.key, node=r.node, bound=bound, reason=reason, evicted=list(evicted))

    def _commit_unit(self, unit: GroupPending, items: list[Pending], done: dict) -> None:
        """A pod group's unit: every member's victims evicted, then all members bound or none
        (common.scheduling.group_commit); one refusal refuses them all."""
        if not self.holds(unit.partition):
            for i, it in enumerate(items):
                done[i] = (self._outcome(it, False, f"NotPartitionHolder: partition {unit.partition} "
                                                    f"was lost before the commit"), "refused")
            return
        evicted = self._evict(items)
        self._preempted([it.reservation for it in items], evicted)
        for it in items:
            r = it.reservation
            refused = eviction_failures((k for k, _ in r.victims), (evicted[k] for k, _ in r.victims))
            if refused is None and (terminating := self._still_there(r.victims)):
                refused = f"{VICTIMS_TERMINATING}: {', '.join(terminating)}"
            if refused is not None:
                for i, other in enumerate(items):
                    done[i] = (self._outcome(other, False, refused), "refused")
                return
        if not self._fenced(items, [0], {}):
            for i, it in enumerate(items):
                done[i] = (self._outcome(it, False, f"NotPartitionHolder: partition {unit.partition} "
                                                    f"was lost before the commit"), "refused")
            return
        results = self.groups.commit(unit.group, [(it.reservation.pod.key, it.reservation.pod.uid or "",
                                                   it.reservation.node) for it in items], unit.partition)
        bound = []
        for i, (it, reason) in enumerate(zip(items, results)):
            if reason is None:
                done[i] = (self._outcome(it, True, evicted=[k for k, _ in it.reservation.victims]), "bound")
                bound.append(it.reservation)
            else:
                done[i] = (self._outcome(it, False, self._explained(it, reason)), "refused")
        self._scheduled(bound)

    def _write_claims(self, chunk: list[Pending], ids: list, refusals: dict) -> None:
        """DynamicResources' PreBind for the chunk's decisions with devices: their claims'
        allocations and reservations, the first attempts in one batch; a claim that cannot
        be written refuses its decision."""
        ids = [i for i in ids if chunk[i].reservation.devices is not None]
        if not ids:
            return
        whys = write_claims_many(self.store, [(chunk[i].reservation.pod, chunk[i].reservation.devices) for i in ids])
        for i, why in zip(ids, whys):
            if why is not None:
                refusals[i] = f"{DYNAMIC_RESOURCES}: {why}"

    def _commit(self, chunk: list[Pending], done: dict) -> None:
        live = []
        for i, it in enumerate(chunk):
            r = it.reservation
            if self.holds(r.partition):
                live.append(i)
            else:
                done[i] = (self._outcome(it, False, f"NotPartitionHolder: partition {r.partition} "
                                                    f"was lost before the commit"), "refused")
        fresh = [i for i in live if chunk[i].written is None]  # not back from the volume waits
        evicted = self._evict([chunk[i] for i in fresh])
        self._preempted([chunk[i].reservation for i in fresh], evicted)
        to_bind = [i for i in live if chunk[i].written is not None]
        refusals = {}
        for i in fresh:
            r = chunk[i].reservation
            refused = eviction_failures((k for k, _ in r.victims), (evicted[k] for k, _ in r.victims))
            if refused is None and (terminating := self._still_there(r.victims)):
                refused = f"{VICTIMS_TERMINATING}: {', '.join(terminating)}"
            refusals[i] = refused
        self._write_claims(chunk, [i for i in fresh if refusals[i] is None], refusals)
        for i in fresh:
            r = chunk[i].reservation
            refused = refusals[i]
            if refused is None and r.volumes is not None:
                written, why = write_bindings(self.store, r.volumes, r.node)
                if why is not None:
                    refused = f"{VOLUME_BINDING}: {why}"
                else:
                    chunk[i].written = written
                    done[i] = WAITING
                    continue
            if refused is not None:
                done[i] = (self._outcome(chunk[i], False, refused), "refused")
            else:
                to_bind.append(i)
        # the fencing check: a binder frozen since the check above (SIGSTOP, a VM stall) may
        # wake after its lease expired and another binder took the partition
        to_bind = self._fenced(chunk, to_bind, done)
        if self.extender is not None:
            to_bind = self._bind_through_extender(chunk, to_bind, done)
        if not to_bind:
            return
        results = self.store.bind_many([(chunk[i].reservation.pod.key, chunk[i].reservation.node,
                                          chunk[i].reservation.pod.uid or None) for i in to_bind])
        bound = []
        for i, reason in zip(to_bind, results):
            r = chunk[i].reservation
            if reason is None:
                done[i] = (self._outcome(chunk[i], True, evicted=[k for k, _ in r.victims]), "bound")
                bound.append(r)
            else:
                done[i] = (self._outcome(chunk[i], False, self._explained(chunk[i], reason)), "refused")
        self._scheduled(bound)

    def _bind_through_extender(self, chunk: list[Pending], indices: list[int], done: dict) -> list[int]:
        """kube's extender Bind: the pods the binding extender is interested in are bound by
        it, one call each, after every check and the fencing; the others' indices are
        returned for the store. A failed call leaves its pod in doubt (the extender may have
        bound it before failing): the watch tells, and the shard tries the pod again."""
        ext, rest = self.extender, []
        for i in indices:
            r = chunk[i].reservation
            if not ext.is_interested(r.pod.raw):
                rest.append(i)
                continue
            try:
                ext.bind(r.pod.namespace, r.pod.name, r.pod.uid or "", r.node)
            except ExtenderError as e:
                self.count("extender_bind_errors", 1)
                log.warning("binding %s to %s through extender %s failed: %s", r.pod.key, r.node, ext.name, e)
                done[i] = (self._outcome(chunk[i], False, f"ExtenderBindError: {e}"), "doubt")
                continue
            done[i] = (self._outcome(chunk[i], True, evicted=[k for k, _ in r.victims]), "bound")
            self._scheduled([r])
        return rest

    def _fenced(self, chunk: list[Pending], indices: list[int], done: dict) -> list[int]:
        """The indices whose partition we still hold, checked right before the store call;
        the others are refused (and logged)."""
        kept = []
        for i in indices:
            p = chunk[i].partition
            if self.holds(p):
                kept.append(i)
            else:
                done[i] = (self._outcome(chunk[i], False, f"NotPartitionHolder: partition {p} "
                                                         f"was lost before the commit"), "refused")
        if len(kept) < len(indices):
            self.count("fenced", len(indices) - len(kept))
            log.warning("fenced off %d commit(s): their partition's lease ran out before the store call",
                        len(indices) - len(kept))
        return kept

    def _explained(self, it: Pending, reason: str) -> str:
        """A store's AlreadyBound, with the node the pod is bound to (or PodNotFound)."""
        if reason != "AlreadyBound":
            return reason
        key = it.reservation.pod.key
        node = ((self.store.get("Pod", key) or {}).get("spec") or {}).get("nodeName")
        return f"AlreadyBound: {key} is bound to {node}" if node else "PodNotFound"

    def _evict(self, items: list[Pending]) -> dict:
        """Victim key -> eviction result. Victims whose eviction would break a
        PodDisruptionBudget are deleted outright, as kube-scheduler does."""
        evictions = [(k, u, k in it.reservation.delete) for it in items for k, u in it.reservation.victims]
        out = {}
        for delete in (False, True):
            batch = [(k, u or None) for k, u, d in evictions if d == delete]
            if batch:
                out.update(zip((k for k, _ in batch), self.store.evict_many(batch, respect_budgets=not delete)))
                self.count("victims_deleted" if delete else "victims_evicted", len(batch))
        return out

    def _scheduled(self, reservations: list) -> None:
        """kube-scheduler's Scheduled event of each binding that landed, handed over together."""
        self.status.events([(pod_ref(r.pod.key, r.pod.uid), NORMAL, SCHEDULED, "Binding",
                             f"Successfully assigned {r.pod.key} to {r.node}", None) for r in reservations])

    def _preempted(self, reservations, evicted: dict) -> None:
        """A Preempted event on each victim now evicted (or deleted), naming its preemptor."""
        self.status.events([(pod_ref(key, uid), NORMAL, PREEMPTED, "Preempting",
                             f"Preempted by pod {r.pod.uid} on node {r.node}", pod_ref(r.pod.key, r.pod.uid))
                            for r in reservations for key, uid in r.victims if evicted.get(key, "") is None])

    def _still_there(self, victims) -> list[str]:
        """Victims the store still holds after their eviction: on a real cluster an evicted
        pod terminates gracefully, and the preemptor is bound only once they are gone (its
        shard nominates it to the node meanwhile and retries)."""
        return [key for key, uid in victims
                if (obj := self.store.get("Pod", key)) is not None
                and (not uid or (obj.get("metadata") or {}).get("uid") == uid)]

    def shutdown(self) -> None:
        """After `stop` is set: wait for the workers' chunks in hand to settle."""
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
