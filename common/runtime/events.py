"""Kubernetes Events and PodScheduled conditions, written by one background writer per process.

What kube-scheduler's event recorder writes, with its reasons and messages:
* `FailedScheduling` (Warning, action Scheduling) with the PodScheduled condition's message,
  when a cycle finds no node (the shard), and `binding rejected: ...` when the binder refused a
  pod's decisions several times in a row;
* `Scheduled` (Normal, action Binding): "Successfully assigned NS/NAME to NODE" (the binder,
  once the binding landed);
* `Preempted` (Normal, action Preempting) on each victim, related to the preemptor: "Preempted
  by pod UID on node NODE" (the binder, once the victim is evicted or deleted).

Events are events.k8s.io/v1 objects with reportingController `shardsched`. As client-go's
event broadcaster does, an event seen again (same type, reason, action, object, related
object, reporting instance, and here also the same note, so that a changed reason for a
pending pod is a new event rather than a hidden one) becomes a series: the first is created,
the repeats only raise `series.count` and `series.lastObservedTime` of that one object. A
series not seen again for FINISH_S is forgotten (client-go's finishTime).

The writer is what keeps all of this off the scheduling thread. Producers (the scheduling
loop, the binder's commit workers) only record what should be written, under a lock, in
O(1); a thread of its own writes it. Conditions coalesce per pod (only the latest message of
a pod is written), events coalesce per series (one write carries every repeat since the
last), both in the order they first became due, in batches (one pipelined store call per
batch on Redis, concurrent requests on kube://), at most `events.qps` objects a second with
bursts of `events.burst`. A slow or absent API server delays them, never a cycle; when it
fails, what was taken is put back and retried after a pause. Like client-go, at most
MAX_QUEUED new events wait: beyond that new ones are dropped (counted and logged), since an
event is best effort; conditions are never dropped (there is one per pod at most).
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict

from .logs import ErrorLog

log = logging.getLogger(__name__)

REPORTING_CONTROLLER = "shardsched"
NORMAL, WARNING = "Normal", "Warning"
FAILED_SCHEDULING, SCHEDULED, PREEMPTED = "FailedScheduling", "Scheduled", "Preempted"
#: events.k8s.io's limit on a note; kube-scheduler cuts longer messages with " ...".
NOTE_LIMIT = 1024
#: client-go's finishTime: a series not seen again for this long is over.
FINISH_S = 360.0
#: client-go's maxQueuedEvents: new events waiting beyond this are dropped.
MAX_QUEUED = 1000
#: Series remembered for aggregation; the least recently seen are forgotten first.
MAX_SERIES = 4096
#: Objects per store call.
BATCH = 256
#: Pause after a failed write.
RETRY_S = 1.0


def pod_ref(key: str, uid: str) -> dict:
    """The ObjectReference of the pod "namespace/name" (regarding or related)."""
    namespace, _, name = key.partition("/")
    return {"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": name, "uid": uid or ""}


def truncate(note: str) -> str:
    """kube-scheduler's truncateMessage (the limit is in bytes)."""
    if len(note) * 4 <= NOTE_LIMIT:  # (UTF-8 takes at most 4 bytes a character)
        return note
    data = note.encode()
    if len(data) <= NOTE_LIMIT:
        return note
    return data[:NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


#: (whole second, its "%Y-%m-%dT%H:%M:%S" form) of the last micro_time: the binder stamps an
#: event for every binding, and the date is the costly part. Replaced whole (any thread).
_last_second: tuple[float, str] = (float("nan"), "")


def micro_time(t: float) -> str:
    """A MicroTime: RFC 3339 with microseconds, UTC, exactly as
    `datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")` writes it
    (the fraction rounded half to even, carrying into the second), the date part formatted
    once per second."""
    global _last_second
    fraction, second = math.modf(t)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        micro -= 1_000_000
        second += 1.0
    elif micro < 0:
        micro += 1_000_000
        second -= 1.0
    last = _last_second
    if last[0] != second:
        last = _last_second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{last[1]}.{micro:06d}Z"


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self.at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now

    def take(self, wanted: int) -> int:
        """Up to `wanted` whole tokens, as many as there are now."""
        self._refill()
        n = min(wanted, int(self.tokens))
        self.tokens -= n
        return n

    def delay(self) -> float:
        """Seconds until the next whole token."""
        self._refill()
        return max(0.0, (1.0 - self.tokens) / self.rate)


class _Series:
    """One event and its repeats: `count` occurrences so far, `written` of them in the store."""

    __slots__ = ("event", "count", "written", "last", "seen")

    def __init__(self, event: dict, now: float, seen: float):
        self.event, self.count, self.written, self.last, self.seen = event, 1, 0, now, seen

    def snapshot(self) -> dict:
        ev = dict(self.event)
        if self.count > 1:
            ev["series"] = {"count": self.count, "lastObservedTime": micro_time(self.last)}
        return ev


class StatusWriter:
    def __init__(self, store, instance: str, qps: float, burst: int, clock=time.monotonic, wall=time.time,
                 linger_s: float = 0.0):
        """`instance`: the reportingInstance of this process's events. `linger_s`: how long
        the writer, woken by something due, waits for more before it writes, so that a
        steady trickle (a binder's Scheduled event for every binding) goes in batches
        rather than in one store call each."""
        self.store = store
        self.linger_s = linger_s
        self.instance = instance
        self.clock, self.wall = clock, wall
        self.bucket = TokenBucket(qps, burst, clock)
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._conditions: dict[str, str] = {}        # pod key -> latest unschedulable message
        self._series: OrderedDict[tuple, _Series] = OrderedDict()  # least recently seen first
        #: What is due, in the order it became due: ("c", pod key) or ("e", series key).
        self._due: OrderedDict[tuple, None] = OrderedDict()
        self._events_due = 0
        self._last_stamp = 0
        self._finished_at = clock()
        self.counters = {"conditions_written": 0, "events_written": 0, "events_dropped": 0,
                         "events_refused": 0, "write_errors": 0}
        self.errors = ErrorLog(log)

    @classmethod
    def from_config(cls, cfg, store, instance: str, linger_s: float = 0.0) -> "StatusWriter":
        return cls(store, instance, cfg.events.qps, cfg.events.burst, linger_s=linger_s)

    # --- producers (any thread) -------------------------------------------------------------

    def unschedulable(self, key: str, uid: str, message: str) -> None:
        """A failed cycle: PodScheduled=False/Unschedulable with `message`, and its event."""
        with self._lock:
            self._conditions[key] = message
            self._due_locked(("c", key))
            self._wake_writer()
        self.event(pod_ref(key, uid), WARNING, FAILED_SCHEDULING, "Scheduling", message)

    def event(self, regarding: dict, type_: str, reason: str, action: str, note: str,
              related: dict | None = None) -> None:
        self.events([(regarding, type_, reason, action, note, related)])

    def events(self, items: list[tuple]) -> None:
        """Several events at once, (regarding, type, reason, action, note, related or None)
        each, as `event` takes them: one lock and one wake-up of the writer for all (the
        binder's commit workers hand over a chunk's Scheduled events together)."""
        if not items:
            return
        now, seen = self.wall(), self.clock()
        with self._lock:
            for regarding, type_, reason, action, note, related in items:
                self._event_locked(regarding, type_, reason, action, truncate(note), related, now, seen)
            self._wake_writer()

    def _event_locked(self, regarding, type_, reason, action, note, related, now, seen) -> None:
        key = (type_, reason, action, regarding["namespace"], regarding["name"], regarding["uid"],
               (related or {}).get("uid"), note)
        s = self._series.get(key)
        if s is not None:
            s.count += 1
            s.last, s.seen = now, seen
            self._series.move_to_end(key)
        elif self._events_due >= MAX_QUEUED:
            self.counters["events_dropped"] += 1
            dropped = self.counters["events_dropped"]
            if dropped in (1, 10, 100, 1000) or dropped % 10000 == 0:
                log.warning("%d events dropped so far: more than %d waiting to be written "
                            "(events.qps %g)", dropped, MAX_QUEUED, self.bucket.rate)
            return
        else:
            s = self._series[key] = _Series(self._new_event(regarding, type_, reason, action, note,
                                                            related, now), now, seen)
            self._forget_old_locked()
        self._due_locked(("e", key))

    def _new_event(self, regarding, type_, reason, action, note, related, now) -> dict:
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
              "metadata": {"name": f"{regarding['name']}.{self._stamp(now):x}",
                           "namespace": regarding["namespace"] or "default"},
              "eventTime": micro_time(now), "reportingController": REPORTING_CONTROLLER,
              "reportingInstance": self.instance, "action": action, "reason": reason,
              "regarding": regarding, "note": note, "type": type_}
        if related is not None:
            ev["related"] = related
        return ev

    def _stamp(self, now: float) -> int:
        """The name's suffix: the time in nanoseconds, as client-go's, but never the same
        twice in this process (a float clock repeats within a fraction of a microsecond)."""
        self._last_stamp = max(int(now * 1e9), self._last_stamp + 1)
        return self._last_stamp

    def _due_locked(self, item: tuple) -> None:
        if item not in self._due:
            self._due[item] = None
            if item[0] == "e":
                self._events_due += 1

    def _wake_writer(self) -> None:
        """Wake the writer unless it is awake already: setting an Event takes its condition's
        lock and notifies even when nobody waits. (The writer clears it before it flushes,
        and a producer adds before it looks, so nothing added is left unseen.)"""
        if not self._wake.is_set():
            self._wake.set()

    def _forget_old_locked(self) -> None:
        """Drop series beyond MAX_SERIES and those over (FINISH_S), least recently seen first,
        except those still waiting to be written."""
        limit = self.clock() - FINISH_S
        while self._series:
            key, s = next(iter(self._series.items()))
            if ("e", key) in self._due or (len(self._series) <= MAX_SERIES and s.seen >= limit):
                return
            del self._series[key]

    # --- the writer ---------------------------------------------------------------------------

    def pending(self) -> int:
        with self._lock:
            return len(self._due)

    def flush(self) -> int:
        """Write one batch of what is due, as far as the rate allows; the number written, or
        -1 when the store failed (what was taken is due again). One flush at a time, so a
        pod's older condition is never written after its newer one."""
        with self._flushing:
            return self._flush()

    def _flush(self) -> int:
        with self._lock:
            n = self.bucket.take(min(BATCH, len(self._due)))
            items = [self._due.popitem(last=False)[0] for _ in range(n)]
            conditions = [(key, self._conditions.pop(key)) for kind, key in items if kind == "c"]
            events = []
            for kind, key in items:
                if kind == "e":
                    self._events_due -= 1
                    s = self._series[key]
                    events.append((key, s, s.count, s.snapshot()))
            if self.clock() - self._finished_at > FINISH_S / 10:
                self._finished_at = self.clock()
                self._forget_old_locked()
        if not items:
            return 0
        try:
            if conditions:
                self.store.set_unschedulable_many(conditions)
                self.counters["conditions_written"] += len(conditions)
            if events:
                results = self.store.write_events([ev for _, _, _, ev in events])
                self._written(events, results)
        except Exception as e:
            self.counters["write_errors"] += 1
            self.errors.error("writing pod conditions and events failed; retrying", e)
            self._put_back(conditions, events)
            return -1
        return len(items)

    def _written(self, events: list, results: list) -> None:
        with self._lock:
            for (key, s, count, ev), why in zip(events, results):
                s.written = count
                if why is None:
                    self.counters["events_written"] += 1
                else:
                    self.counters["events_refused"] += 1
                    self.errors.error("event refused", RuntimeError(f"{ev['reason']} for "
                                      f"{ev['regarding']['namespace']}/{ev['regarding']['name']}: {why}"))

    def _put_back(self, conditions: list, events: list) -> None:
        """Due again, behind what became due meanwhile; a newer message of a pod wins."""
        with self._lock:
            for key, message in conditions:
                self._conditions.setdefault(key, message)
                self._due_locked(("c", key))
            for key, s, _, _ in events:
                if key in self._series:
                    self._due_locked(("e", key))
            self._wake_writer()

    def run(self, stop: threading.Event) -> None:
        """Write until `stop` (the writer thread)."""
        while not stop.is_set():
            wrote = self.flush()
            if wrote < 0:
                stop.wait(RETRY_S)
            elif self.pending():  # (held back by the rate: wait for a token, and no less than the linger)
                stop.wait(max(0.005, self.bucket.delay(), self.linger_s))
            else:
                woken = self._wake.wait(0.5)
                self._wake.clear()
                if woken and self.linger_s:
                    stop.wait(self.linger_s)

    def drain(self, timeout: float) -> int:
        """At shutdown: write what is still due, for up to `timeout` seconds; returns what is
        left (given up: events are best effort, and a condition is written again by whichever
        shard schedules the pod next)."""
        deadline = self.clock() + timeout
        while self.pending() and self.clock() < deadline:
            if self.flush() < 0:
                break
            time.sleep(min(0.05, self.bucket.delay()))
        return self.pending()
