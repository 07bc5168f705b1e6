"""The shard process: the scheduling loop behind a gRPC Dispatch service.

Threads: gRPC workers put dispatched pods into an inbox; one receiver thread per binder puts
outcomes there too; the main thread owns the loop (cache, queue, snapshot) and is the only
one that touches it, so the loop needs no locks. Each pass drains the inbox, applies the
store's events, runs scheduling cycles, and sends the decisions of the pass to the binders
in one batch per binder.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque

import orjson

from binder.partition import binder_for
from common.component import Component, channel, metrics_port_for, port_for
from common.metrics import ShardMetrics
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from .loop import ShardLoop

#: Outcomes that mean the pod is no longer ours to schedule, rather than "try again".
GONE = ("PodNotFound", "AlreadyBound", "UIDMismatch")
CYCLES_PER_PASS = 256
REPORT_EVERY_S = 0.5


class BinderLink:
    """One Decide stream to one binder; outcomes go to the shard's inbox."""

    def __init__(self, index: int, address: str, shard_id: str, inbox):
        self.index = index
        self.address = address
        self.keys: set[str] = set()   # decisions sent and not answered
        self.alive = True
        self._out: queue.SimpleQueue = queue.SimpleQueue()
        self._channel = channel(address)
        stub = rpc.BinderStub(self._channel)
        self._responses = stub.Decide(self._requests(shard_id))
        self._inbox = inbox
        threading.Thread(target=self._receive, daemon=True, name=f"binder-link-{index}").start()

    def _requests(self, shard_id: str):
        while True:
            decisions = self._out.get()
            if decisions is None:
                return
            yield pb.DecisionBatch(shard=shard_id, decisions=decisions)

    def _receive(self) -> None:
        try:
            for batch in self._responses:
                self._inbox.put(("outcomes", self, batch))
        except Exception:
            pass  # the binder died or the stream was closed; reported just below
        self._inbox.put(("binder_down", self, None))

    def send(self, decisions: list) -> None:
        self.keys.update(d.pod_key for d in decisions)
        self._out.put(decisions)

    def close(self) -> None:
        self.alive = False
        self._out.put(None)
        self._channel.close()


