"""shardsched against kube-scheduler, and both against the API server's ceiling.

    python -m benchmarks.kube_vs [--mode backlog|stream] [--nodes 5000] [--pods N] [--shards N]
                                 [--sides ceiling,shardsched,kube_scheduler] [--rate R]
                                 [--running-pods N] [--keep-logs DIR] [--json FILE]

One control plane from benchmarks/kube_cluster.py (etcd, kube-apiserver, kwok; `make kube-bins`
builds them), one fresh kwok fleet (`shardsched fleet --nodes N --profile P -o yaml |
kubectl create -f -`), kwok's node heartbeats set as a kubelet with node leases behaves
(benchmarks/kube_cluster.py says the intervals), then the same pods (a `shardsched bench`
workload) scheduled by each side in turn, each in its own namespace, deleted afterwards:

* `ceiling`: benchmarks/ceiling.py, a binder with one pod watch and no scheduling in it,
  binding round-robin to nodes with room, many requests in flight: what this API server on
  this machine can take from a scheduler;
* `shardsched`: dispatcher, shards and binders as processes with `--store kube://...`;
* `kube_scheduler`: kube-scheduler built from the same release, client QPS limits raised.

Modes. `backlog` (the default, as scheduler_perf measures a scheduler rather than the client
creating pods): every pod is created while no scheduler runs, then the side is started and
timed from its start, start-up included, to its last binding. `stream`: the side is started
and warmed up with one pod, then the pods are created at `--rate` (0 = as fast as the server
takes them) and timed from the first creation.

For each side: pods/s and its fraction of the ceiling's, latency p50/p90/p99 (backlog: from
the side's start to each binding; stream: from each pod's creation call returning to its
binding), pods bound, `verify`'s result, the CPU of the side's own processes per bound pod
(all shards, binders and the dispatcher together; kube-scheduler's one process) and the API
server's, each of its processes' peak RSS, and what the API server was asked per pod bound
(`api_per_pod`: its own request and watch-event counters, from its /metrics); then `ratio` = shardsched's pods/s over
kube-scheduler's. shardsched's start-up, phase by phase, is read from its processes' logs
(`startup_s`: when each logged its start, its list, its lease..., from their spawn).

`--running-pods N`: before any side starts, N pods of benchmarks/running.py's mix are written
bound to the fleet and kwok marks them Running, so every side lists and follows a cluster
that is not empty (and its RSS shows what they cost it).
"""
from __future__ import annotations

import compileall
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import config as config_mod
from common.tools import fleet as fleet_mod
from common.store.kube_store import KubeStore
from common.tools.verify import verify_store

from . import e2e, harness, kube_cluster, processes, running
from .workloads import WORKLOADS

#: The packages shardsched's processes (and the ceiling) import, compiled before any side starts.
PACKAGES = ("proto", "common", "dispatcher", "shard", "binder", "benchmarks")
ROOT = Path(__file__).resolve().parents[1]

#: Create calls in flight at once.
CREATORS = 16
SIDES = ("ceiling", "shardsched", "kube_scheduler")
SCHEDULER_NAME = {"ceiling": "ceiling", "shardsched": "shardsched", "kube_scheduler": "default-scheduler"}


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
    errors: list = []
    start = time.monotonic()
    creator = threading.Thread(target=_create, args=(store, pods, rate, created_at, errors), daemon=True)
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


#: The writes kwok (the nodes' kubelets) makes for a side's pods: their statuses, their deletion.
KWOK_WRITES = ("PATCH pods/status", "DELETE pods")


def wait_quiet(counts, keys=KWOK_WRITES, quiet_s: float = 1.0, timeout: float = 120.0, tick: float = 0.25) -> float:
    """Wait until the API server's counts of `keys` (`counts()`: api_counts) have not moved
    for `quiet_s`, at most `timeout`; returns the seconds waited. kwok runs a side's pods as
    they are bound and deletes them after they are: what it has not written yet when the side
    is done must not fall in the next side's run."""
    start = last_move = time.monotonic()
    seen = None
    while True:
        got = tuple(counts().get(k, 0.0) for k in keys)
        now = time.monotonic()
        if got != seen:
            seen, last_move = got, now
        if now - last_move >= quiet_s or now - start >= timeout:
            return now - start
        time.sleep(tick)


