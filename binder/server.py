"""The binder process: the authority on bindings.

Each shard holds one Decide stream. A decision names a pod and a node (and victims); the
binder takes the pod from its own watch (BinderView), checks the decision against its view
and its reservations (common/scheduling/checks.py) under one lock, reserves it, and hands it to the
commit pipeline (binder/commits.py), which answers on the stream as each commit completes.
A decision about a pod the watch has not shown yet waits for the watch to reach the
resourceVersion the shard saw, briefly, before it is judged. A pod group's members come as one
unit (a GroupDecision), judged and committed as a whole (binder/groups.py). A pod with claims
to bind has its volume bindings written by the pipeline, then waits off it
(binder/volume_waits.py), checked after each pass of the watch, until its claims are bound.

The binder commits only for the partitions it holds (binder/partitions.py); threads: the
gRPC workers (one reader per stream), the watch, the partition leases, the commit feeder
and its workers.
"""
from __future__ import annotations

import logging
import queue
import threading
import time

from common import plugins
from common.runtime.component import Component
from common.scheduling.disruption import Budgets, breaking
from common.runtime.events import StatusWriter
from common.runtime.logs import keys
from common.runtime.metrics import BinderMetrics, StatusWriterCollector, extender_observer, partition_gauges
from common.scheduling.extenders import Extender
from common.scheduling.partition import partition_of
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from common.scheduling.checks import Judged, first_failure, profile_checks
from common.scheduling.group_commit import GroupCommit, env_failpoint
from common.config.plugin_names import COSCHEDULING, GANG_SCHEDULING
from common.config.profile_plugins import gang_scheduler_names
from common.model.podgroup import KIND, NATIVE_KIND
from .commits import Commits, Pending
from .groups import GroupPending, GroupRules, IntentRecovery, judge_unit
from .partitions import PartitionLeases
from .view import BinderView, Reservation
from .volume_waits import VolumeWaits

log = logging.getLogger(__name__)

#: How long a decision about a pod the watch has not shown yet may wait for it.
WAIT_FOR_WATCH_S = 2.0
#: Chunks committed at once, one by each commit worker; each is one pipelined store call.
COMMIT_WORKERS = 4
#: How long the event writer gathers Scheduled events before it writes them: one store call
#: for about 50 of them at 1,000 bindings a second instead of one for every few (events are
#: best effort and read by people, so 50 ms later is no loss).
EVENT_LINGER_S = 0.05


class Stream:
    """One shard's Decide stream: where its outcomes go. Commit workers and the stream's
    reader hand over lists of outcomes; the stream sends whatever has gathered since its
    last message as one message. (It does not wait for more: holding outcomes back 10 ms
    to send fewer messages cut the binder's CPU per pod by a tenth, but the whole-stack
    bench's p50 and p90 latency rose by seconds in three runs of four; why was not found.)"""

    def __init__(self, shard: str = ""):
        self.shard = shard
        self.out: queue.SimpleQueue = queue.SimpleQueue()  # lists of pb.Outcome; None ends
        self._ended = False

    def reply(self, outcomes: list) -> None:
        if outcomes:
            self.out.put(outcomes)

    def end(self) -> None:
        """No more outcomes: `take` returns None once what came before is taken."""
        self.out.put(None)

    def take(self) -> "pb.OutcomeBatch | None":
        """The next message: every outcome handed over so far, in order (waiting for the
        first); None once the stream has ended."""
        if self._ended:
            return None
        first = self.out.get()
        if first is None:
            self._ended = True
            return None
        outcomes = list(first)
        while True:
            try:
                more = self.out.get_nowait()
            except queue.Empty:
                break
            if more is None:
                self._ended = True
                break
            outcomes += more
        return pb.OutcomeBatch(outcomes=outcomes)


def plugin_of(reason: str) -> str | None:
    """The plugin a refusal names first ("NodeResourcesFit: Insufficient cpu"), if any."""
    head = reason.split(":", 1)[0]
    return head if head in plugins.KNOWN else None


