"""A binder's CPU to follow pods' events with and without the status hint (Redis, or the API server), in one run.

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

    python -m benchmarks.follow_hint --store kube --pods 2000 --repeats 3 --json FILE

The same on the real API server of benchmarks/kube_cluster.py (no kwok: the writer plays the
kubelets), where the store tells status-only writes apart itself
(common.store.kube_status_writes): `hint` is the binder as it is, `decode` the binder on a
store with `status_hints=False` and no take_status (the code before). The writer is a
process of its own; the headline is the informer's thread CPU per event, as with Redis, and
beside it the Pod watch thread's (which reads the server's lines, and fingerprints the bound
pods' events for `hint`) and the whole reader process's. The writer writes one event at a
time (a few hundred a second), so the watch thread wakes up for each: its figure is far
above what it is when events come in bursts. The pods are deleted between runs.

On the API server a third variant, `http.client`, is `hint` with its watches read through
http.client's reader (KubeStore(direct_watch_reads=False), the code before 2026-11-27)
rather than off the socket (common.store.kube_http's _Stream): the ratio of the watch
threads' CPU per event, http.client / hint, is printed too.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

from benchmarks.following import KUBE_WRITER, NODES, follow, kube_plane, write_bound
from benchmarks.harness import write_json
from benchmarks.kube_vs import clear_pods
from benchmarks.processes import thread_cpu_seconds
from benchmarks.workloads import SCHEDULER
from binder.view import BinderView
from common.store.base import rv_order
from common.store.embedded import EmbeddedRedis
from common.store.kube_store import KubeStore
from common.store.redis_store import RedisStore
from common.tools.fleet import generate


def _following_binder(store, hint: bool) -> tuple[BinderView, object]:
    """A binder's view and its started informer (linger 0) on `store`; without `hint` the
    informer takes no status hint (every event decoded: the code before the hint)."""
    view = BinderView((SCHEDULER,))
    informer = view.intake.informer(store, linger_s=0.0)
    informer.start()
    if not hint:
        informer.take_status = None
    return view, informer


def measure(url: str, pods: int, hint: bool) -> dict:
    """One run: the reader's CPU and wall time over the syncs that bring every event."""
    store = RedisStore(url, prefix=f"followbench-{uuid.uuid4().hex[:8]}:")
    try:
        assert not store.create_many(generate(NODES, "mixed"))
        view, informer = _following_binder(store, hint)
        write_bound(store, pods, run=True)
        cpu, wall = follow(store, informer)
        counted = sum(1 for _ in view.acc.counted_pods())
        assert counted == pods, f"counted {counted} of {pods}"
        events = 3 * pods
        return {"us_per_event": 1e6 * cpu / events, "events_per_s": events / wall}
    finally:
        store.close()


def measure_kube(kubeconfig: str, pods: int, hint: bool, direct: bool = True) -> dict:
    """One run on the API server: the reader process's CPU from before the writes until its
    informer has applied the last of them (its syncs wait for events instead of polling);
    `direct`: the watches read off the socket (else through http.client)."""
    store = KubeStore(kubeconfig, status_hints=hint, direct_watch_reads=direct)
    try:
        view, informer = _following_binder(store, hint)
        informer.sync(0.0)  # (opens the watches)
        watch = next(t.native_id for t in threading.enumerate() if t.name == "kube-watch-Pod")
        cpu0, watch0, process0 = time.thread_time(), thread_cpu_seconds(watch), time.process_time()
        wall0 = time.perf_counter()
        writer = subprocess.run([sys.executable, "-c", KUBE_WRITER, kubeconfig, str(pods)],
                                capture_output=True, text=True, check=True)
        last = int(writer.stdout.split()[-1])
        while rv_order(informer.kind_rv["Pod"]) < (last, 0):
            informer.sync(0.2, max_events=10000)
        cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
        watch_cpu, process = thread_cpu_seconds(watch) - watch0, time.process_time() - process0
        running = sum(1 for p in view.acc.counted_pods() if p.phase == "Running")
        assert running == pods, f"{running} of {pods} counted Running"
        events = 3 * pods
        return {"us_per_event": 1e6 * cpu / events, "events_per_s": events / wall,
                "watch_us_per_event": 1e6 * watch_cpu / events, "process_us_per_event": 1e6 * process / events}
    finally:
        clear_pods(store, "bench")
        store.close()


def run(pods: int, repeats: int, kube: bool = False) -> dict:
    #: name -> (hint, direct watch reads)
    variants = {"decode": (False, True), "hint": (True, True), **({"http.client": (True, False)} if kube else {})}
    rows: dict[str, list[dict]] = {name: [] for name in variants}
    with (kube_plane() if kube else EmbeddedRedis()) as where:
        for _ in range(repeats):
            for name, (hinted, direct) in variants.items():
                rows[name].append(measure_kube(str(where.kubeconfig), pods, hinted, direct) if kube
                                  else measure(where.url, pods, hinted))
    out = {}
    for name, runs in rows.items():
        out[name] = {"us_per_event": round(statistics.median(r["us_per_event"] for r in runs), 2),
                     "events_per_s": round(statistics.median(r["events_per_s"] for r in runs)),
                     "runs_us_per_event": [round(r["us_per_event"], 2) for r in runs]}
        for extra in ("watch_us_per_event", "process_us_per_event"):
            if extra in runs[0]:
                out[name][extra] = round(statistics.median(r[extra] for r in runs), 2)
    ratio = out["decode"]["us_per_event"] / out["hint"]["us_per_event"]
    doc = {"store": "kube" if kube else "redis", "pods": pods, "repeats": repeats, "results": out,
           "cpu_ratio_decode_over_hint": round(ratio, 2), "load": [round(x, 2) for x in os.getloadavg()]}
    if kube:
        doc["watch_cpu_ratio_http_client_over_hint"] = round(
            out["http.client"]["watch_us_per_event"] / out["hint"]["watch_us_per_event"], 2)
    return doc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=20000, help="pods written (3 events each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--store", choices=("redis", "kube"), default="redis",
                   help="an embedded Redis (default), or the real API server of benchmarks/kube_cluster.py")
    args = p.parse_args(argv)
    doc = run(args.pods, args.repeats, kube=args.store == "kube")
    for name, r in doc["results"].items():
        print(f"{name}: {r['us_per_event']} us CPU per event, {r['events_per_s']} events/s "
              f"(runs {r['runs_us_per_event']})"
              + (f"; the watch thread {r['watch_us_per_event']}, the process {r['process_us_per_event']} us per event"
                 if "watch_us_per_event" in r else ""))
    print(f"CPU per event, decode / hint: {doc['cpu_ratio_decode_over_hint']}")
    if "watch_cpu_ratio_http_client_over_hint" in doc:
        print(f"the watch thread's CPU per event, http.client / hint: {doc['watch_cpu_ratio_http_client_over_hint']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
