"""The status writer (common/runtime/events.py): conditions coalesced per pod, events aggregated into
series, batched, rate-limited, written off the producer's thread; a failing or slow store
delays them and loses nothing the producers may not lose."""
from __future__ import annotations

import threading

from builders import Clock, pod
from common.errors import StoreUnavailable
from common.runtime.events import (FAILED_SCHEDULING, MAX_QUEUED, NORMAL, NOTE_LIMIT, PREEMPTED, WARNING,
                                   StatusWriter, pod_ref, truncate)
from common.store.memory import MemoryStore


class RecordingStore(MemoryStore):
    """Counts the writer's store calls; `fail` makes the next ones raise; `gate` blocks them."""

    def __init__(self):
        super().__init__()
        self.condition_calls: list[list] = []
        self.event_calls: list[list] = []
        self.fail = 0
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def _call(self):
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            self.fail -= 1
            raise StoreUnavailable("the store is away")

    def set_unschedulable_many(self, items):
        self._call()
        self.condition_calls.append(list(items))
        return super().set_unschedulable_many(self.condition_calls[-1])

    def write_events(self, events):
        self._call()
        self.event_calls.append(events)
        return super().write_events(events)


def writer(store, qps=1000.0, burst=1000, clock=None) -> StatusWriter:
    clock = clock or Clock(100.0)
    return StatusWriter(store, "shardsched-shard-0", qps, burst, clock=clock, wall=lambda: 1.8e9 + clock.now)


def created(store, name):
    meta = store.create(pod(name))["metadata"]
    return f"{meta['namespace']}/{meta['name']}", meta["uid"]


def test_conditions_coalesce_per_pod_and_only_the_latest_message_is_written():
    store = RecordingStore()
    key, uid = created(store, "p")
    other, other_uid = created(store, "q")
    w = writer(store)
    for n in (3, 4, 5):
        w.unschedulable(key, uid, f"0/{n} nodes are available: {n} Insufficient cpu.")
    w.unschedulable(other, other_uid, "0/5 nodes are available: 5 Insufficient memory.")
    assert w.flush() > 0
    assert store.condition_calls == [[(key, "0/5 nodes are available: 5 Insufficient cpu."),
                                      (other, "0/5 nodes are available: 5 Insufficient memory.")]]
    (cond,) = store.get("Pod", key)["status"]["conditions"]
    assert (cond["reason"], cond["message"]) == ("Unschedulable", "0/5 nodes are available: 5 Insufficient cpu.")
    assert w.pending() == 0 and w.flush() == 0


def test_a_repeated_failure_is_one_event_whose_series_counts_the_repeats():
    store = RecordingStore()
    key, uid = created(store, "p")
    w = writer(store)
    message = "0/3 nodes are available: 3 Insufficient cpu."
    w.unschedulable(key, uid, message)
    w.flush()
    (first,) = store.list_events()
    assert first["reason"] == FAILED_SCHEDULING and first["type"] == WARNING and first["action"] == "Scheduling"
    assert first["note"] == message and "series" not in first
    assert first["regarding"] == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "p", "uid": uid}
    assert first["reportingController"] == "shardsched" and first["reportingInstance"] == "shardsched-shard-0"
    for _ in range(3):
        w.unschedulable(key, uid, message)
    w.flush()
    (again,) = store.list_events()
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["eventTime"] == first["eventTime"]
    assert again["series"]["count"] == 4
    assert len(store.event_calls[-1]) == 1, "the three repeats are one write"
    w.unschedulable(key, uid, "0/3 nodes are available: 3 node(s) had untolerated taint.")
    w.flush()
    assert len(store.list_events()) == 2, "another message is another event"


def test_writes_are_rate_limited_and_batched():
    store = RecordingStore()
    clock = Clock(100.0)
    w = writer(store, qps=10, burst=5, clock=clock)
    for i in range(20):
        w.event(pod_ref(f"default/p{i}", f"uid-{i}"), NORMAL, "Scheduled", "Binding", f"assigned p{i}")
    assert w.flush() == 5 and len(store.event_calls) == 1, "the burst, in one call"
    assert w.flush() == 0
    clock.now += 0.35
    assert w.flush() == 3
    clock.now += 10
    assert w.flush() == 5 and w.pending() == 7


def test_a_blocked_store_never_blocks_the_producers():
    """The writer thread is stuck in a store call; producers still record at once, and what
    they recorded meanwhile is coalesced and written when the store answers."""
    store = RecordingStore()
    key, uid = created(store, "p")
    w = StatusWriter(store, "shardsched-shard-0", qps=1e6, burst=10 ** 6)  # the real clock
    store.gate = threading.Event()
    stop = threading.Event()
    thread = threading.Thread(target=w.run, args=(stop,), daemon=True)
    w.unschedulable(key, uid, "first")
    thread.start()
    assert store.entered.wait(5)
    for i in range(2000):  # all while the store call is blocked
        w.unschedulable(key, uid, f"attempt {i}")
    assert not store.gate.is_set() and len(store.condition_calls) == 0
    store.gate.set()
    w.drain(5.0)
    stop.set()
    thread.join(5)
    written = [m for call in store.condition_calls for _, m in call]
    assert written[-1] == "attempt 1999" and len(written) <= 2
    assert store.get("Pod", key)["status"]["conditions"][0]["message"] == "attempt 1999"


