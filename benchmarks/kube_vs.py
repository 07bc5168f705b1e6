"""shardsched against kube-scheduler on one real API server.

    python -m benchmarks.kube_vs [--nodes 5000] [--pods N] [--shards N] [--rate R] [--json FILE]

One control plane from benchmarks/kube_cluster.py (etcd, kube-apiserver, kwok; `make kube-bins`
builds them), one fresh kwok fleet (`shardsched fleet --nodes N --profile P -o yaml |
kubectl create -f -`), then the same pods (a `shardsched bench` workload, the same count and
shapes, created at the same rate by this process) scheduled twice, first by shardsched
(dispatcher, shards and binder processes with `--store kube://...`), then by kube-scheduler
(client QPS and burst raised so its client is not the limit). Each side is warmed up with one
pod (so a scheduler's start-up is not measured) and its pods are deleted afterwards, so both
start from the same empty fleet.

For each side: pods/s from the first creation to the last binding and the steady rate (between
the 10% and 90% bindings), creation->binding latency p50/p90/p99 (creation = the create call
returning, binding = first seen on this process's watch), pods bound, `verify`'s result, and
the CPU each process used during the run (share of one core); then shardsched/kube-scheduler.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import config as config_mod
from common import fleet as fleet_mod
from common.store.kube_store import KubeStore
from common.verify import verify_store

from . import e2e, harness, kube_cluster
from .workloads import WORKLOADS

#: Create calls in flight at once.
CREATORS = 16
SIDES = ("shardsched", "kube-scheduler")
SCHEDULER_NAME = {"shardsched": "shardsched", "kube-scheduler": "default-scheduler"}


# --- steps shared with tests/test_kube_e2e.py -------------------------------------------------

def create_namespace(store: KubeStore, name: str) -> None:
    store._call("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}})


def run_pods(store: KubeStore, pods: list[dict], rate: float, timeout: float, during=None,
             settle: float | None = None) -> dict:
    """Create `pods` (`rate` pods/s, 0 = as fast as the API server takes them) from a thread
    while the store's watch stamps each binding. Returns `start`, `created` (when the last
    create call returned), `created_at` and `bound_at` ("namespace/name" -> monotonic time),
    `nodes` ("namespace/name" -> node) and `missing` (pods not bound; see
    e2e.Observer.wait_bound for `timeout`, `during` and `settle`)."""
    namespaces = {p["metadata"]["namespace"] for p in pods}
    observer = e2e.Observer(store, store.list("Pod")[1], namespaces.pop() if len(namespaces) == 1 else None)
    observer.thread.start()
    created_at: dict[str, float] = {}
    start = time.monotonic()

    errors = []

    def create_one(i: int) -> None:
        if rate:
            wait = start + i / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        errors.extend(store.create_many(pods[i:i + 1]))
        created_at[f"{pods[i]['metadata']['namespace']}/{pods[i]['metadata']['name']}"] = time.monotonic()

    def create():  # one create call per pod, CREATORS at a time, each stamped as it returns
        with ThreadPoolExecutor(CREATORS, thread_name_prefix="create") as pool:
            list(pool.map(create_one, range(len(pods))))

    creator = threading.Thread(target=create, daemon=True)
    creator.start()
    keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods}
    missing = observer.wait_bound(keys, timeout, during, settle)
    creator.join()
    return {"start": start, "created": max(created_at.values()), "created_at": created_at,
            "bound_at": {k: t for k, t in observer.bound_at.items() if k in keys},
            "nodes": observer.nodes, "missing": missing, "errors": errors}


def clear_pods(store: KubeStore, namespace: str) -> None:
    keys = [(f"{namespace}/{p['metadata']['name']}", None) for p in store.list("Pod")[0]
            if p["metadata"]["namespace"] == namespace]
    assert store.evict_many(keys) == [None] * len(keys)


# --- the benchmark ----------------------------------------------------------------------------

def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    return sum(cpu) - cpu[3] - cpu[4], sum(cpu)  # busy, total (idle and iowait count as idle)


class CpuMeter:
    """Share of one core each named process used between start() and stop()."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.cpu0 = {name: _cpu_s(pid) for name, pid in self.pids.items()}
        self.machine0 = _machine_busy()

    def stop(self) -> dict:
        wall = time.monotonic() - self.t0
        out = {name: round((_cpu_s(pid) - self.cpu0[name]) / wall, 2) for name, pid in self.pids.items()}
        busy, total = (b - a for a, b in zip(self.machine0, _machine_busy()))
        cores = os.cpu_count() * busy / total if total else 0.0
        out["other processes"] = round(cores - sum(out.values()), 2)
        out["whole machine"] = round(cores, 2)
        return out


