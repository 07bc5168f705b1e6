"""A process's CPU to follow the Redis event stream at a paced rate, against the previous read.

    python -m benchmarks.watch_poll --rate 1000 --seconds 10 --repeats 3 --json FILE

A writer creates pods at `--rate` (in the bench's 20 ms ticks), binds each and writes it
Running (three events per pod, as `shardsched bench --churn` makes), while a reader follows
the stream as a role's informer does (polls waiting up to 20 ms). The reader's CPU (its
thread's time) per event is measured for:

- `optimised`: `RedisStore.read` as it is (one XREAD per poll, blocking);
- `baseline`: the read before issue 31's watch work (a MULTI of three XRANGEs per poll, and
  an XREAD of one entry to wait, then the MULTI again);
- `dispatcher_skip`: `read` with the dispatcher's skip (bound pods it does not hold are
  passed over undecoded), against `optimised`, which decodes every event;
- `status_hint`: `read` by a reader that holds every pod bound (a binder, a shard) and
  takes each Running write from its status hint (common.runtime.intake.status_hinted), the
  document never decoded, against the same reader decoding every event; both apply what
  they are handed as a role does a bound pod's update (common.runtime.intake.status_update);
- `pace`: `read` with a PollPace of store.watchLingerSeconds' default (a waiting poll comes
  no sooner than 5 ms after the previous one), against `optimised`, which polls as each
  event comes; for this pair the writer writes each pod's events as they fall due (every
  millisecond), as a paced load of single writes arrives, rather than a tick's worth at once.

Variants alternate within each repeat on one embedded Redis; each item is
{"optimised_us_per_event", "baseline_us_per_event", "ratio"} with medians over the repeats.
"""
from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid

import redis

from common.errors import ResourceVersionTooOld
from common.model.objects import parse_object
from common.runtime.intake import status_hinted, status_update
from common.store.base import PollPace
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import _BLOCK_S, RedisStore

TICK_S = 0.02
#: the writer's tick for the `pace` pair: each pod's events written as they fall due
SPREAD_TICK_S = 0.001


