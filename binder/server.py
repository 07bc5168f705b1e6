"""The binder process: the authority on bindings.

Each shard holds one Decide stream. A decision names a pod and a node (and victims); the
binder takes the pod from its own watch (BinderView), checks the decision against its view
and its reservations (common/checks.py) under one lock, reserves it, and hands it to the
commit pipeline (binder/commits.py), which answers on the stream as each commit completes.
A decision about a pod the watch has not shown yet waits for the watch to reach the
resourceVersion the shard saw, briefly, before it is judged. A pod with claims to bind has
its volume bindings written by the pipeline, then waits off it (binder/volume_waits.py),
checked after each pass of the watch, until its claims are bound.

The binder commits only for the partitions it holds (binder/partitions.py); threads: the
gRPC workers (one reader per stream), the watch, the partition leases, the commit feeder
and its workers.
"""
from __future__ import annotations

import logging
import queue
import threading
import time

from common.component import Component
from common.disruption import Budgets
from common.informer import Informer
from common.metrics import BinderMetrics
from common.objects import CREATE_ORDER
from common.partition import partition_of
from common.store.base import rv_order
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from common.checks import CROSS_NODE_CHECKS, NODE_CHECKS, VOLUME_CHECKS, Judged, first_failure
from .commits import Commits, Pending
from .partitions import PartitionLeases
from .view import BinderView, Reservation
from .volume_waits import VolumeWaits

log = logging.getLogger(__name__)

#: How long a decision about a pod the watch has not shown yet may wait for it.
WAIT_FOR_WATCH_S = 2.0
#: Chunks committed at once; each is one pipelined store call, spread over the pool.
COMMIT_WORKERS = 4


class Stream:
    """One shard's Decide stream: where its outcomes go."""

    def __init__(self, shard: str = ""):
        self.shard = shard
        self.out: queue.SimpleQueue = queue.SimpleQueue()

    def reply(self, outcomes: list) -> None:
        if outcomes:
            self.out.put(pb.OutcomeBatch(outcomes=outcomes))