# --- the benchmark ----------------------------------------------------------------------------

_SAMPLE = re.compile(r'^(apiserver_request_total|apiserver_watch_events_total)\{([^}]*)\} ([0-9.e+]+)$', re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def api_counts(store: KubeStore) -> dict[str, float]:
    """The API server's own counts so far, from its /metrics: requests by verb and resource
    ("POST pods/binding", "WATCH pods", ...) and watch events it sent, all watchers together
    ("events sent: pods"). The difference over a side's run, per pod bound, says what the side
    asked of the server beyond its bindings (the bench's own watch and kwok are in every side's
    figures alike)."""
    text = store._http.request("GET", "/metrics").decode()
    counts: dict[str, float] = {}
    for name, labels, value in _SAMPLE.findall(text):
        lab = dict(_LABEL.findall(labels))
        if name == "apiserver_request_total":
            sub = lab.get("subresource")
            key = f"{lab.get('verb')} {lab.get('resource')}{'/' + sub if sub else ''}"
        else:
            key = f"events sent: {lab.get('resource') or lab.get('kind')}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def per_pod(before: dict[str, float], after: dict[str, float], pods: int) -> dict[str, float]:
    """What grew from `before` to `after`, per pod (at least 0.01 per pod), largest first."""
    grown = {k: (after[k] - before.get(k, 0.0)) / pods for k in after} if pods else {}
    return dict(sorted(((k, round(v, 2)) for k, v in grown.items() if v >= 0.01), key=lambda kv: -kv[1]))


def _create(store: KubeStore, pods: list[dict], rate: float, created_at: dict, errors: list) -> None:
    """One create call per pod, CREATORS at a time (`rate` pods/s, 0 = as fast as the server
    takes them), each stamped in `created_at` as it returns; refusals go to `errors`."""
    start = time.monotonic()

    def create_one(i: int) -> None:
        if rate:
            wait = start + i / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        errors.extend(store.create_many(pods[i:i + 1]))
        created_at[f"{pods[i]['metadata']['namespace']}/{pods[i]['metadata']['name']}"] = time.monotonic()

    with ThreadPoolExecutor(CREATORS, thread_name_prefix="create") as pool:
        list(pool.map(create_one, range(len(pods))))


def create_all(store: KubeStore, pods: list[dict], rate: float) -> dict:
    """Create `pods`, CREATORS calls at a time (`rate` pods/s, 0 = as fast as the server
    takes them); "namespace/name" -> when its create call returned."""
    created_at: dict[str, float] = {}
    errors: list = []
    _create(store, pods, rate, created_at, errors)
    if errors:
        raise RuntimeError(f"{len(errors)} pods could not be created, e.g. {errors[0]}")
    return created_at


def figures(bound_at: dict, since: dict, start: float, pods: int) -> dict:
    """pods/s from `start` to the last binding, and latency of each binding from `since[key]`."""
    bound = sorted(bound_at.values())
    latencies = [bound_at[k] - since[k] for k in bound_at if k in since]
    n = len(bound)
    lo, hi = int(0.1 * (n - 1)), int(0.9 * (n - 1))
    per_second = e2e.per_second([start] + bound)
    if per_second:
        per_second[0] -= 1  # the start is not a binding
    return {
        "pods": pods, "bound": n,
        "pods_per_s": round(n / (bound[-1] - start), 1) if bound else 0.0,
        "first_bound_s": round(bound[0] - start, 2) if bound else None,
        "last_bound_s": round(bound[-1] - start, 2) if bound else None,
        "steady_pods_per_s": round((hi - lo) / (bound[hi] - bound[lo]), 1) if n > 10 and bound[hi] > bound[lo] else None,
        "latency_s": {f"p{q}": round(harness.percentile(latencies, q), 3) if latencies else None for q in (50, 90, 99)},
        "series": {"bound_per_second_since_start": per_second},
    }


class Side:
    """One scheduler under test: `start()` returns the pids of its own processes."""

    def __init__(self, name: str, kube: kube_cluster.KubeCluster, args, work: Path):
        self.name, self.kube, self.args, self.work = name, kube, args, work
        self._stop = None

    def start(self) -> dict[str, int]:
        if self.name == "shardsched":
            ours = shardsched_cluster(self.kube.kubeconfig, self.args, str(self.work))
            for role in ("binder", "shard", "dispatcher"):  # as LocalCluster.start, without waiting
                for i in range(ours.counts()[role]):
                    ours.start_one(role, i)
            self._stop = ours.stop
            return {f"{role} {i}": proc.pid for (role, i), proc in ours.procs.items()}
        if self.name == "kube_scheduler":
            proc = self.kube.start_kube_scheduler(self.work)
        else:
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.ceiling", "--kubeconfig",
                                     str(self.kube.kubeconfig), "--scheduler-name", SCHEDULER_NAME["ceiling"]],
                                    stdout=(self.work / "ceiling.log").open("wb"), stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._stop = stop
        return {self.name: proc.pid}

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