class BinderServer(Component, rpc.BinderServicer):
    role = "binder"
    section = "binders"

    def __init__(self, cfg, store, index: int | str, port: int | None = None,
                 metrics_port: int | None = None, tracer=None):
        binders = cfg.binders
        number = int(index) if str(index).isdigit() else 0
        self.metrics = BinderMetrics(str(index))
        super().__init__(cfg, store, number, port, metrics_port, self.metrics.registry, tracer)
        #: With tracing on: pod key -> (its decision's traceparent, when the decision arrived)
        self.traces: dict[str, tuple[str, float]] = {}
        self.id = str(index)
        names = {p.scheduler_name for p in cfg.profiles}
        if cfg.dispatcher.also_default_scheduler:
            names.add("default-scheduler")
        self.view = BinderView(names, cfg.shards.assume_ttl_seconds,
                               doubt_s=2 * cfg.store.request_timeout_seconds)
        #: schedulerName -> the checks its pods get; other pods (default-scheduler's, with
        #: alsoDefaultScheduler) get the first profile's, as a shard schedules them with it.
        self.checks = profile_checks(cfg, binders.cross_node_checks)
        self.default_checks = self.checks[cfg.profiles[0].scheduler_name]
        self.partition_count = binders.count
        self.partition_label = binders.partition_label
        self.lock = threading.Lock()
        self.informer = self.view.intake.informer(store, self._relist, apply=self._apply,
                                                  linger_s=cfg.store.watch_linger_seconds, lock=self.lock)
        self.group_rules = GroupRules(self.view, {KIND: gang_scheduler_names(cfg, COSCHEDULING),
                                                  NATIVE_KIND: gang_scheduler_names(cfg, GANG_SCHEDULING)})
        self.group_commit = GroupCommit(store, failpoint=env_failpoint())
        #: Scheduled and Preempted events, written off the commit path.
        self.status = StatusWriter.from_config(cfg, store, f"shardsched-binder-{self.id}", linger_s=EVENT_LINGER_S)
        self.volume_waits = VolumeWaits(cfg, lambda p: self.partitions.holds(p))
        self.commits = Commits(store, self._settle, lambda p: self.partitions.holds(p),
                               max(1, min(COMMIT_WORKERS, binders.max_in_flight)), self.stop_event,
                               self._count, self.group_commit, self.status, self.volume_waits.add,
                               self._binding_extender(cfg))
        self.recovery = IntentRecovery(store, self.group_commit, self.view, self.lock, self.checks_for,
                                       self.commits.groups_busy, grace_s=3 * cfg.store.request_timeout_seconds)
        self.partitions = PartitionLeases(store, binders.count, number, binders.lease_duration_seconds,
                                          on_acquire=self.recovery.on_acquire)
        partition_gauges(self.metrics.registry, self.id, binders.count, self.partitions.held_now)
        StatusWriterCollector(self.metrics.registry, f"binder-{self.id}", self.status.counters)
        self.health.add_ready("informer", lambda: None if self.informer.rv is not None else "not listed yet")
        self.deferred: list[tuple] = []  # (decision, stream, deadline) waiting for the watch
        self.deferred_units: list[tuple] = []  # (group decision, stream, deadline) likewise

    def checks_for(self, pod) -> tuple:
        """The checks of the filters the pod's profile runs (common.scheduling.checks.profile_checks)."""
        return self.checks.get(pod.scheduler_name, self.default_checks)

    def feed_forever(self) -> None:
        self.commits.feed_forever(lambda: self.health.beat("commits"))

    def _binding_extender(self, cfg) -> Extender | None:
        """The extender with bindVerb (validation allows one), timed into the metrics."""
        for ext in cfg.extenders:
            if ext.bind_verb:
                return Extender(ext, extender_observer(self.metrics.extender_duration))
        return None

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
                "waiting_for_watch": len(self.deferred) + len(self.deferred_units),
                "waiting_for_volumes": len(self.volume_waits)}

    def gauges(self) -> dict[str, int]:
        return {"partitions_held": len(self.partitions.held_now()), "skipped_objects": self.informer.skipped,
                **self.status.counters}

    # --- following the store and holding partitions ---------------------------------------

    def watch_step(self) -> None:
        self.informer.sync(timeout=0.05 if self.deferred or self.deferred_units or len(self.volume_waits) else 0.2)
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
            units, self.deferred_units = self.deferred_units, []
            for gd, stream, deadline in units:
                self._receive_units_locked([gd], stream, now >= deadline, deadline)

    def watch_forever(self) -> None:
        self.loop_forever(self.watch_step, "watch")

    def write_status_forever(self) -> None:
        self.status.run(self.stop_event)

    def partitions_forever(self) -> None:
        self.partitions.holder = self.group_commit.holder = self.address
        try:
            self.partitions.take_own()
        except Exception as e:  # `step` tries again
            self.counters["lease_errors"] += 1
            self.errors.error("partition leases", e)
        while not self.stop_event.is_set():
            self.health.beat("partitions")
            try:
                self.partitions.step(self.commits.busy)
                self.counters["intents_resolved"] += self.recovery.sweep(self.partitions.held_now())
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
                    self.receive(batch.decisions, stream, batch.groups)
            except Exception as e:  # the shard went away; its in-flight commits still settle
                if not self.stop_event.is_set():
                    log.warning("decision stream from %s broke: %s", context.peer(), str(e) or type(e).__name__)
            stream.end()

        threading.Thread(target=read, daemon=True, name="decide-reader").start()
        while (batch := stream.take()) is not None:
            yield batch

    def receive(self, decisions, stream: Stream, units=()) -> None:
        """Judge, reserve and queue for commit (decisions, and pod groups' units as wholes);
        refusals are answered at once."""
        with self.lock:
            self._receive_locked(decisions, stream, {})
            if units:
                self._receive_units_locked(units, stream, False, None)

    def _receive_units_locked(self, units, stream: Stream, last: bool, deadline) -> None:
        refused, passed = [], []
        for gd in units:
            self.counters["decisions"] += len(gd.members)
            for d in gd.members:
                if d.traceparent:
                    self.traces.setdefault(d.pod_key, (d.traceparent, time.monotonic()))
            verdict = judge_unit(gd, lambda d, may_wait: self._judge(d, may_wait, unit_size=None),
                                 self.view, self.group_rules, may_wait=not last)
            if verdict is None:
                self.deferred_units.append((gd, stream, deadline or time.monotonic() + WAIT_FOR_WATCH_S))
            elif isinstance(verdict, tuple):
                failed, why = verdict
                refused += [self._refusal(d, why if d.pod_key == failed else f"GroupRefused: {failed}: {why}",
                                          stream.shard) for d in gd.members]
            else:
                passed.append(GroupPending(gd.group, verdict, stream, stream.shard))
        stream.reply(refused)
        if passed:
            self.commits.submit(passed)

    def _receive_locked(self, decisions, stream: Stream, waited: dict) -> None:
        refused, passed = [], []
        self.counters["decisions"] += len(decisions)
        for d in decisions:
            if d.traceparent:  # (a decision waiting for the watch keeps its first arrival)
                self.traces.setdefault(d.pod_key, (d.traceparent, time.monotonic()))
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

    def _judge(self, d, may_wait: bool, unit_size: int | None = 1):
        """A Reservation, the reason for refusing, or None to wait for the watch. A lone
        decision is a unit of one for its pod group; a group decision's members are judged
        with `unit_size` None (judge_unit checks the unit)."""
        view, key = self.view, d.pod_key
        pod = view.pending_pod(key)
        if pod is None:
            node = view.bound_to(key)
            if node is not None:
                return f"AlreadyBound: {key} is bound to {node}"
            if key in view.reserved or view.acc.is_assumed(key):
                return f"InFlight: a decision for {key} is being committed"
            if d.pod_resource_version and not self.informer.seen("Pod", d.pod_resource_version):
                return None if may_wait else f"NotSeenYet: the binder's watch has not reached {key}"
            return f"PodNotFound: {key} is not a pending pod of this scheduler"
        if d.pod_uid and pod.uid != d.pod_uid:
            return f"UIDMismatch: {key} was recreated"
        if pod.deleting:
            return f"PodNotFound: {key} is being deleted"
        if pod.scheduling_gates:
            return f"SchedulingGated: {key} has scheduling gates"
        if key in view.reserved:
            return f"InFlight: a decision for {key} is being committed"
        info = view.nodes.get(d.node)
        partition = partition_of(info.node if info is not None and info.node is not None else d.node,
                                  self.partition_count, self.partition_label)
        if not self.partitions.accepts(partition):
            return f"NotPartitionHolder: partition {partition} (node {d.node}) is not held by binder {self.id}"
        if unit_size is not None and (why := self.group_rules.unit_failure(pod, unit_size)) is not None:
            return why
        judged = Judged(view, pod, d.node, [(v.key, v.uid) for v in d.victims])
        why = (first_failure(judged, self.checks_for(pod))
               or self.group_rules.victims_failure(pod, judged.victims))
        if why is not None:
            return why
        victims = [(v.key, v.uid) for v in judged.victims]
        return Reservation(pod, d.node, victims, self._deleted_outright(judged.victims), partition,
                           judged.volume_plan, judged.device_plan)

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
        return breaking(victims, budgets)

    def _refusal(self, d, reason: str, shard: str):
        if log.isEnabledFor(logging.DEBUG):
            log.debug("decision for %s on %s refused: %s", d.pod_key, d.node, reason,
                      **keys(d.pod_key, d.node, plugin_of(reason)))
        outcome = pb.Outcome(pod_key=d.pod_key, node=d.node, bound=False, reason=reason)
        self._record([(outcome, shard)])
        return outcome

    def _record(self, answered: list[tuple]) -> None:
        """Count outcomes, [(outcome, shard)], into the metrics and counters: one increment
        per reason and shard (a labelled metric's look-up and lock cost more than the
        rest of a decision's bookkeeping)."""
        by_label: dict[tuple[str, str], int] = {}
        for outcome, shard in answered:
            if self.traces:
                self._trace_commit(outcome, shard)
            reason = outcome.reason
            name = "Bound" if not reason else reason.split(":", 1)[0].split(" ", 1)[0]
            by_label[name, shard] = by_label.get((name, shard), 0) + 1
        for (name, shard), n in by_label.items():
            self.metrics.outcomes.labels(name, shard, self.id).inc(n)
            if name == "Bound":
                self.counters["bound"] += n
            else:
                self.counters["rejected"] += n
                self.counters["rejected_" + name] += n

    def _trace_commit(self, outcome, shard: str) -> None:
        """The commit's span, from the decision's arrival to its outcome, a child of the
        shard's cycle that decided it."""
        parent = self.traces.pop(outcome.pod_key, None)
        if parent is not None:
            self.tracer.span("commit", parent[0], parent[1], time.monotonic(), {
                "pod": outcome.pod_key, "node": outcome.node, "shard": shard, "binder": self.id,
                "result": "bound" if outcome.bound else outcome.reason.split(":", 1)[0]})

    def _settle(self, settled: list) -> None:
        """End the reservations of a committed chunk; one outcome batch per stream."""
        with self.lock:
            for _, outcome, how in settled:
                self.view.settle(outcome.pod_key, how)
        replies: dict = {}
        debug = log.isEnabledFor(logging.DEBUG)
        for it, outcome, _ in settled:
            if debug and not outcome.bound:
                log.debug("decision for %s on %s not committed: %s", outcome.pod_key, outcome.node, outcome.reason,
                          **keys(outcome.pod_key, outcome.node, plugin_of(outcome.reason)))
            replies.setdefault(it.reply, []).append(outcome)
        self._record([(outcome, it.shard) for it, outcome, _ in settled])
        for stream, outcomes in replies.items():
            stream.reply(outcomes)

    # --- running ----------------------------------------------------------------------------

    def run(self) -> None:
        """List, serve, and follow the store until stopped."""
        self.informer.start()
        self.start(self.watch_forever, self.partitions_forever, self.feed_forever, self.write_status_forever)
        self.stop_event.wait()
        self.commits.shutdown()
        self.partitions.release_all()
        self.status.drain(1.0)
        self.shutdown()


def build(cfg, store, args) -> BinderServer:
    """The component `python -m binder` runs (see common.runtime.runner)."""
    return BinderServer(cfg, store, args.id, port=args.port, metrics_port=args.metrics_port)