class BinderServer(Component, rpc.BinderServicer):
    role = "binder"
    section = "binders"

    def __init__(self, cfg: dict, store, index: int | str, port: int | None = None,
                 metrics_port: int | None = None):
        binders = cfg["binders"]
        number = int(index) if str(index).isdigit() else 0
        self.metrics = BinderMetrics(str(index))
        super().__init__(cfg, store, number, port, metrics_port, self.metrics.registry)
        self.id = str(index)
        names = {p["schedulerName"] for p in cfg["profiles"]}
        if cfg["dispatcher"]["alsoDefaultScheduler"]:
            names.add("default-scheduler")
        self.view = BinderView(names, cfg["shards"]["assumeTtlSeconds"],
                               doubt_s=2 * cfg["store"]["requestTimeoutSeconds"])
        self.checks = NODE_CHECKS + VOLUME_CHECKS + (CROSS_NODE_CHECKS if binders["crossNodeChecks"] else ())
        self.partition_count = binders["count"]
        self.partition_label = binders["partitionLabel"]
        self.lock = threading.Lock()
        self.informer = Informer(store, CREATE_ORDER, self._apply, self._relist)
        self.partitions = PartitionLeases(store, binders["count"], number, binders["leaseDurationSeconds"])
        self.volume_waits = VolumeWaits(cfg, self.partitions.holds)
        self.commits = Commits(store, self._settle, self.partitions.holds,
                               max(1, min(COMMIT_WORKERS, binders["maxInFlight"])), self.stop_event,
                               self._count, self.volume_waits.add)
        self.deferred: list[tuple] = []  # (decision, stream, deadline) waiting for the watch

    def _count(self, name: str, n: int) -> None:
        self.counters[name] += n

    def _apply(self, type_: str, kind: str, obj: dict) -> None:
        with self.lock:
            self.view.apply(type_, kind, obj)

    def _relist(self) -> None:
        with self.lock:
            self.view.reset()

    def register(self, server) -> None:
        rpc.add_BinderServicer_to_server(self, server)

    def queues(self) -> dict[str, int]:
        return {"assumed": len(self.view.acc.assumed), "reserved": len(self.view.reserved),
                "waiting_for_watch": len(self.deferred), "waiting_for_volumes": len(self.volume_waits)}

    def gauges(self) -> dict[str, int]:
        return {"partitions_held": len(self.partitions.held_now())}

    # --- following the store and holding partitions ---------------------------------------

    def watch_step(self) -> None:
        self.informer.sync(timeout=0.05 if self.deferred or len(self.volume_waits) else 0.2)
        with self.lock:
            ready, refused = self.volume_waits.check(self.view)
        self.commits.resume(ready)
        if refused:
            self.commits.finish(refused)
        with self.lock:
            self.view.expire()
            deferred, self.deferred = self.deferred, []
            now = time.monotonic()
            by_stream: dict = {}
            for d, stream, deadline in deferred:
                by_stream.setdefault(stream, []).append((d, now >= deadline, deadline))
            for stream, items in by_stream.items():
                self._receive_locked([d for d, _, _ in items], stream,
                                     {d.pod_key: (last, deadline) for d, last, deadline in items})

    def watch_forever(self) -> None:
        self.loop_forever(self.watch_step)

    def partitions_forever(self) -> None:
        self.partitions.holder = self.address
        while not self.stop_event.is_set():
            try:
                self.partitions.step(self.commits.busy)
            except Exception as e:
                self.counters["lease_errors"] += 1
                self.errors.error("partition leases", e)
            self.stop_event.wait(self.partitions.ttl / 4)

    # --- decisions ------------------------------------------------------------------------

    def Decide(self, request_iterator, context):
        stream = Stream()
        log.info("decision stream opened from %s", context.peer())

        def read():
            try:
                for batch in request_iterator:
                    stream.shard = batch.shard
                    self.receive(batch.decisions, stream)
            except Exception as e:  # the shard went away; its in-flight commits still settle
                if not self.stop_event.is_set():
                    log.warning("decision stream from %s broke: %s", context.peer(), str(e) or type(e).__name__)
            stream.out.put(None)

        threading.Thread(target=read, daemon=True, name="decide-reader").start()
        while True:
            batch = stream.out.get()
            if batch is None:
                return
            yield batch

    def receive(self, decisions, stream: Stream) -> None:
        """Judge, reserve and queue for commit; refusals are answered at once."""
        with self.lock:
            self._receive_locked(decisions, stream, {})

    def _receive_locked(self, decisions, stream: Stream, waited: dict) -> None:
        refused, passed = [], []
        for d in decisions:
            self.counters["decisions"] += 1
            last, deadline = waited.get(d.pod_key, (False, None))
            verdict = self._judge(d, may_wait=not last)
            if verdict is None:
                self.deferred.append((d, stream, deadline or time.monotonic() + WAIT_FOR_WATCH_S))
            elif isinstance(verdict, str):
                refused.append(self._refusal(d, verdict, stream.shard))
            else:
                self.view.reserve(verdict)
                passed.append(Pending(verdict, stream, stream.shard))
        stream.reply(refused)
        if passed:
            self.commits.submit(passed)

    def _judge(self, d, may_wait: bool):
        """A Reservation, the reason for refusing, or None to wait for the watch."""
        view, key = self.view, d.pod_key
        pod = view.pending.get(key)
        if pod is None:
            node = view.bound_to(key)
            if node is not None:
                return f"AlreadyBound: {key} is bound to {node}"
            if key in view.reserved or view.acc.is_assumed(key):
                return f"InFlight: a decision for {key} is being committed"
            behind = d.pod_resource_version and self.informer.rv and \
                rv_order(d.pod_resource_version) > rv_order(self.informer.rv)
            if behind:
                return None if may_wait else f"NotSeenYet: the binder's watch has not reached {key}"
            return f"PodNotFound: {key} is not a pending pod of this scheduler"
        if d.pod_uid and pod.uid != d.pod_uid:
            return f"UIDMismatch: {key} was recreated"
        if pod.deleting:
            return f"PodNotFound: {key} is being deleted"
        if (pod.raw.get("spec") or {}).get("schedulingGates"):
            return f"SchedulingGated: {key} has scheduling gates"
        if key in view.reserved:
            return f"InFlight: a decision for {key} is being committed"
        info = view.nodes.get(d.node)
        partition = partition_of(info.node if info is not None and info.node is not None else d.node,
                                  self.partition_count, self.partition_label)
        if not self.partitions.accepts(partition):
            return f"NotPartitionHolder: partition {partition} (node {d.node}) is not held by binder {self.id}"
        judged = Judged(view, pod, d.node, [(v.key, v.uid) for v in d.victims])
        why = first_failure(judged, self.checks)
        if why is not None:
            return why
        victims = [(v.key, v.uid) for v in judged.victims]
        return Reservation(pod, d.node, victims, self._deleted_outright(judged.victims), partition,
                           judged.volume_plan)

    def _deleted_outright(self, victims) -> set:
        """Victims whose eviction would break a PodDisruptionBudget (counting the victims of
        decisions in flight): kube-scheduler deletes them anyway, PDBs being best effort in
        preemption, and so does the binder; the shard ranked candidates by violations."""
        if not victims or not self.view.pdbs:
            return set()
        budgets = Budgets(self.view.pdbs.values(), self.view.acc.counted_pods)
        for key in self.view.claimed:
            pod = self.view.acc.counted(key)
            if pod is not None:
                budgets.violates(pod)
        return {v.key for v in victims if budgets.violates(v)}

    def _refusal(self, d, reason: str, shard: str):
        log.debug("decision for %s on %s refused: %s", d.pod_key, d.node, reason)
        self._record(reason, shard)
        return pb.Outcome(pod_key=d.pod_key, node=d.node, bound=False, reason=reason)

    def _record(self, reason: str, shard: str) -> None:
        name = "Bound" if not reason else reason.split(":", 1)[0].split(" ", 1)[0]
        self.metrics.outcomes.labels(name, shard, self.id).inc()
        if reason:
            self.counters["rejected"] += 1
            self.counters["rejected_" + name] += 1
        else:
            self.counters["bound"] += 1

    def _settle(self, settled: list) -> None:
        """End the reservations of a committed chunk; one outcome batch per stream."""
        with self.lock:
            for _, outcome, how in settled:
                self.view.settle(outcome.pod_key, how)
        replies: dict = {}
        for it, outcome, _ in settled:
            if not outcome.bound:
                log.debug("decision for %s on %s not committed: %s", outcome.pod_key, outcome.node, outcome.reason)
            self._record(outcome.reason, it.shard)
            replies.setdefault(it.reply, []).append(outcome)
        for stream, outcomes in replies.items():
            stream.reply(outcomes)

    # --- running ----------------------------------------------------------------------------

    def run(self) -> None:
        """List, serve, and follow the store until stopped."""
        self.informer.start()
        self.start(self.watch_forever, self.partitions_forever, self.commits.feed_forever)
        self.stop_event.wait()
        self.commits.shutdown()
        self.partitions.release_all()
        self.shutdown()


def build(cfg: dict, store, args) -> BinderServer:
    """The component `python -m binder` runs (see common.runner)."""
    return BinderServer(cfg, store, args.id, port=args.port, metrics_port=args.metrics_port)
