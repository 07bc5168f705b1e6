"""The binder's commit pipeline: reservations in, store writes out, outcomes back.

Decisions are checked and reserved as they arrive (binder/server.py); this module commits
them. A feeder groups whatever is waiting into chunks and runs up to `workers` chunks at
once, each as pipelined store calls (evictions, then bindings); the store's connection pool
is sized to `binders.maxInFlight`, so that many requests can be in flight. Each chunk's
outcomes go back to their shards' streams as soon as it completes: nothing waits for
another shard's batch, or for the next batch of the same shard.

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
from concurrent.futures import ThreadPoolExecutor

from common.disruption import VICTIMS_TERMINATING, eviction_failures
from common.logs import ErrorLog
from common.plugin_names import VOLUME_BINDING
from common.volume_binding import write_bindings
from proto import shardsched_pb2 as pb

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


class Commits:
    def __init__(self, store, settle, holds, workers: int, stop: threading.Event, count, wait_for_volumes=None):
        """`settle([(pending, outcome, how)])` ends reservations and sends their outcomes;
        `holds(partition)` says whether we may still commit for it; `count(name, n)` bumps a
        counter; `wait_for_volumes(items)` takes decisions whose volume bindings were written
        until their claims are bound (they come back through `resume` or `finish`)."""
        self.store = store
        self.settle = settle
        self.holds = holds
        self.count = count
        self.wait_for_volumes = wait_for_volumes
        self.stop = stop
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.slots = threading.Semaphore(workers)
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="commit")
        self.errors = ErrorLog(log)
        self.in_flight: dict[int, int] = {}  # partition -> reservations not yet settled
        self._lock = threading.Lock()

    def submit(self, items: list[Pending]) -> None:
        with self._lock:
            for it in items:
                p = it.reservation.partition
                self.in_flight[p] = self.in_flight.get(p, 0) + 1
        for it in items:
            self.queue.put(it)

    def resume(self, items: list[Pending]) -> None:
        """Decisions whose claims are bound now: on to their binding (still counted in flight)."""
        for it in items:
            self.queue.put(it)

    def finish(self, refused: list[tuple]) -> None:
        """End decisions refused while their claims were awaited: [(pending, reason)]."""
        self.settle([(it, self._outcome(it, False, reason), "refused") for it, reason in refused])
        with self._lock:
            for it, _ in refused:
                self.in_flight[it.reservation.partition] -= 1

    def busy(self, partition: int) -> bool:
        with self._lock:
            return self.in_flight.get(partition, 0) > 0

    def feed_forever(self) -> None:
        """Group what waits into chunks and start each when a worker is free."""
        while not self.stop.is_set():
            try:
                first = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            self.slots.acquire()
            chunk = [first]
            while len(chunk) < CHUNK:
                try:
                    chunk.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            self.pool.submit(self._run, chunk)

    def _run(self, chunk: list[Pending]) -> None:
        done: dict[int, tuple] = {}  # index in chunk -> (outcome, how)
        try:
            self._commit(chunk, done)
        except Exception as e:
            self.errors.error("commit failed; the undecided reservations are in doubt", e)
            self.count("commit_errors", 1)
            for i, it in enumerate(chunk):
                if i not in done:
                    done[i] = (self._outcome(it, False, f"StoreError: {e}"), "doubt")
        finally:
            waiting = [it for i, it in enumerate(chunk) if done.get(i) is WAITING]
            settled = [it for i, it in enumerate(chunk) if done.get(i) is not WAITING]
            self.settle([(it, *(done.get(i) or (self._outcome(it, False, "StoreError: not committed"), "doubt")))
                         for i, it in enumerate(chunk) if done.get(i) is not WAITING])
            with self._lock:
                for it in settled:
                    self.in_flight[it.reservation.partition] -= 1
            self.slots.release()
            if waiting:
                self.wait_for_volumes(waiting)

    @staticmethod
    def _outcome(it: Pending, bound: bool, reason: str = "", evicted=()):
        r = it.reservation
        return pb.Outcome(pod_key=r.pod.key, node=r.node, bound=bound, reason=reason, evicted=list(evicted))

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
        to_bind = [i for i in live if chunk[i].written is not None]
        for i in fresh:
            r = chunk[i].reservation
            refused = eviction_failures((k for k, _ in r.victims), (evicted[k] for k, _ in r.victims))
            if refused is None and (terminating := self._still_there(r.victims)):
                refused = f"{VICTIMS_TERMINATING}: {', '.join(terminating)}"
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
        if not to_bind:
            return
        results = self.store.bind_many([(chunk[i].reservation.pod.key, chunk[i].reservation.node,
                                          chunk[i].reservation.pod.uid or None) for i in to_bind])
        for i, reason in zip(to_bind, results):
            r = chunk[i].reservation
            if reason is None:
                done[i] = (self._outcome(chunk[i], True, evicted=[k for k, _ in r.victims]), "bound")
            else:
                if reason == "AlreadyBound":
                    obj = self.store.get("Pod", r.pod.key)
                    node = ((obj or {}).get("spec") or {}).get("nodeName")
                    reason = f"AlreadyBound: {r.pod.key} is bound to {node}" if node else "PodNotFound"
                done[i] = (self._outcome(chunk[i], False, reason), "refused")

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

    def _still_there(self, victims) -> list[str]:
        """Victims the store still holds after their eviction: on a real cluster an evicted
        pod terminates gracefully, and the preemptor is bound only once they are gone (its
        shard nominates it to the node meanwhile and retries)."""
        return [key for key, uid in victims
                if (obj := self.store.get("Pod", key)) is not None
                and (not uid or (obj.get("metadata") or {}).get("uid") == uid)]

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)