class PreviousReadStore(RedisStore):
    """The unoptimised variant: the read as it was before (every poll a MULTI of three
    ranges; a wait is an XREAD of one entry, then the MULTI again)."""

    def _follow(self, since: str, timeout: float, count: int) -> list:
        deadline = time.monotonic() + timeout
        while True:
            entries = self._entries_after(since, count)
            if entries is None:
                raise ResourceVersionTooOld(f"resourceVersion {since} is too old")
            remaining = deadline - time.monotonic()
            if entries or remaining <= 0:
                return entries
            self._r.execute_command("XREAD", "COUNT", 1, "BLOCK", max(1, int(min(remaining, _BLOCK_S) * 1000)),
                                    "STREAMS", self._stream, since)


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "labels": {"app": "web", "tier": "front"}},
            "spec": {"schedulerName": "shardsched", "containers": [
                {"name": "c", "image": "registry.example/web:1.0",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def _write(url: str, prefix: str, rate: float, seconds: float, stop: threading.Event, tick_s: float = TICK_S) -> None:
    """Create, bind and mark Running `rate` pods a second, a tick's worth at a time."""
    store = RedisStore(url, prefix=prefix)
    start, made = time.monotonic(), 0
    try:
        while not stop.is_set() and time.monotonic() - start < seconds:
            due = int((time.monotonic() - start) * rate)
            if due > made:
                names = [f"p{i}" for i in range(made, due)]
                store.create_many([_pod(n) for n in names])
                store.bind_many([(f"bench/{n}", "node-1", None) for n in names])
                running = [store.get("Pod", f"bench/{n}") for n in names]
                for obj in running:
                    obj["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
                store.update_status_many(running)
                made = due
            time.sleep(tick_s)
    finally:
        store.close()


def _follow(store: RedisStore, rv: str, stop: threading.Event, out: dict, skip, pace, apply=None) -> None:
    cpu0, events = time.thread_time(), 0
    while not stop.is_set():
        got, read_to = store.read(rv, timeout=0.02, kinds=("Pod",), skip=skip, pace=pace)
        events += len(got)
        if apply is not None:
            for ev in got:
                apply(ev)
        rv = read_to or rv
    out["cpu_s"], out["delivered"] = time.thread_time() - cpu0, events


def measure(url: str, store_cls, rate: float, seconds: float, skip=None, pace: PollPace | None = None,
            tick_s: float = TICK_S, apply=None) -> float:
    """The reader's CPU microseconds per event the writer made (writing every `tick_s`)."""
    prefix = f"watchbench-{uuid.uuid4().hex[:8]}:"
    reader = store_cls(url, prefix=prefix)
    head = "0-0"
    stop, done = threading.Event(), {}
    follower = threading.Thread(target=_follow, args=(reader, head, stop, done, skip, pace, apply))
    follower.start()
    writer_stop = threading.Event()
    _write(url, prefix, rate, seconds, writer_stop, tick_s)
    time.sleep(0.5)  # let the reader catch up
    stop.set()
    follower.join()
    written = redis.Redis.from_url(url).xlen(f"{prefix}events")
    reader.close()
    return 1e6 * done["cpu_s"] / max(1, written)


def _dispatcher_skip(kind, type_, key, bound, data) -> bool:
    return type_ != "ADDED" and (bound or type_ == "DELETED")  # it holds none of them


def _holding(take_hints: bool) -> dict:
    """The apply of a reader that counts every pod bound (one pod stands for them all, its
    uid taken from each event): a status-only write taken from its hint, or (`take_hints`
    False) every event decoded; what is decoded goes through status_update, as a role's
    bound pod's update does."""
    doc = _pod("held")
    doc["metadata"].update(uid="uid-held", creationTimestamp="2026-01-01T00:00:00Z")
    doc["spec"]["nodeName"] = "node-1"
    held = parse_object(doc, {}, lean=True)

    def apply(ev) -> None:
        status = getattr(ev, "status", None) if take_hints else None
        if status is not None and ev.type == "MODIFIED" and status_hinted(held, status) is not None:
            return  # taken from the hint: ev.obj never read, never decoded
        held.uid = ev.obj["metadata"]["uid"]
        if ev.type == "MODIFIED":
            status_update(held, ev.obj)
    return {"apply": apply}


def run(rate: float, seconds: float, repeats: int) -> dict:
    with EmbeddedRedis() as server:
        rows = {"poll": ([], []), "dispatcher_skip": ([], []), "status_hint": ([], []), "pace": ([], [])}
        for _ in range(repeats):
            rows["poll"][1].append(measure(server.url, PreviousReadStore, rate, seconds))
            rows["poll"][0].append(measure(server.url, RedisStore, rate, seconds))
            rows["dispatcher_skip"][1].append(measure(server.url, RedisStore, rate, seconds))
            rows["dispatcher_skip"][0].append(measure(server.url, RedisStore, rate, seconds, _dispatcher_skip))
            rows["status_hint"][1].append(measure(server.url, RedisStore, rate, seconds, **_holding(False)))
            rows["status_hint"][0].append(measure(server.url, RedisStore, rate, seconds, **_holding(True)))
            rows["pace"][1].append(measure(server.url, RedisStore, rate, seconds, tick_s=SPREAD_TICK_S))
            rows["pace"][0].append(measure(server.url, RedisStore, rate, seconds, pace=PollPace(),
                                           tick_s=SPREAD_TICK_S))
    out = {}
    for name, (opt, base) in rows.items():
        o, b = statistics.median(opt), statistics.median(base)
        out[name] = {"optimised_us_per_event": round(o, 1), "baseline_us_per_event": round(b, 1),
                     "ratio": round(b / o, 2) if o else None,
                     "optimised_runs": [round(x, 1) for x in opt], "baseline_runs": [round(x, 1) for x in base]}
    return {"rate": rate, "seconds": seconds, "repeats": repeats, "results": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=1000.0, help="pods created per second (3 events each)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    doc = run(args.rate, args.seconds, args.repeats)
    for name, r in doc["results"].items():
        print(f"{name}: {r['optimised_us_per_event']} us/event against {r['baseline_us_per_event']} "
              f"(ratio {r['ratio']}; runs {r['optimised_runs']} / {r['baseline_runs']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
