"""The shard server's handling of the dispatcher's stream (shard/server.py), without the
network: pods are taken from the shard's own watch, a re-dispatched pod is scheduled again,
and the report lists what the shard works on."""
from __future__ import annotations

import gc
import threading
import time

from builders import make_config, node, pod
from common.runtime.component import METRICS_OFF
from common.scheduling.partition import PARTITION_ROLE
from common.store.memory import MemoryStore
from proto import shardsched_pb2 as pb
from shard.server import ShardServer


def pending_pod(created: dict) -> pb.PendingPod:
    meta = created["metadata"]
    return pb.PendingPod(key=f"{meta['namespace']}/{meta['name']}", uid=meta["uid"],
                         resource_version=meta["resourceVersion"])


def shard_on(store) -> ShardServer:
    server = ShardServer(make_config(), store, 0)
    server.loop.start()
    return server


def test_a_pod_dispatched_again_and_again_is_scheduled_again():
    """The dispatcher re-dispatches a pod that fits nowhere (revoke + dispatch); the shard
    used to ignore it from the second time on, as a version it had already seen, so it was
    never scheduled again, not even once a node that fits it came."""
    store = MemoryStore()
    store.create(node("small", cpu="1"))
    big = pending_pod(store.create(pod("big", cpu="4")))
    server = shard_on(store)
    server._take(pb.PodBatch(pods=[big]))
    assert not server.loop.schedule_next().scheduled
    for _ in range(3):
        server._take(pb.PodBatch(revoked=[big.key], pods=[big]))
        assert big.key in server._holding()
    store.create(node("large", cpu="8"))
    server.loop.sync()
    result = server.loop.schedule_next()
    assert result is not None and result.node == "large"


def test_a_pod_is_taken_from_the_watch_never_from_the_message():
    """A dispatch naming a pod the store does not hold schedules nothing and is given back;
    one the watch has not shown yet waits for it."""
    store = MemoryStore()
    store.create(node("n1"))
    server = shard_on(store)
    server._take(pb.PodBatch(pods=[pb.PendingPod(key="default/phantom", uid="x", resource_version="1")]))
    assert server.loop.schedule_next() is None and server.returned == ["default/phantom"]
    late = pod("late")
    created = store.create(late)
    server._take(pb.PodBatch(pods=[pending_pod(created)]))
    assert "default/late" in server.waiting_for_watch
    server.step()
    assert "default/late" not in server.waiting_for_watch and server.counters["dispatched"] == 1


def test_a_pod_whose_bindings_are_refused_again_and_again_gets_a_failed_scheduling_event():
    """Each refusal is retried at once (no backoff here); the third in a row is reported as
    kube-scheduler reports a failed binding: FailedScheduling, `binding rejected: ...`."""
    from common.runtime.events import FAILED_SCHEDULING

    store = MemoryStore()
    store.create(node("n1"))
    p = pending_pod(store.create(pod("p")))
    server = ShardServer(make_config(shards={"podInitialBackoffSeconds": 0, "podMaxBackoffSeconds": 0}), store, 0)
    server.loop.start()
    server._take(pb.PodBatch(pods=[p]))
    reason = "InFlight: a decision for default/p is being committed"
    for attempt in range(3):
        result = server.loop.schedule_next()
        assert result is not None and result.scheduled
        server._outcomes([pb.Outcome(pod_key=p.key, node=result.node, bound=False, reason=reason)])
        server.status.flush()
        refused = [e for e in store.list_events() if e["reason"] == FAILED_SCHEDULING]
        assert len(refused) == (1 if attempt == 2 else 0)
    assert refused[0]["note"] == f"binding rejected: {reason}" and refused[0]["type"] == "Warning"