def measure(store: KubeStore, side: Side, args, control_plane: dict) -> dict:
    ns = f"vs-{side.name.replace('_', '-')}"
    create_namespace(store, ns)
    pods = side_pods(args.workload, args.pods, args.seed, args.nodes, side.name)
    keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods}
    if args.mode == "backlog":
        print(f"{side.name}: creating {len(pods)} pods with no scheduler running", flush=True)
        created_at = create_all(store, pods, 0)
    observer = e2e.Observer(store, store.list("Pod")[1], ns)
    observer.thread.start()
    try:
        counted = api_counts(store)
        spawned_wall = time.time()
        own = side.start()
        if args.mode == "stream":
            warm_up(store, side.name)
        meter = processes.CpuMeter({**control_plane, **own})
        meter.start()
        start = time.monotonic()
        if args.mode == "stream":
            print(f"{side.name}: creating {len(pods)} pods at {args.rate or 'as many as the server takes'} pods/s",
                  flush=True)
            creator = ThreadPoolExecutor(1)
            pending_created = creator.submit(create_all, store, pods, args.rate)
        missing = observer.wait_bound(keys, args.timeout, _progress(side.name, len(pods)), args.settle)
        cores, seconds = meter.stop()
        peak = {name: processes.memory(pid) for name, pid in own.items()}
        counted = (counted, api_counts(store))
        if args.mode == "stream":
            created_at = pending_created.result()
            creator.shutdown()
    finally:
        side.stop()
    bound_at = {k: t for k, t in observer.bound_at.items() if k in keys}
    since = created_at if args.mode == "stream" else {k: start for k in keys}
    out = figures(bound_at, since, start, len(pods))
    if side.name == "shardsched":
        out["startup_s"] = startup(side.work, spawned_wall, own)
    own_s = sum(seconds[name] for name in own)
    out["cpu_ms_per_pod"] = round(1000 * own_s / out["bound"], 3) if out["bound"] else None
    out["apiserver_cpu_ms_per_pod"] = (round(1000 * seconds["kube-apiserver"] / out["bound"], 3)
                                       if out["bound"] else None)
    out["cpu_cores"] = cores
    out["peak_rss_mb"] = {name: round(m["VmHWM"] / processes.MB, 1) for name, m in peak.items() if m}
    out["missing"] = len(missing)
    out["api_per_pod"] = per_pod(*counted, out["bound"])
    report = verify_store(store)
    out["verify_ok"] = report["ok"] and not report["unparsable"]
    print(f"{side.name}: {out['bound']}/{len(pods)} bound at {out['pods_per_s']} pods/s, last after "
          f"{out['last_bound_s']} s, {out['cpu_ms_per_pod']} ms cpu per pod; deleting the pods", flush=True)
    print("  API server, per pod bound: " + ", ".join(f"{k} {v}" for k, v in out["api_per_pod"].items()), flush=True)
    for name, phases in out.get("startup_s", {}).items():
        print(f"  {name} start-up (s after it was spawned): "
              + ", ".join(f"{k} {v}" for k, v in phases.items()), flush=True)
    clear_pods(store, ns)
    waited = wait_quiet(lambda: api_counts(store))
    print(f"  kwok's writes for those pods over {waited:.1f} s after they were deleted", flush=True)
    return out