def test_a_failed_write_is_retried_and_a_newer_message_wins():
    store = RecordingStore()
    key, uid = created(store, "p")
    w = writer(store)
    w.unschedulable(key, uid, "old")
    store.fail = 1
    assert w.flush() == -1 and w.counters["write_errors"] == 1
    assert w.pending() == 2, "the condition and the event are due again"
    w.unschedulable(key, uid, "new")
    assert w.flush() > 0
    assert store.get("Pod", key)["status"]["conditions"][0]["message"] == "new"
    assert {e["note"] for e in store.list_events()} == {"old", "new"}


def test_new_events_beyond_the_queue_limit_are_dropped_but_repeats_still_count():
    store = RecordingStore()
    w = writer(store, qps=1, burst=1)
    for i in range(MAX_QUEUED + 50):
        w.event(pod_ref(f"default/p{i}", f"uid-{i}"), NORMAL, PREEMPTED, "Preempting", "Preempted by pod x on node n1")
    assert w.counters["events_dropped"] == 50 and w.pending() == MAX_QUEUED
    w.event(pod_ref("default/p0", "uid-0"), NORMAL, PREEMPTED, "Preempting", "Preempted by pod x on node n1")
    assert w.counters["events_dropped"] == 50 and w.pending() == MAX_QUEUED
    assert w.flush() == 1
    (ev,) = store.list_events()
    assert ev["regarding"]["name"] == "p0" and ev["series"]["count"] == 2


def test_long_messages_are_cut_as_kube_scheduler_cuts_them():
    assert truncate("short") == "short"
    cut = truncate("x" * 5000)
    assert len(cut.encode()) == NOTE_LIMIT and cut.endswith(" ...")


def test_events_handed_over_together_are_what_one_at_a_time_would_write():
    """`events` (a commit chunk's Scheduled events, one lock for all) records exactly what as
    many `event` calls record: the same objects, and a repeat within or across batches is
    one series."""
    items = [(pod_ref(f"default/p{i % 3}", f"uid-{i % 3}"), NORMAL, "Scheduled", "Binding", f"assigned p{i % 3}", None)
             for i in range(5)]
    items.append((pod_ref("default/v", "uid-v"), NORMAL, PREEMPTED, "Preempting", "Preempted by pod uid-0 on node n1",
                  pod_ref("default/p0", "uid-0")))
    written = []
    for together in (True, False):
        store = RecordingStore()
        w = writer(store)
        if together:
            w.events(items)
            w.events(items[:1])
        else:
            for it in items + items[:1]:
                w.event(*it)
        assert w.pending() == 4 and w.flush() == 4
        written.append(sorted(store.list_events(), key=lambda e: e["metadata"]["name"]))
    batched, single = written
    assert [(e["regarding"]["name"], e["note"], e.get("series", {}).get("count"), e.get("related", {}).get("uid"))
            for e in batched] == [("p0", "assigned p0", 3, None), ("p1", "assigned p1", 2, None),
                                  ("p2", "assigned p2", None, None), ("v", "Preempted by pod uid-0 on node n1", None, "uid-0")]
    assert [{k: v for k, v in e.items() if k != "metadata"} for e in batched] == \
        [{k: v for k, v in e.items() if k != "metadata"} for e in single]


def test_micro_time_is_what_datetime_writes_rounding_included():
    """Formatted once per second, the fraction rounded half to even and carried into the next
    second as datetime.fromtimestamp does."""
    import random
    from datetime import datetime, timezone

    from common.runtime.events import micro_time

    rng = random.Random(7)
    times = [0.0, 1.9999995, 1.9999985, 1.8e9 + 0.9999996, 1.8e9 + 0.0000005, 1.8e9 + 0.0000015, 1.8e9 + 59.9999999]
    times += [rng.uniform(0, 4e9) for _ in range(20000)]
    times += [round(rng.uniform(1.7e9, 1.9e9), 6) + rng.choice((5e-7, -5e-7, 4.9e-7)) for _ in range(20000)]
    for t in times:
        assert micro_time(t) == datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), t


def test_a_note_of_many_byte_characters_is_cut_at_the_byte_limit():
    assert truncate("\U0001f600" * (NOTE_LIMIT // 4)) == "\U0001f600" * (NOTE_LIMIT // 4)
    cut = truncate("\U0001f600" * (NOTE_LIMIT // 4 + 1))
    assert cut.endswith(" ...") and len(cut.encode()) <= NOTE_LIMIT


def test_a_lingering_writer_writes_a_trickle_of_events_in_one_call():
    """With `linger_s` (the binder's), the writer woken by an event waits that long for more
    before it writes: events produced one after another go in one store call."""
    import time

    store = RecordingStore()
    w = StatusWriter(store, "shardsched-binder-0", qps=1e6, burst=10 ** 6, linger_s=2.0)  # the real clock
    stop = threading.Event()
    thread = threading.Thread(target=w.run, args=(stop,), daemon=True)
    thread.start()
    try:
        w.event(pod_ref("default/a", "uid-a"), NORMAL, "Scheduled", "Binding", "assigned a")
        deadline = time.monotonic() + 30
        while not store.event_calls:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for name in ("b", "c", "d"):  # the writer is idle now: the first wakes it
            w.event(pod_ref(f"default/{name}", f"uid-{name}"), NORMAL, "Scheduled", "Binding", f"assigned {name}")
        while len(store.event_calls) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert [e["regarding"]["name"] for e in store.event_calls[1]] == ["b", "c", "d"]
    finally:
        stop.set()
        thread.join(10)
