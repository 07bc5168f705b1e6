"""A binder's CPU to follow pods' events on Redis with and without the status hint, in one run.

    python -m benchmarks.follow_hint --pods 20000 --repeats 3 --json FILE

The writer creates `--pods` pods of the bench's mixed profile, binds each and writes it
Running as kwok does (benchmarks.churn.running: three events a pod, as `shardsched bench
--churn` makes), all before the reader reads. A binder's view (binder/view.py), listed before
the writes, then follows them with its informer in syncs of up to 10,000 events, as fast as
it can; the reader's CPU (its thread's time) and wall time over those syncs are measured for:

- `hint`: the binder as it is: each Running write is taken from its status hint, the
  document never decoded (common.runtime.intake.status_hinted);
- `decode`: the same binder with its informer's take_status removed: every event decoded and
  applied, the Running write through status_update (the code before the hint).

The variants alternate within each repeat, each on its own key prefix of one embedded
Redis; medians over the repeats, and the ratio decode / hint of CPU per event.
"""
from __future__ import annotations

import argparse
import statistics
import uuid

from benchmarks.following import NODES, follow, write_bound
from benchmarks.harness import write_json
from benchmarks.workloads import SCHEDULER
from binder.view import BinderView
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import RedisStore
from common.tools.fleet import generate


def measure(url: str, pods: int, hint: bool) -> dict:
    """One run: the reader's CPU and wall time over the syncs that bring every event."""
    store = RedisStore(url, prefix=f"followbench-{uuid.uuid4().hex[:8]}:")
    try:
        assert not store.create_many(generate(NODES, "mixed"))
        view = BinderView((SCHEDULER,))
        informer = view.intake.informer(store, linger_s=0.0)
        informer.start()
        if not hint:
            informer.take_status = None
        write_bound(store, pods, run=True)
        cpu, wall = follow(store, informer)
        counted = sum(1 for _ in view.acc.counted_pods())
        assert counted == pods, f"counted {counted} of {pods}"
        events = 3 * pods
        return {"us_per_event": 1e6 * cpu / events, "events_per_s": events / wall}
    finally:
        store.close()


def run(pods: int, repeats: int) -> dict:
    rows: dict[str, list[dict]] = {"hint": [], "decode": []}
    with EmbeddedRedis() as server:
        for _ in range(repeats):
            rows["decode"].append(measure(server.url, pods, hint=False))
            rows["hint"].append(measure(server.url, pods, hint=True))
    out = {}
    for name, runs in rows.items():
        out[name] = {"us_per_event": round(statistics.median(r["us_per_event"] for r in runs), 2),
                     "events_per_s": round(statistics.median(r["events_per_s"] for r in runs)),
                     "runs_us_per_event": [round(r["us_per_event"], 2) for r in runs]}
    ratio = out["decode"]["us_per_event"] / out["hint"]["us_per_event"]
    return {"pods": pods, "repeats": repeats, "results": out, "cpu_ratio_decode_over_hint": round(ratio, 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=20000, help="pods written (3 events each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    doc = run(args.pods, args.repeats)
    for name, r in doc["results"].items():
        print(f"{name}: {r['us_per_event']} us CPU per event, {r['events_per_s']} events/s "
              f"(runs {r['runs_us_per_event']})")
    print(f"CPU per event, decode / hint: {doc['cpu_ratio_decode_over_hint']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