def compile_bytecode(root: Path = ROOT, packages=PACKAGES) -> int:
    """Write the bytecode of `packages` under `root`; returns how many packages had a module
    that would not compile (those modules are compiled by each process, as before).

    An installed shardsched has it (pip compiles what it installs; the image's build stage does
    the same), and a Go scheduler has nothing to compile. A checkout run with
    PYTHONDONTWRITEBYTECODE (as on the development machine) never writes it, so each of
    shardsched's four processes compiled every module of ours from source at start: 0.1 s of
    CPU each, all at once on two cores, on the way to the first binding. Python reads the
    files whatever that variable says."""
    failed = 0
    for name in packages:
        if not compileall.compile_dir(str(root / name), quiet=2):
            failed += 1
    return failed


def fill_running(store: KubeStore, n: int, nodes: list[dict], seed: int = 0, timeout: float = 1800.0) -> dict:
    """`--running-pods`: `n` of benchmarks/running.py's pods written bound to `nodes` (the
    fleet's manifests), then waited for until kwok has marked each Running (as a kubelet
    would), before any side starts: every side lists and watches them, and what they cost
    shows in its RSS. Returns {running_pods, deployments, write_s, running_s} (how long the
    writes and kwok's Running took)."""
    existing = {ns["metadata"]["name"] for ns in store.list("Namespace")[0]}
    for i in range(running.NAMESPACES):
        if f"team-{i}" not in existing:
            create_namespace(store, f"team-{i}")
    print(f"writing {n} running pods", flush=True)
    # The API server's Priority admission takes a pod's priority from its PriorityClass only
    # (a bare spec.priority is refused): one class per level of the mix.
    classes = {ns["metadata"]["name"] for ns in store.list("PriorityClass")[0]}
    for value, _ in running.PRIORITIES:
        if value and f"running-{value}" not in classes:
            store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": f"running-{value}"}, "value": value})
    t = time.monotonic()
    written = 0
    for chunk in running.generate(n, nodes, seed):
        for pod in chunk:
            value = pod["spec"].pop("priority", 0)
            if value:
                pod["spec"]["priorityClassName"] = f"running-{value}"
        errors = store.create_many(chunk)
        if errors:
            raise RuntimeError(f"running pods refused by the API server: {errors[:3]}")
        written += len(chunk)
    filled = {"running_pods": written, "deployments": running.deployment_count(n) if n > 0 else 0,
              "write_s": round(time.monotonic() - t, 2)}
    t = time.monotonic()
    while True:
        waiting = sum(1 for p in store._call("GET", "/api/v1/pods", query=[("fieldSelector", "status.phase!=Running")])
                      .get("items") or [] if p["metadata"]["namespace"].startswith("team-"))
        if not waiting:
            break
        assert time.monotonic() - t < timeout, f"kwok left {waiting} running pods not Running after {timeout} s"
        time.sleep(1.0)
    filled["running_s"] = round(time.monotonic() - t, 1)
    print(f"{filled['running_pods']} running pods written in {filled['write_s']} s, all Running "
          f"{filled['running_s']} s later", flush=True)
    return filled


def _progress(side: str, total: int):
    last = [0.0]

    def during(bound: int) -> None:
        if time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            print(f"  {side}: {bound}/{total} bound", flush=True)
    return during