def test_a_shard_takes_its_lease_only_once_it_applied_what_was_written_during_its_list():
    """Its lease tells the dispatcher a shard is ready for pods. A restarted shard listing a
    large cluster used to take it straight after the list, before reading the events written
    meanwhile: the pods then dispatched to it were ones its watch had not shown, and they
    waited while it read the backlog. And it settled its heap (a full collection, seconds over
    200,000 running pods) only after taking the lease, which expired meanwhile."""
    known_at_lease: list[set] = []
    frozen_at_lease: list[int] = []

    class WrittenDuringTheList(MemoryStore):
        """Pods bound while the shard lists, as a busy cluster's are; and what the shard
        knows when it takes its lease."""

        def list_iter(self, kind, cached=False, skip=None):
            out = super().list_iter(kind, cached, skip)
            if kind == "Pod" and not known_at_lease:
                for i in range(5):
                    self.create(pod(f"late-{i}", node_name="n1"))
            return out

        def put_lease(self, role, id_, address, ttl_s):
            if role == "shard" and not known_at_lease:
                known_at_lease.append(set(server.loop.pods))
                frozen_at_lease.append(gc.get_freeze_count())
            super().put_lease(role, id_, address, ttl_s)

    store = WrittenDuringTheList()
    store.create(node("n1"))
    store.create(pod("early", node_name="n1"))
    server = ShardServer(make_config(), store, 0, port=0, metrics_port=METRICS_OFF)
    thresholds = gc.get_threshold()
    gc.unfreeze()
    runner = threading.Thread(target=server.run, daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 120
        while not known_at_lease and runner.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.stop_event.set()
        runner.join(60)
        gc.unfreeze()  # (the shard settles the heap of the whole test process)
        gc.set_threshold(*thresholds)
    assert known_at_lease and {f"default/late-{i}" for i in range(5)} | {"default/early"} <= known_at_lease[0]
    assert frozen_at_lease[0] > 0, "the heap is settled before the lease is taken"


def test_an_idle_shard_waits_until_its_next_report_and_still_sends_it():
    """With nothing in hand a pass waits on the doorbell (the watch and the inbox ring it)
    until its next timer, not the busy poll; the report is still sent when due. With a
    decision in flight it polls at the busy rate, for the decisions' timers; so does a shard
    on a store whose watch cannot ring (Redis)."""
    import queue

    from shard.server import BUSY_WAIT_S, REPORT_EVERY_S

    store = MemoryStore()
    store.create(node("n1"))
    server = shard_on(store)
    assert server.event_driven
    reports: queue.SimpleQueue = queue.SimpleQueue()
    server.report_streams.append(reports)
    # the report due long after this (a stall of the test cannot make it due), then as usual
    server._last_report = time.monotonic() + 3600.0
    assert BUSY_WAIT_S < server._wait_for() <= REPORT_EVERY_S
    server._last_report = time.monotonic()
    while reports.empty():
        server.step()  # waits out the rest of REPORT_EVERY_S, then reports
    assert isinstance(reports.get_nowait(), pb.ShardReport)

    server.binders.in_flight["default/p"] = (None, None)
    assert server._wait_for() == BUSY_WAIT_S

    class Silent(MemoryStore):
        def listen(self, ring) -> bool:
            return False

    polling = shard_on(Silent())
    assert not polling.event_driven and polling._wait_for() == BUSY_WAIT_S


def test_an_idle_shard_waits_no_longer_than_a_pods_backoff():
    """A pod in backoffQ due before the next report ends the wait then (the queue's clock)."""
    from builders import Clock

    store = MemoryStore()
    store.create(node("n1", cpu="1"))
    p = pending_pod(store.create(pod("p", cpu="4")))
    server = ShardServer(make_config(shards={"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1}), store, 0)
    server.loop.queue.clock = clock = Clock(1000.0)
    server.loop.start()
    server._take(pb.PodBatch(pods=[p]))
    assert not server.loop.schedule_next().scheduled  # parked as unschedulable
    server.loop.queue.move_all_to_active(event="NodeAdd")  # a node came: to backoffQ first
    assert server.loop.queue.next_backoff() == 1001.0
    clock.now = 1000.9
    server._last_report = time.monotonic()
    assert server._wait_for() <= 0.1 + 1e-9


class SlowLeases(MemoryStore):
    """A store whose partition-lease look-ups hang while `hold` is set (an API server slow to
    answer a LIST, or frozen)."""

    def __init__(self):
        super().__init__()
        self.hold = threading.Event()
        self.release = threading.Event()

    def list_leases(self, role: str) -> dict[str, str]:
        if role == PARTITION_ROLE and self.hold.is_set():
            self.release.wait(120)
        return super().list_leases(role)


def test_a_slow_partition_lease_look_up_holds_no_scheduling_pass():
    """The look-up of the partition holders every READY_EVERY_S ran in the scheduling pass, a
    blocking LIST of Leases: py-spy caught a shard's pass waiting 165 ms of one second on a
    busy API server (2026-11-27), and a frozen one would hold it for the request timeout. It
    runs on a thread of its own now, and its answer comes through the inbox: here a look-up
    hangs and the passes go on; then a look-up's answer is applied by the next pass."""
    store = SlowLeases()
    store.create(node("n1"))
    assert store.acquire_lease(PARTITION_ROLE, "0", "binder-a:1", 60)
    server = shard_on(store)
    store.hold.set()

    def passes_go_on() -> None:
        passes = threading.Thread(target=lambda: [server.step() for _ in range(3)], daemon=True)
        passes.start()
        passes.join(60)
        assert not passes.is_alive(), "a pass waited for the lease look-up"
    try:
        passes_go_on()
        looking = threading.Thread(target=server.holder_lookups.look, daemon=True)
        looking.start()
        passes_go_on()
    finally:
        store.release.set()
    looking.join(60)
    assert not looking.is_alive()
    server.step()
    assert server.binders.holders == {0: "binder-a:1"}
    store.drop_lease(PARTITION_ROLE, "0")
    assert store.acquire_lease(PARTITION_ROLE, "0", "binder-b:1", 60)
    store.hold.clear()
    server.holder_lookups.look()  # binder-b took the partition: the next pass applies it
    assert server.binders.holders == {0: "binder-a:1"}
    server.step()
    assert server.binders.holders == {0: "binder-b:1"}
