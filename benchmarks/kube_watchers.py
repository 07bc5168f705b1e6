"""What a process watching every pod costs the API server, measured on the test API server.

    python -m benchmarks.kube_watchers [--rate 300] [--seconds 15] [--watchers 0,4] [--repeats 3] [--json FILE]

Every shardsched process keeps a watch of all pods: the dispatcher, each shard, each binder.
kube-scheduler keeps one. The API server sends each pod event to each watcher (every pod is
created, bound and marked Running: three events), and kube_vs shows it: the API server sends
about 12 pod events per pod bound by shardsched's three processes (with kwok's watch), about 6
per pod bound by kube-scheduler or the ceiling. This benchmark puts a price on one such event.
On the API server of benchmarks/kube_cluster.py without kwok, a writer process changes a label
of one of 500 pods `--rate` times a second for `--seconds` (paced, from 8 threads: one event at
a time, as a scheduler's bindings and the kubelets' status writes come, not in bursts, where
the server packs many events into one write and one event costs much less), while K passive
watcher processes (each a KubeStore's watch of all pods, no event's document read) follow;
the variants K of `--watchers` alternate in each repeat. Reported per K: the API server's and
etcd's CPU per write (from the writer's start until every watcher has seen its last write),
and, against the first K, the API server's CPU per event per extra watcher: what a platform
engineer pays on the API server for each shard added, per pod event, and part of why
shardsched's pods/s on the API server stay below the ceiling's (benchmarks/kube_vs.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from benchmarks.following import NODES, kube_plane
from benchmarks.harness import write_json
from benchmarks.kube_vs import clear_pods
from benchmarks.processes import cpu_seconds
from benchmarks.workloads import mixed
from common.store.kube_store import KubeStore

#: A passive watcher: lists pods, prints "ready", then follows the store's watch of pods (which
#: resumes where it was when the API server ends it: in a burst the server closes a watch
#: whose reader falls behind) until it has seen the resourceVersion given on stdin, reading
#: no event's document; prints how many events it saw.
_WATCHER = """
import sys
from common.store.kube_store import KubeStore
store = KubeStore(sys.argv[1])
_, rv = store.list("Pod")
store.poll(rv, timeout=0.0, kinds=("Pod",))  # (opens the watch)
print("ready", flush=True)
last, seen = int(sys.stdin.readline()), 0
while int(rv) < last:
    events = store.poll(rv, timeout=5.0, kinds=("Pod",))
    if events:
        seen += len(events)
        rv = events[-1].rv
print(seen, flush=True)
"""


#: The writer (python -c _WRITER KUBECONFIG RATE SECONDS): a label of the namespace "bench"'s
#: pods changed RATE times a second for SECONDS, round-robin, from 8 paced threads; prints the
#: number of writes, then the last resourceVersion written.
_WRITER = """
import sys, threading, time
from common.store.kube_store import KubeStore
store = KubeStore(sys.argv[1])
rate, seconds = float(sys.argv[2]), float(sys.argv[3])
names = sorted(p["metadata"]["name"] for p in store.list("Pod")[0] if p["metadata"]["namespace"] == "bench")
threads, stop, done, last = 8, time.monotonic() + seconds, [0], [0]
def write(k):
    i, due = k, time.monotonic()
    while time.monotonic() < stop:
        got = store._call("PATCH", f"/api/v1/namespaces/bench/pods/{names[i % len(names)]}",
                          body={"metadata": {"labels": {"written": str(i)}}}, content_type="application/merge-patch+json")
        last[0] = max(last[0], int(got["metadata"]["resourceVersion"]))
        done[0] += 1
        i += threads
        due += threads / rate
        time.sleep(max(0.0, due - time.monotonic()))