def shardsched_cluster(kubeconfig: Path, args, log_dir: str):
    from common.tools.local_cluster import LocalCluster

    free = {"base_port": 0, "metrics_base_port": None}
    cfg = config_mod.defaults().replace(store={"kubeconfig": str(kubeconfig)},
                                        shards={"count": args.shards, **free},
                                        binders={"count": args.binders, **free},
                                        dispatcher={"port": 0, "metrics_port": None})
    return LocalCluster(cfg, f"kube://{kubeconfig}", args.seed, log_dir=log_dir)


def side_pods(workload: str, pods: int, seed: int, nodes: int, side: str) -> list[dict]:
    """The workload's pods for one side: the same shapes, in this side's namespace, for its scheduler."""
    out = WORKLOADS[workload](pods, seed, nodes)
    for p in out:
        p["metadata"]["namespace"] = f"vs-{side.replace('_', '-')}"
        p["spec"]["schedulerName"] = SCHEDULER_NAME[side]
    return out


def warm_up(store: KubeStore, side: str, timeout: float = 120.0) -> None:
    """One pod, scheduled and deleted: the scheduler has synced its caches and runs."""
    pod = WORKLOADS["basic"](1, 0, 1)[0]
    pod["metadata"].update(name=f"warm-up-{side.replace('_', '-')}", namespace="vs-warm-up")
    pod["spec"]["schedulerName"] = SCHEDULER_NAME[side]
    run = run_pods(store, [pod], 0, timeout)
    assert not run["missing"], f"{side} did not bind its warm-up pod within {timeout} s"
    clear_pods(store, "vs-warm-up")


#: What `startup` reads from shardsched's logs: label -> the first line's text that marks it.
STARTUP_MARKS = {
    "starting": " starting", "listed": "informer: listed ", "serving": "serving gRPC on ",
    "lease": "holds its lease", "partition": "holding partition ", "shard_joined": " joined at ",
    "dispatch_stream": "dispatcher stream opened", "binder_stream": "stream to binder at ",
}


def startup(work: Path, started_at: float, names) -> dict:
    """Each of shardsched's processes' start-up, phase by phase: seconds from when they were
    spawned (`started_at`, wall clock) to the first log line of each mark in STARTUP_MARKS
    (those its role logs)."""
    out = {}
    for name in names:
        path = work / f"{name.replace(' ', '-')}.log"
        if not path.exists():
            continue
        seen: dict[str, float] = {}
        for line in path.read_text(errors="replace").splitlines():
            for label, mark in STARTUP_MARKS.items():
                if label not in seen and mark in line:
                    try:
                        at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    except ValueError:
                        continue
                    seen[label] = round(at - started_at, 2)
        out[name] = seen
    return out


def keep_logs(work: Path, to: Path) -> None:
    """--keep-logs: the run's logs outlive its temporary directory (start-up timelines)."""
    to.mkdir(parents=True, exist_ok=True)
    for log in work.glob("*.log"):
        shutil.copy(log, to / log.name)