class ShardServer(Component, rpc.ShardServicer):
    role = "shard"

    def __init__(self, cfg: dict, store, index: int, port: int | None = None, seed: int = 0,
                 metrics_port: int | None = None):
        shards = cfg["shards"]
        self.metrics = ShardMetrics(str(index))
        super().__init__(str(index), store, shards["host"],
                         port_for(shards["basePort"], index, port),
                         cfg["dispatcher"]["shardTimeoutSeconds"],
                         metrics_port_for(shards["metricsBasePort"], index, metrics_port),
                         self.metrics.registry)
        self.binder_count = cfg["binders"]["count"]
        self.loop = ShardLoop(cfg, store, seed=seed + index)
        self.loop.dispatched = set()
        self.loop.commit = self._decide
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.in_flight: dict[str, tuple] = {}      # pod key -> (entry, result)
        self.outgoing: dict[int, list] = {}        # binder index -> decisions of this pass
        self.links: dict[int, BinderLink] = {}
        self.report_streams: list[queue.SimpleQueue] = []
        self.returned: list[str] = []
        self._last_report = 0.0
        self.cycle_times: deque = deque(maxlen=1000)  # recent cycle durations, for Status

    def register(self, server) -> None:
        rpc.add_ShardServicer_to_server(self, server)

    def queues(self) -> dict[str, int]:
        lengths = self.loop.queue.lengths()
        lengths["in_flight"] = len(self.in_flight)
        return lengths

    def gauges(self) -> dict[str, int]:
        recent = sorted(self.cycle_times)
        p99 = recent[min(len(recent) - 1, int(len(recent) * 0.99))] if recent else 0.0
        return {"threshold": self.loop.scheduler.threshold.last, "cycle_p99_us": int(p99 * 1e6)}

    # --- the dispatcher's stream ------------------------------------------------------------

    def Dispatch(self, request_iterator, context):
        reports: queue.SimpleQueue = queue.SimpleQueue()
        self.report_streams.append(reports)

        def pump():
            try:
                for batch in request_iterator:
                    self.inbox.put(("pods", None, batch))
            except Exception:
                pass  # the dispatcher went away; it re-dispatches on reconnect
            reports.put(None)

        threading.Thread(target=pump, daemon=True, name="dispatch-pump").start()
        while True:
            report = reports.get()
            if report is None:
                break
            yield report
        self.report_streams.remove(reports)

    def _take(self, batch) -> None:
        loop = self.loop
        for key in batch.revoked:
            loop.drop(key)
        for p in batch.pods:
            known = loop.pods.get(p.key)
            if known is not None and known.node_name:
                continue  # already bound: the watch was faster than the dispatcher
            loop.dispatched.add(p.key)
            try:
                obj = orjson.loads(p.json)
            except orjson.JSONDecodeError:
                self.counters["bad_dispatch"] += 1
                continue
            if known is None or p.key not in loop.queue:
                loop.apply("MODIFIED", "Pod", obj)
            self.counters["dispatched"] += 1

    # --- decisions and outcomes -------------------------------------------------------------

    def _decide(self, entry, result) -> None:
        pod, node = entry.pod, result.node
        info = self.loop.scheduler.snapshot.raw.get(node)
        decision = pb.Decision(pod_key=pod.key, pod_uid=pod.uid or "", node=node,
                               victims=[pb.Victim(key=v.key, uid=v.uid or "") for v in result.victims],
                               node_generation=info.generation if info is not None else 0,
                               pod_json=orjson.dumps(pod.raw))
        self.in_flight[pod.key] = (entry, result)
        self.outgoing.setdefault(binder_for(node, self.binder_count), []).append(decision)

    def _flush(self) -> None:
        for index, decisions in self.outgoing.items():
            link = self._link(index)
            if link is None:
                self._outcomes([pb.Outcome(pod_key=d.pod_key, node=d.node, bound=False,
                                           reason=f"BinderUnavailable: binder {index}")
                                for d in decisions])
                continue
            link.send(decisions)
            self.counters["decisions"] += len(decisions)
        self.outgoing = {}

    def _link(self, index: int) -> BinderLink | None:
        link = self.links.get(index)
        if link is not None and link.alive:
            return link
        address = self.store.list_leases("binder").get(str(index))
        if address is None:
            return None
        link = self.links[index] = BinderLink(index, address, self.id, self.inbox)
        return link

    def _outcomes(self, outcomes, link: BinderLink | None = None) -> None:
        loop = self.loop
        for o in outcomes:
            if link is not None:
                link.keys.discard(o.pod_key)
            held = self.in_flight.pop(o.pod_key, None)
            if held is None:
                continue
            entry, result = held
            if o.bound:
                self.counters["bound"] += 1
                self.metrics.pod_attempts.labels(self.id).observe(entry.attempts)
                loop.finish_binding(entry, result, True)
                loop.dispatched.discard(o.pod_key)
            elif o.reason.startswith(GONE):
                self.counters["gone"] += 1
                loop.cache.forget(o.pod_key)
                loop.drop(o.pod_key)
            else:
                self.counters["conflicts"] += 1
                loop.finish_binding(entry, result, False, o.reason)

    def _binder_down(self, link: BinderLink) -> None:
        link.close()
        if self.links.get(link.index) is link:
            del self.links[link.index]
        self._outcomes([pb.Outcome(pod_key=k, bound=False, reason="BinderUnavailable: stream lost")
                        for k in list(link.keys)])

    # --- the main loop ----------------------------------------------------------------------

    def _drain(self) -> int:
        n = 0
        while True:
            try:
                what, link, payload = self.inbox.get_nowait()
            except queue.Empty:
                return n
            n += 1
            if what == "pods":
                self._take(payload)
            elif what == "outcomes":
                self._outcomes(payload.outcomes, link)
            elif what == "binder_down":
                self._binder_down(link)

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_report < REPORT_EVERY_S:
            return
        self._last_report = now
        self.metrics.queues(self.queues())
        report = pb.ShardReport(returned=self.returned, queued=len(self.loop.queue),
                                in_flight=len(self.in_flight))
        self.returned = []
        for stream in list(self.report_streams):
            stream.put(report)

    def step(self) -> int:
        """One pass; returns the number of cycles run."""
        loop = self.loop
        busy = self._drain()
        loop.sync(timeout=0.0 if busy or loop.queue.has_active() else 0.02)
        cycles = 0
        while cycles < CYCLES_PER_PASS:
            result = loop.schedule_next()
            if result is None:
                break
            cycles += 1
            took = result.snapshot_s + sum(result.phases.values())
            self.cycle_times.append(took)
            self.metrics.cycle(result, took)
            if not result.scheduled:
                self.counters["unschedulable"] += 1
                self.store.set_unschedulable(result.pod.key, loop.messages.get(result.pod.key, ""))
        loop.release_waiting()
        self._flush()
        self.counters["cycles"] += cycles
        self._report()
        return cycles

    def run(self) -> None:
        self.loop.start()
        self.start()
        self.loop_forever(self.step)
        self.returned = [k for k in self.loop.dispatched if k not in self.in_flight]
        self._report(force=True)
        for stream in list(self.report_streams):
            stream.put(None)
        self.shutdown()