workers = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
print(done[0], last[0])
"""

#: How many pods the writer's labels go round (created once, never bound).
PODS = 500


def measure(kubeconfig: str, apiserver: int, etcd: int, rate: float, seconds: float, watchers: int) -> dict:
    """One run: the paced writes with `watchers` passive watchers following them."""
    procs = [subprocess.Popen([sys.executable, "-c", _WATCHER, kubeconfig], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(watchers)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", "a watcher did not start"
        api0, etcd0 = cpu_seconds(apiserver), cpu_seconds(etcd)
        writer = subprocess.run([sys.executable, "-c", _WRITER, kubeconfig, str(rate), str(seconds)],
                                capture_output=True, text=True, check=True)
        writes, last = writer.stdout.split()[-2:]
        seen = []
        for proc in procs:
            proc.stdin.write(last + "\n")
            proc.stdin.flush()
        for proc in procs:
            seen.append(int(proc.stdout.readline()))
        api, etcd_s = cpu_seconds(apiserver) - api0, cpu_seconds(etcd) - etcd0
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    writes = int(writes)
    assert writes > 0 and all(n >= writes for n in seen), f"watchers saw {seen} of {writes} events"
    return {"apiserver_ms_per_write": 1000 * api / writes, "etcd_ms_per_write": 1000 * etcd_s / writes,
            "writes": writes, "events_per_watcher": min(seen) if seen else 0}


def run(rate: float, seconds: float, counts: list[int], repeats: int) -> dict:
    rows: dict[int, list[dict]] = {k: [] for k in counts}
    with kube_plane() as cluster:
        kubeconfig = str(cluster.kubeconfig)
        store = KubeStore(kubeconfig)
        docs = mixed(PODS, seed=2, nodes=NODES)
        for d in docs:
            d["spec"]["schedulerName"] = "nobody"  # (never bound: only their labels change)
        assert not store.create_many(docs)
        apiserver, etcd = cluster.procs["kube-apiserver"].pid, cluster.procs["etcd"].pid
        try:
            for _ in range(repeats):
                for k in counts:
                    rows[k].append(measure(kubeconfig, apiserver, etcd, rate, seconds, k))
        finally:
            clear_pods(store, "bench")
            store.close()
    out = {}
    for k, runs in rows.items():
        out[str(k)] = {"apiserver_ms_per_write": round(statistics.median(r["apiserver_ms_per_write"] for r in runs), 3),
                       "etcd_ms_per_write": round(statistics.median(r["etcd_ms_per_write"] for r in runs), 3),
                       "runs_apiserver_ms_per_write": [round(r["apiserver_ms_per_write"], 3) for r in runs],
                       "writes": round(statistics.median(r["writes"] for r in runs))}
    base = counts[0]
    for k in counts[1:]:
        extra = out[str(k)]["apiserver_ms_per_write"] - out[str(base)]["apiserver_ms_per_write"]
        out[str(k)]["apiserver_us_per_event_per_extra_watcher"] = round(1000 * extra / (k - base), 1)
    return {"rate": rate, "seconds": seconds, "watchers": counts, "repeats": repeats, "results": out,
            "load": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=300.0, help="label writes a second")
    p.add_argument("--seconds", type=float, default=15.0, help="how long the writer writes in each run")
    p.add_argument("--watchers", default="0,4",
                   help="comma-separated numbers of passive pod watchers, alternated (the first is the baseline)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    try:
        counts = [int(x) for x in args.watchers.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0 or len(set(counts)) != len(counts):
        p.error(f"--watchers: distinct numbers of watchers, at least 0, got {args.watchers!r}")
    doc = run(args.rate, args.seconds, counts, args.repeats)
    for k, r in doc["results"].items():
        extra = r.get("apiserver_us_per_event_per_extra_watcher")
        print(f"{k} watchers: API server {r['apiserver_ms_per_write']} ms CPU per write (runs {r['runs_apiserver_ms_per_write']}), "
              f"etcd {r['etcd_ms_per_write']}, {r['writes']} writes"
              + (f"; {extra} us per event per extra watcher" if extra is not None else ""))
    print(f"load average {doc['load']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