def figures(run: dict, pods: int) -> dict:
    bound = sorted(run["bound_at"].values())
    n = len(bound)
    latencies = [run["bound_at"][k] - run["created_at"][k] for k in run["bound_at"] if k in run["created_at"]]
    lo, hi = int(0.1 * (n - 1)), int(0.9 * (n - 1))
    per_node = Counter(run["nodes"][k] for k in run["bound_at"])
    since_start = e2e.per_second([run["start"]] + bound)  # the start counted once in the first second
    since_start[0] -= 1
    return {
        "pods": pods, "bound": n,
        "created_in_s": round(run["created"] - run["start"], 2),
        "creation_rate": round(pods / (run["created"] - run["start"]), 1),
        "first_bound_s": round(bound[0] - run["start"], 2) if bound else None,
        "last_bound_s": round(bound[-1] - run["start"], 2) if bound else None,
        "pods_per_s": round(n / (bound[-1] - run["start"]), 1) if bound else 0.0,
        "steady_pods_per_s": round((hi - lo) / (bound[hi] - bound[lo]), 1) if n > 10 and bound[hi] > bound[lo] else None,
        "throughput_per_second_window": e2e.throughput(bound),
        **{f"latency_{q}_s": round(harness.percentile(latencies, q), 3) if latencies else None for q in (50, 90, 99)},
        "nodes_used": len(per_node), "max_pods_per_node": max(per_node.values(), default=0),
        "series": {"bound_per_second_since_start": since_start,
                   "latency_s_by_creation": [round(run["bound_at"][k] - t, 3) for k, t in
                                             sorted(run["created_at"].items(), key=lambda kv: kv[1])
                                             if k in run["bound_at"]]},
    }


def side_pods(workload: str, pods: int, seed: int, nodes: int, side: str) -> list[dict]:
    """The workload's pods for one side: the same shapes, in this side's namespace, for its scheduler."""
    out = WORKLOADS[workload](pods, seed, nodes)
    for p in out:
        p["metadata"]["namespace"] = f"vs-{side}"
        p["spec"]["schedulerName"] = SCHEDULER_NAME[side]
    return out


def warm_up(store: KubeStore, side: str, timeout: float = 120.0) -> None:
    """One pod, scheduled and deleted: the scheduler has synced its caches and runs."""
    pod = WORKLOADS["basic"](1, 0, 1)[0]
    pod["metadata"].update(name=f"warm-up-{side}", namespace="vs-warm-up")
    pod["spec"]["schedulerName"] = SCHEDULER_NAME[side]
    run = run_pods(store, [pod], 0, timeout)
    assert not run["missing"], f"{side} did not bind its warm-up pod within {timeout} s"
    clear_pods(store, "vs-warm-up")


def measure(store: KubeStore, side: str, args, meter: CpuMeter) -> dict:
    warm_up(store, side)
    create_namespace(store, f"vs-{side}")
    pods = side_pods(args.workload, args.pods, args.seed, args.nodes, side)
    print(f"{side}: creating {len(pods)} pods at {args.rate or 'as many as the server takes'} pods/s", flush=True)
    meter.start()
    run = run_pods(store, pods, args.rate, args.timeout,
                   during=_progress(side, len(pods)), settle=args.settle)
    out = figures(run, len(pods))
    out["create_errors"] = len(run["errors"])
    out["cpu_cores"] = meter.stop()
    report = verify_store(store)
    out["verify_ok"] = report["ok"] and not report["unparsable"]
    print(f"{side}: {out['bound']}/{len(pods)} bound, last after {out['last_bound_s']} s; deleting the pods",
          flush=True)
    clear_pods(store, f"vs-{side}")
    return out


def _progress(side: str, total: int):
    last = [0.0]

    def during(bound: int) -> None:
        if time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            print(f"  {side}: {bound}/{total} bound", flush=True)
    return during


