"""What a process watching every pod costs the API server, measured on the test API server.

    python -m benchmarks.kube_watchers [--pods 2000] [--watchers 0,2] [--repeats 3] [--json FILE]

Every shardsched process keeps a watch of all pods: the dispatcher, each shard, each binder.
kube-scheduler keeps one. The API server sends each pod event to each watcher (every pod is
created, bound and marked Running: three events), and kube_vs shows it: the API server sends
about 12 pod events per pod bound by shardsched's three processes (with kwok's watch), about 6
per pod bound by kube-scheduler or the ceiling. This benchmark puts a price on one: on the API
server of benchmarks/kube_cluster.py without kwok, a writer process creates `--pods` pods of
the mixed profile, binds each and writes it Running (benchmarks.following.write_bound, as in
benchmarks/follow_hint.py) while K passive watcher processes (each a KubeStore's watch of all
pods, reading no event's document) follow; the variants K of `--watchers` alternate in
each repeat. Reported per K: the API server's and etcd's CPU per pod (from before the writes
until every watcher has read the last event), and, against the first K, the API server's CPU
per event per extra watcher. It is what a platform engineer pays on the API server for each
shard added (a shard's watch), and part of why shardsched's pods/s on the API server stay
below the ceiling's (benchmarks/kube_vs.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from benchmarks.following import KUBE_WRITER, kube_plane
from benchmarks.harness import write_json
from benchmarks.kube_vs import clear_pods
from benchmarks.processes import cpu_seconds
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


def measure(kubeconfig: str, apiserver: int, etcd: int, pods: int, watchers: int) -> dict:
    """One run: the writes with `watchers` passive watchers following them."""
    procs = [subprocess.Popen([sys.executable, "-c", _WATCHER, kubeconfig], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(watchers)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", "a watcher did not start"
        api0, etcd0, wall0 = cpu_seconds(apiserver), cpu_seconds(etcd), time.perf_counter()
        writer = subprocess.run([sys.executable, "-c", KUBE_WRITER, kubeconfig, str(pods)],
                                capture_output=True, text=True, check=True)
        last = writer.stdout.split()[-1]
        read = []
        for proc in procs:
            proc.stdin.write(last + "\n")
            proc.stdin.flush()
        for proc in procs:
            read.append(int(proc.stdout.readline()))
        api, etcd_s = cpu_seconds(apiserver) - api0, cpu_seconds(etcd) - etcd0
        wall = time.perf_counter() - wall0
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        store = KubeStore(kubeconfig)
        clear_pods(store, "bench")
        store.close()
    assert all(n >= 3 * pods for n in read), f"watchers saw {read} of {3 * pods} events"
    return {"apiserver_ms_per_pod": 1000 * api / pods, "etcd_ms_per_pod": 1000 * etcd_s / pods,
            "wall_s": wall, "events_per_watcher": min(read) if read else 0}


def run(pods: int, counts: list[int], repeats: int) -> dict:
    rows: dict[int, list[dict]] = {k: [] for k in counts}
    with kube_plane() as cluster:
        kubeconfig = str(cluster.kubeconfig)
        apiserver, etcd = cluster.procs["kube-apiserver"].pid, cluster.procs["etcd"].pid
        for _ in range(repeats):
            for k in counts:
                rows[k].append(measure(kubeconfig, apiserver, etcd, pods, k))
    out = {}
    for k, runs in rows.items():
        out[str(k)] = {"apiserver_ms_per_pod": round(statistics.median(r["apiserver_ms_per_pod"] for r in runs), 3),
                       "etcd_ms_per_pod": round(statistics.median(r["etcd_ms_per_pod"] for r in runs), 3),
                       "runs_apiserver_ms_per_pod": [round(r["apiserver_ms_per_pod"], 3) for r in runs]}
    base = counts[0]
    for k in counts[1:]:
        if k != base:
            extra = out[str(k)]["apiserver_ms_per_pod"] - out[str(base)]["apiserver_ms_per_pod"]
            # three events a pod (created, bound, Running) to each extra watcher
            out[str(k)]["apiserver_us_per_event_per_extra_watcher"] = round(1000 * extra / (3 * (k - base)), 1)
    return {"pods": pods, "watchers": counts, "repeats": repeats, "results": out,
            "load": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=2000, help="pods written (3 events each)")
    p.add_argument("--watchers", default="0,2",
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
    doc = run(args.pods, counts, args.repeats)
    for k, r in doc["results"].items():
        extra = r.get("apiserver_us_per_event_per_extra_watcher")
        print(f"{k} watchers: API server {r['apiserver_ms_per_pod']} ms CPU per pod (runs {r['runs_apiserver_ms_per_pod']}), "
              f"etcd {r['etcd_ms_per_pod']}" + (f"; {extra} us per event per extra watcher" if extra is not None else ""))
    print(f"load average {doc['load']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
