"""The shard process: the scheduling loop behind a gRPC Dispatch service.

Threads: gRPC workers put dispatched pods into an inbox; one receiver thread per binder link
puts outcomes there too; the main thread owns the loop (cache, queue, snapshot) and is the
only one that touches it, so the loop needs no locks. Each pass drains the inbox, applies the
store's events, runs scheduling cycles, and sends the decisions of the pass to the binders in
one batch per binder.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque

from common.runtime.component import Component
from common.runtime.events import FAILED_SCHEDULING, WARNING, StatusWriter, pod_ref
from common.runtime.lease_lookups import LeaseLookups
from common.runtime.links import Doorbell, Inbox, StreamLink
from common.runtime.logs import DETAIL, keys
from common.runtime.metrics import ShardMetrics, StatusWriterCollector, extender_observer
from common.scheduling.extenders import build as build_extenders
from common.scheduling.partition import PARTITION_ROLE, partition_of
from common.scheduling.volume_binding import BIND_TIMEOUT_S, bind_timeout
from common.runtime.wire import MAX_REQUEST, size_of, split
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from .extenders import ShardExtenders
from .intake import DispatchedPods
from .loop import ShardLoop
from .quality import QualitySampler

log = logging.getLogger(__name__)

#: Outcomes that mean the pod is no longer ours to schedule, rather than "try again".
GONE = ("PodNotFound", "AlreadyBound", "UIDMismatch")
#: The answers that mean a binder does not (or no longer) hold the node's partition.
LOST_PARTITION = ("NotPartitionHolder", "BinderUnavailable")
#: The reason of a decision taken back from a binder that did not answer it in time.
WITHDRAWN = "Withdrawn"
CYCLES_PER_PASS = 256
#: While the binders have fewer than IDLE_BELOW decisions in hand, what a pass decided
#: leaves every FLUSH_EVERY_S instead of at the pass's end: a pass of 256 cycles at a
#: millisecond or two each would otherwise hold the first decisions back at start-up and
#: leave the binders idle. Under load the pass's end is soon enough, and fewer, larger
#: batches cost less (flushing every 20 ms throughout cost 10% of the embedded bench).
FLUSH_EVERY_S = 0.02
IDLE_BELOW = 64
#: Dispatch batches taken per pass: a backlog of thousands is parsed a few batches at a
#: time between cycles, so the first decisions leave at once rather than after all of it.
BATCHES_PER_PASS = 2
#: Refusals in a row of a pod's decisions after which a FailedScheduling event says so (the
#: shard retries each; a refusal is usually a race with another shard, resolved at once).
REFUSALS_REPORTED = 3
REPORT_EVERY_S = 0.5
#: The longest a pass waits for events while the shard has work in hand (pods in flight or
#: waiting on a permit, a partition's holder or the watch): their timers are checked this often.
BUSY_WAIT_S = 0.02
#: Shortest time between two look-ups of the partition leases.
HOLDERS_EVERY_S = 0.5
#: ... and while decisions wait for a partition's first holder (a binder still starting).
WAITING_LOOKUP_EVERY_S = 0.1
#: How often the holders are looked up anyway, off the scheduling thread (`holders_forever`):
#: for readiness (a partition without a binder) and to follow a partition that moved.
READY_EVERY_S = 2.0
#: How often decisions in flight are checked against shards.decisionTimeoutSeconds.
OVERDUE_EVERY_S = 1.0
#: After its initial list, a shard reads the events written meanwhile until a read brings
#: fewer than this many (a fraction of a second of a busy cluster's events), and only then
#: takes its lease (see ShardServer.catch_up).
CAUGHT_UP_BELOW = 1000
#: Events read at once while catching up: a pod's events (created, bound, started) fall in
#: one read more often, so fewer of them are decoded; the raw entries of a read are held
#: together (about 2 KB each).
CATCH_UP_READ = 20000


class BinderClient:
    """The server's committer: each decision goes to the binder holding its node's partition
    (common.scheduling.partition), in one batch per binder per pass (`flush`); the outcomes arrive
    later through the inbox. Who holds which partition comes from the partition leases,
    looked up again when a partition has no known holder or a binder says it lost one."""

    def __init__(self, store, shard_id: str, cfg, inbox, node_of, security, trace_of=None):
        """`trace_of(pod key)`: the traceparent of the cycle that decided the pod ("": none);
        None with tracing off."""
        self.trace_of = trace_of
        """`node_of(name)`: the node as the shard knows it (None if it does not);
        `security` (common.runtime.security) makes the channels to the binders."""
        self.store = store
        self.security = security
        self.shard_id = shard_id
        self.partitions = cfg.binders.count
        self.label = cfg.binders.partition_label
        self.node_of = node_of
        self.inbox = inbox
        self.links: dict[str, StreamLink] = {}  # binder address -> its stream
        self.holders: dict[int, str] = {}        # partition -> binder address
        self._looked_up = self._forgot_at = 0.0
        self.in_flight: dict[str, tuple] = {}    # pod key -> (entry, result)
        #: pod key -> (sent at, link, partition) of each decision a binder has not answered
        self.sent: dict[str, tuple] = {}
        self.decision_timeout = cfg.shards.decision_timeout_seconds
        #: schedulerName -> its profile's VolumeBinding bindTimeoutSeconds (resolved once)
        self.bind_timeouts = {p.scheduler_name: bind_timeout(cfg, p.scheduler_name) for p in cfg.profiles}
        #: pod key -> how long its decision may go unanswered, where longer than
        #: decision_timeout (a pod whose claims the binder binds first)
        self.patience: dict[str, float] = {}
        #: outcomes of decisions withdrawn from binders (for the loop to settle)
        self.withdrawn: list = []
        self.outgoing: dict[int, list] = {}      # partition -> decisions of this pass
        self.outgoing_groups: dict[int, list] = {}  # partition -> group decisions of this pass
        #: partition -> since when its decisions wait for a holder (see `flush`)
        self.unheld_since: dict[int, float] = {}

    def _decision(self, entry, result) -> pb.Decision:
        pod, node = entry.pod, result.node
        self.in_flight[pod.key] = (entry, result)
        if any(v.claim for v in pod.volumes):
            # the binder answers once the pod's claims are bound (VolumeBinding's PreBind waits
            # up to bindTimeoutSeconds): only past that is the silence a stuck binder's
            wait = self.bind_timeouts.get(pod.scheduler_name, BIND_TIMEOUT_S)
            self.patience[pod.key] = self.decision_timeout + wait
        return pb.Decision(pod_key=pod.key, pod_uid=pod.uid or "", node=node,
                           victims=[pb.Victim(key=v.key, uid=v.uid or "") for v in result.victims],
                           pod_resource_version=pod.resource_version)

    def _partition(self, node: str) -> int:
        return partition_of(self.node_of(node) or node, self.partitions, self.label)

    def commit(self, entry, result, budgets) -> None:
        self.outgoing.setdefault(self._partition(result.node), []).append(self._decision(entry, result))
        return None  # the binder answers later

    def commit_unit(self, unit: str, items: list, budgets) -> None:
        """A pod group's members, in one GroupDecision to the binder of their partition (the
        Coscheduling plugin keeps a waiting group within one)."""
        group = pb.GroupDecision(group=unit, members=[self._decision(e, r) for e, r in items])
        self.outgoing_groups.setdefault(self._partition(items[0][1].node), []).append(group)
        return None

    def refresh_holders(self) -> None:
        """Look the partition holders up again now, from the scheduling thread: a partition
        has no known holder, or decisions went unanswered. (The look-up every READY_EVERY_S
        runs off that thread: ShardServer's `holder_lookups`.)"""
        looked_at = time.monotonic()
        self.use_holders(self.store.list_leases(PARTITION_ROLE), looked_at)

    def use_holders(self, leases: dict[str, str], looked_at: float) -> None:
        """Who holds which partition, as the partition leases looked up at `looked_at` say
        (a look from here, or from `holder_lookups` through the inbox). An answer
        begun before the one in use, or before a binder said it lost its partition, is older
        news and dropped. A decision sent to a binder that no longer holds its partition is
        withdrawn: that binder's lease is gone, so it commits nothing (its fencing check), and
        the decision is made again for the current holder."""
        if looked_at < max(self._looked_up, self._forgot_at):
            return
        self.holders = {int(p): a for p, a in leases.items()}
        self._looked_up = looked_at
        moved = [k for k, (_, link, p) in self.sent.items() if self.holders.get(p, link.address) != link.address]
        if moved:
            self._withdraw(moved, "its partition moved to another binder")

    def _withdraw(self, keys, why: str) -> None:
        by_link: dict = {}
        for key in keys:
            _, link, p = self.sent.pop(key)
            self.patience.pop(key, None)
            link.held.discard(key)
            by_link.setdefault(link.address, []).append(key)
            self.withdrawn.append(pb.Outcome(pod_key=key, bound=False,
                                             reason=f"{WITHDRAWN}: from binder at {link.address}: {why}"))
        for address, ks in by_link.items():
            log.warning("withdrew %d decision(s) from binder at %s (%s); deciding them again for the "
                        "current holder", len(ks), address, why)

    def overdue(self) -> list:
        """Outcomes of the decisions withdrawn since the last call: those no binder answered
        within shards.decisionTimeoutSeconds, and those whose partition moved."""
        now = time.monotonic()
        late: dict[float, list] = {}
        for k, (at, _, _) in self.sent.items():
            limit = self.patience.get(k, self.decision_timeout)
            if now - at > limit:
                late.setdefault(limit, []).append(k)
        for limit, overdue in late.items():
            self._withdraw(overdue, f"no answer within {limit:g} s")
        if late:
            self.refresh_holders()
        out, self.withdrawn = self.withdrawn, []
        return out

    def unheld(self) -> list[int]:
        """Partitions no binder held at the last look-up."""
        return [p for p in range(self.partitions) if p not in self.holders]

    def forget_holders(self) -> None:
        """A binder said it does not hold a partition: look the holders up again."""
        self.holders = {}
        self._forgot_at = time.monotonic()

    def _holder(self, partition: int) -> str | None:
        every = WAITING_LOOKUP_EVERY_S if self.unheld_since else HOLDERS_EVERY_S
        if partition not in self.holders and time.monotonic() - self._looked_up > every:
            self.refresh_holders()
        return self.holders.get(partition)

    def idle(self) -> bool:
        """Whether fewer than IDLE_BELOW sent decisions await their outcomes: the binders
        may run dry unless what this pass decided so far leaves now."""
        waiting = sum(len(d) for d in self.outgoing.values()) + sum(
            len(g.members) for gs in self.outgoing_groups.values() for g in gs)
        return len(self.in_flight) - waiting < IDLE_BELOW

    def flush(self) -> list:
        """Send this pass's decisions; returns outcomes for those no binder could take.

        The decisions of a partition no binder holds wait (assumed, in `outgoing`) for one
        to take it, up to decisionTimeoutSeconds, then fail as BinderUnavailable. At start-up
        the shards are usually ready before the binder holds its partition: failing their
        first decisions at once sent each pod into its backoff, a second or more."""
        unsent, by_address, waiting = [], {}, {}
        now = time.monotonic()
        for partition in set(self.outgoing) | set(self.outgoing_groups):
            decisions = self.outgoing.get(partition, [])
            groups = self.outgoing_groups.get(partition, [])
            address = self._holder(partition)
            if address is None:
                since = self.unheld_since.setdefault(partition, now)
                if now - since < self.decision_timeout:
                    waiting[partition] = (decisions, groups)
                    continue
                del self.unheld_since[partition]
                unsent += [pb.Outcome(pod_key=d.pod_key, node=d.node, bound=False,
                                      reason=f"BinderUnavailable: partition {partition} has no binder "
                                             f"(waited {now - since:.0f} s)")
                           for d in decisions + [m for g in groups for m in g.members]]
            else:
                self.unheld_since.pop(partition, None)
                if self.trace_of is not None:
                    for d in decisions + [m for g in groups for m in g.members]:
                        d.traceparent = self.trace_of(d.pod_key)  # (its cycle's span is recorded by now)
                batch = by_address.setdefault(address, ([], []))
                batch[0].extend(decisions)
                batch[1].extend(groups)
        for address, (decisions, groups) in by_address.items():
            too_large = [g for g in groups if size_of(g) > MAX_REQUEST - 1024]
            for g in too_large:
                log.error("pod group %s: its decision is %d bytes, more than a message may carry (%d)",
                          g.group, size_of(g), MAX_REQUEST)
                unsent += [pb.Outcome(pod_key=m.pod_key, node=m.node, bound=False,
                                      reason=f"GroupTooLarge: {g.group}'s decision is more than "
                                             f"{MAX_REQUEST} bytes") for m in g.members]
            groups = [g for g in groups if g not in too_large]
            link = self._link(address)
            link.held.update(d.pod_key for d in decisions)
            link.held.update(m.pod_key for g in groups for m in g.members)
            for d in decisions:
                self.sent[d.pod_key] = (now, link, self._partition(d.node))
            for g in groups:
                p = self._partition(g.members[0].node) if g.members else 0
                for m in g.members:
                    self.sent[m.pod_key] = (now, link, p)
            # messages of at most wire.MESSAGE_BUDGET bytes (a group is one, whatever its size)
            for run in split(decisions):
                if run:
                    link.send(pb.DecisionBatch(shard=self.shard_id, decisions=run))
            for run in split(groups):
                if run:
                    link.send(pb.DecisionBatch(shard=self.shard_id, groups=run))
        self.outgoing = {p: d for p, (d, _) in waiting.items() if d}
        self.outgoing_groups = {p: g for p, (_, g) in waiting.items() if g}
        return unsent

    def _link(self, address: str) -> StreamLink:
        """The stream to a binder. Its outcomes do not wake the loop: while decisions are in
        flight a pass waits at most BUSY_WAIT_S, as before the doorbell, and the binding's
        watch event, which comes about when the outcome does, wakes it anyway (waking for
        both could cost two passes a pod); the end of the stream does wake it."""
        link = self.links.get(address)
        if link is None or not link.alive:
            link = self.links[address] = StreamLink(
                "binder", f"binder at {address}", address,
                lambda ch, requests: rpc.BinderStub(ch).Decide(requests), self.inbox, self.security,
                wake=False)
        return link

    def settle(self, outcomes, link: StreamLink | None = None) -> list[tuple]:
        """(entry, result, outcome) of each answered decision still in flight."""
        out = []
        for o in outcomes:
            if link is not None:
                if o.pod_key not in link.held:
                    continue  # withdrawn from this binder: decided again, answered elsewhere
                link.held.discard(o.pod_key)
            self.sent.pop(o.pod_key, None)
            self.patience.pop(o.pod_key, None)
            held = self.in_flight.pop(o.pod_key, None)
            if held is not None:
                out.append((*held, o))
            if o.reason.startswith(LOST_PARTITION):
                self.forget_holders()
        return out

    def lost(self, link: StreamLink) -> list:
        """The link's stream ended: its unanswered decisions fail, and the binder's
        partitions are looked up again."""
        link.close()
        if self.links.get(link.address) is link:
            del self.links[link.address]
        self.holders = {p: a for p, a in self.holders.items() if a != link.address}
        for k in link.held:
            self.sent.pop(k, None)
            self.patience.pop(k, None)
        return [pb.Outcome(pod_key=k, bound=False, reason="BinderUnavailable: stream lost")
                for k in list(link.held)]


class ShardServer(Component, rpc.ShardServicer):
    role = "shard"
    section = "shards"

    def __init__(self, cfg, store, index: int, port: int | None = None, seed: int = 0,
                 metrics_port: int | None = None, tracer=None):
        self.metrics = ShardMetrics(str(index))
        super().__init__(cfg, store, index, port, metrics_port, self.metrics.registry, tracer)
        #: rung by the watch and the inbox: what an idle pass waits on (see `_wait_for`)
        self.doorbell = Doorbell()
        self.inbox = Inbox(self.doorbell.ring)
        self.owned = DispatchedPods()
        #: With tracing on: pod key -> the traceparent of its dispatch, and of the cycle that
        #: placed it (until its decision is sent)
        self.traces: dict[str, str] = {}
        self.decided: dict[str, str] = {}
        self.binders = BinderClient(store, self.id, cfg, self.inbox, self._node, self.security,
                                    (lambda key: self.decided.pop(key, "")) if self.tracer.enabled else None)
        #: the partition leases looked at off the scheduling thread (`holders_forever`)
        self.holder_lookups = LeaseLookups(store, PARTITION_ROLE, self.inbox, "holders", self.errors, self.counters)
        extenders = ShardExtenders(build_extenders(cfg.extenders, extender_observer(self.metrics.extender_duration)))
        self.loop = ShardLoop(cfg, store, seed=seed + index, owner=self.owned, committer=self.binders,
                              slice_of=(index, cfg.shards.count), extenders=extenders)
        self.loop.queue.on_incoming = self.metrics.queued
        #: whether the watch rings the doorbell (kube://, memory): then a shard with nothing
        #: in hand sleeps until its next timer; on Redis it polls every BUSY_WAIT_S
        self.event_driven = self.loop.informer.wake_with(self.doorbell)
        #: A sample of the cycles' choices graded off the clock (shards.qualitySamplePercent).
        self.quality = QualitySampler(cfg.shards.quality_sample_percent, seed + index)
        #: Conditions and events, written off the scheduling thread.
        self.status = StatusWriter.from_config(cfg, store, f"shardsched-shard-{self.id}")
        StatusWriterCollector(self.metrics.registry, f"shard-{self.id}", self.status.counters)
        self.refusals: dict[str, int] = {}  # pod key -> its decisions refused in a row
        self._overdue_at = 0.0
        self.health.add_ready("informer", lambda: None if self.loop.informer.rv is not None else "not listed yet")
        self.health.add_ready("binders", lambda: "no binder holds partition " + ", ".join(
            map(str, unheld)) if (unheld := self.binders.unheld()) else None)
        self.report_streams: list[queue.SimpleQueue] = []
        #: dispatched pods the watch has not shown yet: key -> (uid, resourceVersion)
        self.waiting_for_watch: dict[str, tuple] = {}
        self.returned: list[str] = []
        self._last_report = self._last_holding = 0.0
        self.holding_every = cfg.dispatcher.redispatch_after_seconds / 3
        self.cycle_times: deque = deque(maxlen=1000)  # recent cycle durations, for Status
        #: The pod groups of the pods this shard holds, as units (for Status; refreshed with
        #: each report, in the loop's thread).
        self.units: dict = {}

    def register(self, server) -> None:
        rpc.add_ShardServicer_to_server(self, server)

    def _node(self, name: str):
        info = self.loop.cache.nodes.get(name)
        return info.node if info is not None else None

    def queues(self) -> dict[str, int]:
        lengths = self.loop.queue.lengths()
        lengths["in_flight"] = len(self.binders.in_flight)
        return lengths

    def Status(self, request, context):
        reply = super().Status(request, context)
        reply.groups.extend(pb.GroupUnit(group=key, min_member=u["minMember"], members=len(u["members"]),
                                         bound=u["bound"], assumed=u["assumed"], waiting=u["waiting"])
                            for key, u in self.units.items())
        return reply

    def gauges(self) -> dict[str, int]:
        recent = sorted(self.cycle_times)
        p99 = recent[min(len(recent) - 1, int(len(recent) * 0.99))] if recent else 0.0
        return {"threshold": self.loop.scheduler.threshold.last, "cycle_p99_us": int(p99 * 1e6),
                "skipped_objects": self.loop.informer.skipped, "packing": int(bool(self.loop.scheduler.sliced)),
                **self.status.counters, **self.quality.counts}

    # --- the dispatcher's stream ------------------------------------------------------------

    def Dispatch(self, request_iterator, context):
        reports: queue.SimpleQueue = queue.SimpleQueue()
        self.report_streams.append(reports)
        # a new leader adopts what we hold, and dispatches only once we said it: say it in the
        # next pass rather than up to REPORT_EVERY_S later (at start-up that wait was on the
        # way to the first binding)
        self._last_holding = self._last_report = 0.0
        self.doorbell.ring()
        log.info("dispatcher stream opened from %s", context.peer())

        def pump():
            try:
                for batch in request_iterator:
                    self.inbox.put(("pods", None, batch))
            except Exception as e:  # the dispatcher went away; it re-dispatches on reconnect
                if not self.stop_event.is_set():
                    log.warning("dispatcher stream broke: %s", str(e) or type(e).__name__)
            reports.put(None)

        threading.Thread(target=pump, daemon=True, name="dispatch-pump").start()
        while True:
            report = reports.get()
            if report is None:
                break
            yield report
        self.report_streams.remove(reports)

    def _take(self, batch) -> None:
        for key in batch.revoked:
            self.loop.drop(key)
            self.refusals.pop(key, None)
            self.waiting_for_watch.pop(key, None)
            self.traces.pop(key, None)
        if self.tracer.enabled:
            self.traces.update((p.key, p.traceparent) for p in batch.pods if p.traceparent)
        self._take_pods([(p.key, p.uid, p.resource_version) for p in batch.pods])

    def _take_pods(self, pods) -> None:
        """Queue dispatched pods as this shard's watch shows them; those it has not seen yet
        wait for the next sync; a pod the store does not hold is given back."""
        for key, uid, rv in pods:
            taken = self.loop.take(key, uid, rv)
            if taken is None:
                self.waiting_for_watch[key] = (uid, rv)
            elif taken:
                self.counters["dispatched"] += 1
            else:
                self.counters["dispatched_unknown"] += 1
                log.debug("dispatched pod %s is not a pending pod in the store", key, **keys(key))
                self.returned.append(key)

    # --- outcomes ---------------------------------------------------------------------------

    def _outcomes(self, outcomes, link: StreamLink | None = None) -> None:
        loop = self.loop
        for entry, result, o in self.binders.settle(outcomes, link):
            refused = self.refusals.pop(o.pod_key, 0)
            if o.bound or o.reason.startswith(GONE):
                self.traces.pop(o.pod_key, None)
            if o.bound:
                self.counters["bound"] += 1
                self.metrics.bound(entry.attempts, loop.queue.clock() - entry.initial_at)
                loop.finish_binding(entry, result, True)
                self.owned.release(o.pod_key)
            elif o.reason.startswith("AlreadyBound") and self._pending_here(o.pod_key):
                # The binder's view says bound, ours pending: one of the two has not caught up
                # (after a store rolled back to an older snapshot, the binder's watch may not have
                # noticed yet). Retried like a conflict: if it is bound, our watch will say so and
                # take it off the queue; dropping it left it to a re-dispatch, each round
                # dispatcher.redispatchAfterSeconds later.
                self.counters["conflicts"] += 1
                self.counters["conflicts_already_bound"] += 1
                loop.finish_binding(entry, result, False, o.reason)
                self._refused(entry.pod, refused + 1)
            elif o.reason.startswith(GONE):
                self.counters["gone"] += 1
                log.debug("pod %s is gone: %s", o.pod_key, o.reason, **keys(o.pod_key))
                loop.gone(entry, result)
            else:
                self.counters["conflicts"] += 1
                if o.reason.startswith(WITHDRAWN):  # no answer in time: not the placement's fault
                    self.counters["conflicts_withdrawn"] += 1
                log.debug("decision for %s on %s rejected: %s", o.pod_key, result.node, o.reason,
                          **keys(o.pod_key, result.node))
                loop.finish_binding(entry, result, False, o.reason)
                self._refused(entry.pod, refused + 1)

    def _pending_here(self, key: str) -> bool:
        """Whether this shard's watch shows the pod pending (unbound, not being deleted)."""
        known = self.loop.pods.get(key)
        return known is not None and not known.node_name and not known.deleting

    def _refused(self, pod, times: int) -> None:
        """Count a refusal in a row; every REFUSALS_REPORTED of them, an event says why."""
        if times < REFUSALS_REPORTED:
            self.refusals[pod.key] = times
            return
        self.status.event(pod_ref(pod.key, pod.uid), WARNING, FAILED_SCHEDULING, "Scheduling",
                          self.loop.messages.get(pod.key, ""))

    def _gave_up(self, key: str) -> None:
        """A gang member given up on with the one that failed: its condition says so now, as
        kube-scheduler writes every member's (not only once it is tried again)."""
        known = self.loop.pods.get(key)
        if known is not None:
            self.status.unschedulable(key, known.uid, self.loop.messages.get(key, ""))

    # --- the main loop ----------------------------------------------------------------------

    def _drain(self) -> int:
        """Apply what arrived, in order, until BATCHES_PER_PASS dispatch batches were taken
        (the rest waits for the next pass); returns how many messages it took."""
        n = batches = 0
        while batches < BATCHES_PER_PASS:
            try:
                what, link, payload = self.inbox.get_nowait()
            except queue.Empty:
                return n
            n += 1
            if what == "pods":
                batches += 1
                self._take(payload)
            elif what == "holders":
                self.binders.use_holders(*payload)
            elif payload is not None:
                self._outcomes(payload.outcomes, link)
            else:
                self._outcomes(self.binders.lost(link))
        return n

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_report < REPORT_EVERY_S:
            return
        self._last_report = now
        self.metrics.flush()  # what the pass's cycles held back (ShardMetrics)
        self.metrics.queues(self.queues(), self.loop.queue.unschedulable_by_plugin())
        report = pb.ShardReport(returned=self.returned, queued=len(self.loop.queue),
                                in_flight=len(self.binders.in_flight))
        if force or now - self._last_holding >= self.holding_every:
            self._last_holding = now
            report.holding.extend(self._holding())
            report.holding_listed = True
        self.returned = []
        for stream in list(self.report_streams):
            stream.put(report)
        group_of = self.loop.groups.group_of
        self.units = self.loop.units({group_of[k] for k in self.owned.keys if k in group_of})

    def _trace_cycle(self, result, took: float) -> None:
        """The cycle's span, a child of the pod's dispatch; a placement's is the parent of
        the binder's commit (sent in the Decision)."""
        end = time.monotonic()
        attributes = {"pod": result.pod.key, "shard": self.id,
                      "result": "scheduled" if result.scheduled else "unschedulable"}
        if result.node:
            attributes["node"] = result.node
        trace = self.tracer.span("schedule", self.traces[result.pod.key], end - took, end, attributes)
        if result.scheduled and trace:
            self.decided[result.pod.key] = trace

    def _holding(self) -> list[str]:
        """The dispatched pods this shard is really working on (see ShardReport.holding)."""
        loop, in_flight, waiting = self.loop, self.binders.in_flight, self.waiting_for_watch
        return [k for k in self.owned.keys
                if k in loop.queue or k in in_flight or k in waiting or k in loop.waiting
                or k in loop.gated or loop.cache.is_assumed(k)]

    def step(self) -> int:
        """One pass; returns the number of cycles run."""
        loop = self.loop
        busy = self._drain()
        loop.sync(timeout=0.0 if busy or loop.queue.has_active() else self._wait_for())
        if self.waiting_for_watch:
            waiting, self.waiting_for_watch = self.waiting_for_watch, {}
            self._take_pods([(k, uid, rv) for k, (uid, rv) in waiting.items()])
        cycles, flushed_at = 0, time.monotonic()
        while cycles < CYCLES_PER_PASS:
            result = loop.schedule_next()
            if result is None:
                break
            cycles += 1
            took = result.snapshot_s + sum(result.phases.values())
            if result.pod.key in self.traces:
                self._trace_cycle(result, took)  # before its decision may be sent
            if time.monotonic() - flushed_at >= FLUSH_EVERY_S and self.binders.idle():
                self._outcomes(self.binders.flush())
                flushed_at = time.monotonic()
            self.cycle_times.append(took)
            self.metrics.cycle(result, took)
            if result.scheduled and self.quality.due():
                self.quality.record(loop.scheduler.grade(result))  # before the next refresh
            if not result.scheduled:
                self.counters["unschedulable"] += 1
                message = loop.messages.get(result.pod.key, "")
                self.status.unschedulable(result.pod.key, result.pod.uid, message)
                if log.isEnabledFor(DETAIL):  # kube-scheduler's line at --v=2
                    log.log(DETAIL, "unable to schedule pod; no fit; waiting: %s", message, **keys(result.pod.key))
                for key in result.released:
                    self._gave_up(key)
        loop.release_waiting()
        self._outcomes(self.binders.flush())
        self.counters["cycles"] += cycles
        self._report()
        if time.monotonic() - self._overdue_at > OVERDUE_EVERY_S or self.binders.withdrawn:
            self._overdue_at = time.monotonic()
            self._outcomes(self.binders.overdue())
        return cycles

    def _wait_for(self) -> float:
        """How long an idle pass may wait for events (or a message: the doorbell ends the
        wait at either). With pods in hand, BUSY_WAIT_S, as their timers (decisions overdue,
        permits, a partition's holder looked up) want; with none, until the next thing due:
        a report or a pod's backoff. Where the watch cannot ring
        (Redis), BUSY_WAIT_S always: a message would otherwise wait out the whole wait."""
        binders = self.binders
        if (not self.event_driven or binders.in_flight or binders.outgoing or binders.outgoing_groups
                or binders.withdrawn or self.waiting_for_watch or self.loop.waiting.pods):
            return BUSY_WAIT_S
        now = time.monotonic()
        wait = self._last_report + REPORT_EVERY_S - now
        backoff = self.loop.queue.next_backoff()  # (on the queue's clock)
        if backoff is not None:
            wait = min(wait, backoff - self.loop.queue.clock())
        return min(REPORT_EVERY_S, max(0.0, wait))

    def write_status_forever(self) -> None:
        self.status.run(self.stop_event)

    def holders_forever(self) -> None:
        """The partition holders looked up at once and then every READY_EVERY_S, off the
        scheduling thread (common/runtime/lease_lookups.py), for the decisions' routing and
        for readiness (a partition no binder holds)."""
        self.holder_lookups.forever(self.stop_event, lambda: READY_EVERY_S)

    def catch_up(self) -> int:
        """Apply the events written while the initial list loaded; returns how many.

        Listing a million running pods takes a minute and more, and meanwhile the cluster
        writes thousands of events a second. A shard that took its lease straight after the
        list was given pods its watch had not shown yet: they waited (as its own) while it
        read the backlog (the likely reason a shard restarted over 1,000,000 running pods ran
        no cycle in the minute left of its run). Holding the lease only once caught up, it is
        given pods when it can schedule them.

        Nothing is dispatched to it yet, so, like its list, it needs each object as it is now,
        not each step of the way: it reads each object's last event only (ShardLoop.sync's
        `latest`), and counts the pods they bring node by node: catching up with the events
        of a minute of a busy cluster (three per pod: created, bound, running) took 4.5 s
        after a million running pods' list."""
        started, n = time.monotonic(), 0
        while not self.stop_event.is_set():
            got = self.loop.sync(0.0, latest=True, max_events=CATCH_UP_READ)
            n += got
            if got < CAUGHT_UP_BELOW:
                break
        log.info("caught up with %d events written during the initial list in %.2f s", n,
                 time.monotonic() - started)
        return n

    def run(self) -> None:
        self.loop.start()
        self.catch_up()
        self.start(self.write_status_forever, self.holders_forever)
        self.loop_forever(self.step)
        self.returned = [k for k in self.owned.keys if k not in self.binders.in_flight]
        self._report(force=True)
        for stream in list(self.report_streams):
            stream.put(None)
        self.status.drain(1.0)
        self.shutdown()


def build(cfg, store, args) -> ShardServer:
    """The component `python -m shard` runs (see common.runtime.runner)."""
    return ShardServer(cfg, store, int(args.id), port=args.port, seed=args.seed,
                       metrics_port=args.metrics_port)