def shardsched_cluster(kubeconfig: Path, args, log_dir: str):
    from common.local_cluster import LocalCluster

    cfg = config_mod.defaults()
    cfg["store"]["kubeconfig"] = str(kubeconfig)
    cfg["shards"]["count"], cfg["binders"]["count"] = args.shards, args.binders
    for section in ("shards", "binders"):
        cfg[section]["basePort"] = 0
        cfg[section]["metricsBasePort"] = 0
    cfg["dispatcher"].update(port=0, metricsPort=0)
    return LocalCluster(cfg, f"kube://{kubeconfig}", args.seed, log_dir=log_dir)


def table(doc: dict) -> dict:
    ours, theirs = doc["shardsched"], doc["kube-scheduler"]
    rows = {}
    for key in ("pods", "bound", "created_in_s", "creation_rate", "first_bound_s", "last_bound_s", "pods_per_s",
                "steady_pods_per_s", "latency_50_s", "latency_90_s", "latency_99_s", "nodes_used",
                "max_pods_per_node", "verify_ok"):
        a, b = ours[key], theirs[key]
        ratio = round(a / b, 2) if isinstance(a, (int, float)) and not isinstance(a, bool) and b else ""
        rows[key] = {"shardsched": a, "kube-scheduler": b, "shardsched / kube-scheduler": ratio}
    for name in sorted(set(ours["cpu_cores"]) | set(theirs["cpu_cores"])):
        rows[f"cpu: {name}"] = {"shardsched": ours["cpu_cores"].get(name, ""),
                                "kube-scheduler": theirs["cpu_cores"].get(name, ""),
                                "shardsched / kube-scheduler": ""}
    return rows


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.set_defaults(nodes=5000)
    p.add_argument("--profile", choices=fleet_mod.PROFILES, default="mixed")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="mixed")
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--binders", type=int, default=1)
    p.add_argument("--rate", type=float, default=0.0,
                   help="pods created per second on both sides (0 = as fast as the API server takes them; "
                        "the table shows the rate each side got)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for one side's bindings")
    p.add_argument("--settle", type=float, default=60.0,
                   help="stop waiting once no pod was bound for this many seconds")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="kube-vs-") as tmp:
        work = Path(tmp)
        cluster = kube_cluster.KubeCluster(work, kube_cluster.kube_bin_dir())
        store = None
        try:
            cluster.start()
            t = time.monotonic()
            cluster.create_fleet(args.nodes, args.profile, timeout=1200)
            fleet_s = time.monotonic() - t
            print(f"{args.nodes} {args.profile} kwok nodes created and taken over by kwok in {fleet_s:.0f} s",
                  flush=True)
            store = KubeStore(str(cluster.kubeconfig))
            create_namespace(store, "vs-warm-up")
            control_plane = {name: proc.pid for name, proc in cluster.procs.items()}
            client = {"this client (creates pods, watches bindings)": os.getpid()}
            doc = {"nodes": args.nodes, "profile": args.profile, "workload": args.workload, "pods": args.pods,
                   "rate": args.rate, "shards": args.shards, "binders": args.binders, "fleet_s": round(fleet_s, 1)}

            ours = shardsched_cluster(cluster.kubeconfig, args, str(work))
            try:
                ours.start(timeout=120)
                pids = {f"{role} {i}": proc.pid for (role, i), proc in ours.procs.items()}
                doc["shardsched"] = measure(store, "shardsched", args, CpuMeter({**control_plane, **pids, **client}))
            finally:
                ours.stop()

            sched = cluster.start_kube_scheduler(work)
            try:
                doc["kube-scheduler"] = measure(store, "kube-scheduler", args, CpuMeter(
                    {**control_plane, "kube-scheduler": sched.pid, **client}))
            finally:
                sched.terminate()
                sched.wait(10)
        except BaseException:
            kube_cluster.print_logs(work, 2000)
            raise
        finally:
            if store is not None:
                store.close()
            cluster.stop()

    doc["table"] = table(doc)
    harness.print_table(f"{args.pods} {args.workload} pods on {args.nodes} {args.profile} kwok nodes, one real "
                        f"kube-apiserver, created at {args.rate or 'the most'} pods/s; shardsched: {args.shards} "
                        f"shard(s), {args.binders} binder(s); cpu in cores", doc["table"])
    harness.write_json(args.json, doc)
    both = (doc["shardsched"], doc["kube-scheduler"])
    return 0 if all(s["bound"] == s["pods"] and s["verify_ok"] for s in both) else 1


if __name__ == "__main__":
    raise SystemExit(main())