def summary(doc: dict) -> dict:
    """The table: one row per figure, one column per side."""
    rows = {}
    for key in ("pods_per_s", "fraction_of_ceiling", "cpu_ms_per_pod", "apiserver_cpu_ms_per_pod", "bound",
                "first_bound_s", "last_bound_s", "steady_pods_per_s", "verify_ok"):
        rows[key] = {side: doc[side].get(key, "") for side in SIDES if side in doc}
    for q in ("p50", "p90", "p99"):
        rows[f"latency {q} s"] = {side: doc[side]["latency_s"][q] for side in SIDES if side in doc}
    for name in sorted({n for side in SIDES if side in doc for n in doc[side].get("peak_rss_mb", {})}):
        rows[f"peak RSS MB: {name}"] = {side: doc[side]["peak_rss_mb"].get(name, "") for side in SIDES if side in doc}
    for name in sorted({n for side in SIDES if side in doc for n in doc[side]["cpu_cores"]}):
        rows[f"cpu cores: {name}"] = {side: doc[side]["cpu_cores"].get(name, "") for side in SIDES if side in doc}
    return rows


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.set_defaults(nodes=5000)
    p.add_argument("--mode", choices=("backlog", "stream"), default="backlog")
    p.add_argument("--sides", default=",".join(SIDES),
                   help=f"which sides to run, in this order (default {','.join(SIDES)})")
    p.add_argument("--profile", choices=fleet_mod.PROFILES, default="mixed")
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="mixed")
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--binders", type=int, default=1)
    p.add_argument("--rate", type=float, default=0.0,
                   help="stream mode: pods created per second (0 = as fast as the API server takes them)")
    p.add_argument("--running-pods", type=int, default=0,
                   help="bound pods (benchmarks/running.py's mix) written and Running before any side starts")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for one side's bindings")
    p.add_argument("--settle", type=float, default=60.0,
                   help="stop waiting once no pod was bound for this many seconds")
    p.add_argument("--keep-logs", metavar="DIR",
                   help="copy every process's log (the control plane's and each side's) into DIR at the end")
    args = p.parse_args(argv)
    sides = [s for s in args.sides.split(",") if s]
    unknown = set(sides) - set(SIDES)
    if unknown:
        p.error(f"unknown sides {sorted(unknown)} (choose from {', '.join(SIDES)})")

    if compile_bytecode():
        print("some modules did not compile to bytecode (their processes compile them at start)", flush=True)
    with tempfile.TemporaryDirectory(prefix="kube-vs-") as tmp:
        work = Path(tmp)
        cluster = kube_cluster.KubeCluster(work, kube_cluster.kube_bin_dir())
        store = None
        try:
            cluster.start()
            t = time.monotonic()
            cluster.create_fleet(args.nodes, args.profile, timeout=3600)
            fleet_s = time.monotonic() - t
            print(f"{args.nodes} {args.profile} kwok nodes created and taken over by kwok in {fleet_s:.0f} s",
                  flush=True)
            store = KubeStore(str(cluster.kubeconfig))
            create_namespace(store, "vs-warm-up")
            filled = (fill_running(store, args.running_pods, fleet_mod.generate(args.nodes, args.profile), args.seed)
                      if args.running_pods else None)
            control_plane = {name: proc.pid for name, proc in cluster.procs.items()}
            doc = {"mode": args.mode, "nodes": args.nodes, "profile": args.profile, "workload": args.workload,
                   "pods": args.pods, "rate": args.rate, "shards": args.shards, "binders": args.binders,
                   "fleet_s": round(fleet_s, 1), "kwok": kube_cluster.KWOK_HEARTBEATS,
                   "kwok_pod_workers": kube_cluster.KWOK_POD_WORKERS,
                   "running_pods": args.running_pods, "running_pods_fill": filled}
            for name in sides:
                doc[name] = measure(store, Side(name, cluster, args, work), args, control_plane)
        except BaseException:
            kube_cluster.print_logs(work, 2000)
            raise
        finally:
            if store is not None:
                store.close()
            cluster.stop()
            if args.keep_logs:
                keep_logs(work, Path(args.keep_logs))

    ceiling = doc.get("ceiling", {}).get("pods_per_s")
    doc["ceiling_pods_per_s"] = ceiling
    for name in sides:
        doc[name]["fraction_of_ceiling"] = round(doc[name]["pods_per_s"] / ceiling, 3) if ceiling else None
    if "shardsched" in doc and "kube_scheduler" in doc and doc["kube_scheduler"]["pods_per_s"]:
        doc["ratio"] = round(doc["shardsched"]["pods_per_s"] / doc["kube_scheduler"]["pods_per_s"], 2)
    doc["table"] = summary(doc)
    harness.print_table(f"{args.mode}: {args.pods} {args.workload} pods on {args.nodes} {args.profile} kwok nodes, "
                        f"one real kube-apiserver; shardsched: {args.shards} shard(s), {args.binders} binder(s); "
                        f"ratio {doc.get('ratio')}, ceiling {ceiling} pods/s", doc["table"])
    harness.write_json(args.json, doc)
    return 0 if all(doc[s]["bound"] == doc[s]["pods"] and doc[s]["verify_ok"] for s in sides) else 1


if __name__ == "__main__":
    raise SystemExit(main())
