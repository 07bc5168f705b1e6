"""`shardsched bench`: the whole stack on the embedded Redis, measured like scheduler_perf.

A kwok-style fleet is written into a fresh redis-server, the dispatcher, shards and binders
start as separate processes, and pods are created at `--rate` pods/s (0 = as fast as the
store takes them, so the scheduler is what is measured). An observer follows the store's
events and records when each pod is bound. Reported:

* throughput: pods bound in each one-second window from the first binding to the last
  (average = all bound / that span; p50/p90/p99 of the per-second samples);
* end-to-end latency per pod, from its creation call returning to its binding being seen;
* with `shards.qualitySamplePercent` (`bench --quality`): the placement quality the shards
  graded off the clock (common/runtime/quality.py: regret mean and p99, optimal share);
* conflicts (decisions a binder rejected), bound and unschedulable pods, the nodes they
  occupy (`nodes_used`, what packing minimises), per-shard counts,
  and the `verify` result over the final state of the store, with the seconds it took
  (`verify_s`: every bound pod's cross-node constraints are judged again);
* with claims from templates (`dra`), the passes and writes of the ResourceClaim controller
  run beside the stack (benchmarks/claims.py);
* for a workload with a baseline (`dra`: claims of devices, against the same pods asking
  GPUs as an extended resource), the baseline's run on the same fleet right after, and the
  ratio of the two throughputs (`against`);
* with pod groups (`gang`): groups placed per second, the time to place them (those of 64
  pods apart) and the groups left partial (benchmarks/groups.py);
* each process's start-to-ready time and peak RSS, and with `--running-pods N` (the fleet
  filled with N bound, Running pods before the processes start: benchmarks/running.py) the
  bytes each process spends per running pod (benchmarks/processes.py says how they are
  measured).
"""
from __future__ import annotations

import threading
import os
import time

from common import config as config_mod
from common.tools import fleet as fleet_mod
from common.tools import top
from common.tools.local_cluster import LocalCluster
from common.runtime import quality
from common.store import open_store
from common.store.embedded import EmbeddedRedis
from common.store.base import PollPace
from common.tools.verify import verify_store

from . import groups, harness, processes, running
from .churn import ChurnProcess
from .claims import ClaimsProcess
from .kill import ShardKiller, latency_around
from .workloads import FLEETS, STANDING, WORKLOADS

CREATE_BATCH = 500
#: Longest wait between two creation calls when pacing a rate.
PACE_S = 0.02
#: Shortest time between two creation calls when pacing a rate: the pods that fall due
#: meanwhile go in one call. The store's readers let events gather for as long between two
#: polls (common.store.base.WATCH_LINGER_S), so a reader sees about as many pods per poll
#: as with a call per pod; a call per pod (a thousand a second at 1,000 pods/s) cost the
#: harness and Redis a round trip and a script run each, on the cores the scheduler it
#: measures runs on.
CREATE_TICK_S = 0.005


class Observer:
    """Follows pod events and timestamps bindings (a thread of its own, started by the caller);
    only pods of `namespace` when one is given."""

    def __init__(self, store, rv: str, namespace: str | None = None):
        self.store = store
        self.rv = rv
        self.namespace = namespace
        self.bound_at: dict[str, float] = {}  # "namespace/name" -> when first seen bound
        self.nodes: dict[str, str] = {}       # "namespace/name" -> its node
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        #: its reads paced as the scheduler's processes pace theirs: a binding is timed up to
        #: the linger (5 ms) late, and the harness pays a poll per few bindings, not per one
        self.pace = PollPace()

    def _passes_over(self, kind: str, type_: str, key: str, bound: bool, data: bytes) -> bool:
        """Events that bind no pod it waits for (the store's EventSkip): left undecoded, as
        the harness shares the machine's cores with the scheduler it measures."""
        return not bound or type_ == "DELETED" or key in self.bound_at

    def _run(self) -> None:
        while not self.stop.is_set():
            events, read_to = self.store.read(self.rv, timeout=0.2, kinds=("Pod",), skip=self._passes_over,
                                              pace=self.pace)
            now = time.monotonic()
            if read_to is not None:
                self.rv = read_to
            for ev in events:
                meta = ev.obj["metadata"]
                node = ev.obj["spec"].get("nodeName")
                ns = meta.get("namespace", "default")
                if ev.type != "DELETED" and node and self.namespace in (None, ns):
                    key = f"{ns}/{meta['name']}"
                    self.bound_at.setdefault(key, now)
                    self.nodes[key] = node

    def wait_bound(self, keys: set[str], timeout: float, during=None, settle: float | None = None) -> set[str]:
        """Wait until every "namespace/name" of `keys` is bound, `timeout` seconds pass, or
        (with `settle`) no binding came for `settle` seconds; then stop following. Returns the
        keys still unbound. `during(bound)` is called on every look."""
        deadline = time.monotonic() + timeout
        last_change, last_bound = time.monotonic(), -1
        while not keys <= self.bound_at.keys():
            bound = len(self.bound_at)
            if during is not None:
                during(bound)
            now = time.monotonic()
            if bound != last_bound:
                last_change, last_bound = now, bound
            if now > deadline or (settle is not None and now - last_change > settle):
                break
            time.sleep(0.05)
        self.stop.set()
        self.thread.join()
        return keys - self.bound_at.keys()


def paced(n: int, rate: float, clock=time.monotonic, sleep=time.sleep, tick: float = CREATE_TICK_S):
    """(start, stop) index ranges of the pods to create now, so that pod i is created at
    `i / rate` seconds or a little after: each range holds the pods due by then (at most
    CREATE_BATCH), and calls come at most every `tick`, so R pods/s arrive a few at a
    time, and low-rate latency figures are real (in bursts of CREATE_BATCH, a rate of 300
    used to create 500 pods at once every 1.7 s). A rate of 0 creates as fast as the store
    takes them, CREATE_BATCH at a time."""
    if not rate:
        yield from ((i, min(n, i + CREATE_BATCH)) for i in range(0, n, CREATE_BATCH))
        return
    start, i, last = clock(), 0, float("-inf")
    while i < n:
        now = clock()
        # the next pod's time, and no sooner than a tick after the last call
        wake = max(start + i / rate, last + tick)
        if now < wake:
            sleep(min(PACE_S, wake - now))
            continue
        # (pod i is due by now: at least it, whatever the rounding of the product)
        due = max(i + 1, min(n, i + CREATE_BATCH, int((now - start) * rate) + 1))
        yield i, due
        i, last = due, now


class Rejected(RuntimeError):
    """The store refused objects a benchmark built: its figures would measure something else."""


def create_all(store, objs: list[dict]) -> None:
    """`create_many`, raising Rejected with the first refusals when any object is refused."""
    errors = store.create_many(objs)
    if errors:
        raise Rejected(f"the store refused {len(errors)} object(s): " + "; ".join(str(e) for e in errors[:3]))


def create_pods(store, pods: list[dict], rate: float, created_at: dict, progress,
                tick: float = CREATE_TICK_S) -> None:
    for i, j in paced(len(pods), rate, tick=tick):
        batch = pods[i:j]
        create_all(store, batch)
        now = time.monotonic()
        for d in batch:
            created_at[f"{d['metadata'].get('namespace', 'default')}/{d['metadata']['name']}"] = now
        progress(len(batch))


def settle_standing(store, cluster, leases: dict, pods: list[dict], timeout_s: float, quiet: bool) -> dict:
    """Creates pods that cannot be placed (a saturated pool's backlog) and waits until the
    shards have tried them all once and written their PodScheduled conditions (the shards'
    `unschedulable` and `conditions_written` counters each add up to as many: the conditions
    go out at the client's qps, minutes for a large backlog), so that the clock starts on a
    backlog already standing. Raises if that takes too long: a run measured on a half-settled
    backlog would mean nothing."""
    t = time.monotonic()
    store.create_many(pods)
    deadline = t + timeout_s + len(pods) / 20
    tried = written = 0
    while min(tried, written) < len(pods):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standing backlog of {len(pods)} pods was tried {tried} times and "
                               f"{written} conditions written in {time.monotonic() - t:.0f} s")
        time.sleep(0.5)
        counters = [cluster.status("shard", a).counters for a in leases["shard"].values()]
        tried = sum(int(c["unschedulable"]) for c in counters)
        written = sum(int(c["conditions_written"]) for c in counters)
    settle_s = round(time.monotonic() - t, 1)
    if not quiet:
        print(f"standing backlog: {len(pods)} pods tried and their conditions written in {settle_s} s")
    return {"pods": len(pods), "settle_s": settle_s}


def head_rv(store) -> str:
    """The store's newest resourceVersion, for a watch from now on. On the embedded Redis the
    rv of any list is the head of the one event stream every kind shares, so listing the
    PodGroups (few or none) gives it without reading every running pod."""
    return store.list("PodGroup")[1]


def per_second(times: list[float]) -> list[int]:
    """Bindings in each one-second window from the first binding to the last."""
    if not times:
        return []
    first = min(times)
    buckets = [0] * (int(max(times) - first) + 1)
    for t in times:
        buckets[int(t - first)] += 1
    return buckets


def throughput(times: list[float]) -> dict:
    if not times:
        return {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}
    span = max(times) - min(times)
    buckets = per_second(times)
    samples = buckets[:-1] or buckets  # the last window is partial
    return {"average": round(len(times) / span, 1) if span > 0 else float(len(times)),
            "p50": harness.percentile(samples, 50), "p90": harness.percentile(samples, 90),
            "p99": harness.percentile(samples, 99)}


def run(cfg: config_mod.Config, nodes: int, profile: str, pods: int, workload: str, rate: float, seed: int,
        settle_s: float = 10.0, timeout_s: float = 1800.0, quiet: bool = False,
        live: bool = False, churn_heartbeat_s: float | None = None, running_pods: int = 0,
        kill_shard_at: float | None = None, log_dir: str | None = None) -> dict:
    """One measured run; returns the report (the JSON document). With `churn_heartbeat_s`,
    a kubelet's writes run beside it (benchmarks/churn.py): node heartbeats at that period
    and bound pods marked Running. With `running_pods`, the fleet holds that many bound,
    Running pods before the processes start (benchmarks/running.py), and each process's
    memory is measured on the fleet alone first (benchmarks/processes.py). With
    `kill_shard_at`, shard 0 is killed with -9 that many seconds into the run and restarted
    (benchmarks/kill.py). With `log_dir`, the processes' logs stay there."""
    with EmbeddedRedis(password=True) as server:
        store = open_store(server.url)
        t = time.monotonic()
        fleet = fleet_mod.generate(nodes, profile, seed)
        create_all(store, FLEETS.get(workload, list)(fleet))
        fleet_s = time.monotonic() - t
        # A stack holding many running pods takes a while to list them (about 43 s for
        # 200,000 pods on this machine, busy): the start timeout grows with them.
        start_timeout = 60.0 + running_pods / 500
        if running_pods:
            # Cycles are slower over many running pods (those with pod affinity terms are
            # walked in every cycle): a pause of 10 s between bindings is no sign of the end.
            settle_s = max(settle_s, 60.0)
        empty_fleet = filled = None
        if running_pods:
            empty_fleet = processes.baseline(cfg, server.url, seed, start_timeout)
            filled = running.fill(store, running_pods, fleet, seed)
            if not quiet:
                print(f"wrote {filled['running_pods']} running pods of {filled['deployments']} deployments "
                      f"in {filled['write_s']} s")
        del fleet
        cluster = LocalCluster(cfg, server.url, seed, log_dir=log_dir)
        try:
            leases, ready = processes.start_timed(cluster, start_timeout)
            mem_ready = processes.sample(cluster)
            standing = (settle_standing(store, cluster, leases, STANDING[workload](pods, seed, nodes),
                                        start_timeout, quiet)
                        if workload in STANDING else None)
            rv = head_rv(store)
            observer = Observer(open_store(server.url), rv)
            observer.thread.start()
            noise = None
            if churn_heartbeat_s is not None:
                noise = ChurnProcess(server.url, rv, churn_heartbeat_s, seed)
                noise.start()
            manifests = WORKLOADS[workload](pods, seed, nodes)
            claims = None
            if any(m.get("kind") == "ResourceClaimTemplate" for m in manifests):
                claims = ClaimsProcess(server.url)
                claims.start()
                # Pods wait for the controller's claims: a pass over thousands of pods on a
                # busy machine leaves pauses of more than 10 s between bindings.
                settle_s = max(settle_s, 60.0)
            meter = processes.CpuMeter({**processes.pids(cluster), "store": server.pid, "bench": os.getpid(),
                                        **({"churn": noise.pid} if noise is not None else {}),
                                        **({"claims": claims.pid} if claims is not None else {})})
            meter.start()
            killer = ShardKiller(cluster, kill_shard_at, meter=meter) if kill_shard_at is not None else None
            if killer is not None:
                killer.start()
            pod_count = sum(1 for m in manifests if m.get("kind", "Pod") == "Pod")  # (gang: PodGroups too)
            created_at: dict[str, float] = {}
            peers = [(role, id_, address) for role in ("shard", "binder")
                     for id_, address in sorted(leases[role].items())]
            with harness.progress(pod_count, quiet,
                                  top.source(lambda: peers, cluster.security) if live else None) as bar:
                failure: list[Exception] = []

                def create() -> None:
                    try:
                        create_pods(store, manifests, rate, created_at, lambda n: None)
                    except Rejected as e:
                        failure.append(e)
                creator = threading.Thread(target=create, daemon=True)
                creator.start()
                started = last_change = time.monotonic()
                last_bound = 0
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline and not failure:
                    time.sleep(0.5)
                    bound = len(observer.bound_at)
                    bar(created=min(len(created_at), pod_count), scheduled=bound)
                    if bound != last_bound:
                        last_change, last_bound = time.monotonic(), bound
                    # Settled: no new binding for settle_s, once bindings have started (a slow
                    # variant may need longer than that for its first one; the deadline bounds it).
                    if not creator.is_alive() and (bound >= pod_count or (
                            bound and time.monotonic() - last_change > settle_s)):
                        break
            elapsed_s = time.monotonic() - started
            cores, cpu_s = meter.stop()
            killed = killer.stop() if killer is not None else None
            if killed is not None and killed["killed"]:
                leases = cluster.wait_ready(60.0)  # the restarted shard's new address
            observer.stop.set()
            observer.thread.join()
            if killed is not None and killed["killed"]:
                killed["e2e_latency_ms"] = latency_around(killer, created_at, observer.bound_at)
            churned = noise.stop() if noise is not None else None
            claimed = claims.stop() if claims is not None else None
            mem_end = processes.sample(cluster)
            shard_status = {id_: cluster.status("shard", a) for id_, a in sorted(leases["shard"].items())}
            gc_end = processes.gc_counters(cluster, leases)
            if failure:
                raise failure[0]
        finally:
            cluster.stop()
        verify_started = time.monotonic()
        verified = verify_store(store)
        verify_s = time.monotonic() - verify_started
        store.close()
    bound_times = list(observer.bound_at.values())
    latencies = sorted((observer.bound_at[k] - created_at[k]) * 1000
                       for k in observer.bound_at if k in created_at)
    per_shard = [{"shard": id_, "scheduled": int(s.counters["bound"]),
                  "conflicts": int(s.counters["conflicts"]), "cycles": int(s.counters["cycles"]),
                  "unschedulable_attempts": int(s.counters["unschedulable"])}
                 for id_, s in shard_status.items()]
    doc = {
        "workload": workload, "nodes": nodes, "profile": profile, "pods": pod_count,
        "shards": cfg.shards.count, "binders": cfg.binders.count,
        "threshold": cfg.threshold.mode, "fleet_write_s": round(fleet_s, 2),
        "elapsed_s": round(elapsed_s, 1), "timed_out": elapsed_s >= timeout_s,
        "throughput_pods_per_s": throughput(bound_times),
        "running_pods": filled["running_pods"] if filled else 0,
        "running_pods_fill": filled,
        "standing": standing,
        "kill": killed,
        "e2e_latency_ms": {q: round(harness.percentile(latencies, n), 1) if latencies else None
                           for q, n in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9))},
        "processes": processes.figures(ready, mem_ready, mem_end, empty_fleet, running_pods, gc_end,
                                       cpu_s, len(bound_times)),
        "cpu": processes.cpu_figures(cpu_s, cores, len(bound_times)),
        "conflicts": sum(s["conflicts"] for s in per_shard),
        # of which the binder's checks refused the placement (a node full, a port taken...),
        # rather than the decision waiting too long for an answer (withdrawn, then bound by
        # its first sending: AlreadyBound) on an overloaded machine
        "conflicts_refused": sum(int(s.counters["conflicts"] - s.counters["conflicts_withdrawn"]
                                     - s.counters["conflicts_already_bound"]) for s in shard_status.values()),
        # how many nodes the bound pods occupy: what a packing profile minimises
        "nodes_used": len(set(observer.nodes.values())),
        "scheduled": len(bound_times),
        "unschedulable": pod_count - len(bound_times),
        "per_shard": per_shard,
        "verify": verified,
        "verify_s": round(verify_s, 2),
        "churn": churned,
        "claims": claimed,
        "series": {"per_second": per_second(bound_times),
                   "latencies_ms": [round(x, 1) for x in latencies]},
    }
    if any(m.get("kind") == "PodGroup" for m in manifests):
        doc["groups"] = groups.figures(manifests, created_at, observer.bound_at)
    doc["packing"] = any(s.counters["packing"] for s in shard_status.values())
    if cfg.shards.quality_sample_percent:
        doc["quality"] = quality.summarize([dict(s.counters) for s in shard_status.values()])
    return doc


def against(doc: dict, base: dict) -> dict:
    """The baseline's figures beside a run's, and the run's throughput as a share of the
    baseline's (bench's `baseline` in the JSON)."""
    tp, base_tp = doc["throughput_pods_per_s"]["average"], base["throughput_pods_per_s"]["average"]
    return {"workload": base["workload"], "throughput": base_tp, "p99_ms": base["e2e_latency_ms"]["p99"],
            "scheduled": base["scheduled"], "conflicts": base["conflicts"], "verify_ok": base["verify"]["ok"],
            "ratio": round(tp / base_tp, 2) if base_tp else None}


#: The ablation's variants: the config that switches one optimisation off.
ABLATIONS = {
    "full snapshot copy": lambda c: c.replace(shards={"optimizations": {"incremental_snapshot": False}}),
    "zone-interleaved node list": lambda c: c.replace(shards={"optimizations": {"swap_delete_node_list": False}}),
    "kube threshold": lambda c: c.replace(threshold={"mode": "kube"}),
    "no preemption pruning": lambda c: c.replace(preemption={"pruning": False}),
    "no scheduling context": lambda c: c.replace(shards={"optimizations": {"scheduling_context": False}}),
    "one shard": lambda c: c.replace(shards={"count": 1}),
    # not an optimisation: what placing pod groups all or nothing costs (gang workload)
    "no coscheduling": lambda c: _disable(c, "Coscheduling"),
}


def _disable(cfg: config_mod.Config, plugin: str) -> config_mod.Config:
    off = config_mod.DisabledEntry.of({"name": plugin})
    return cfg.replace(profiles=tuple(p.replace(plugins={"disabled": (*p.plugins.disabled, off)})
                                      for p in cfg.profiles))


def ablation(cfg: config_mod.Config, full: dict, args, churn_heartbeat_s: float | None = None) -> list[dict]:
    """The same workload and fleet with each optimisation switched off in turn.

    A variant runs for at most `--variant-seconds`: some are so slow at 20,000 nodes (a full
    snapshot copy per cycle) that all the pods would take hours. Its throughput is then that
    of the pods bound in the time, and its row says how many were.
    """
    rows = [_row("full configuration", full, full)]
    for name, switch_off in ABLATIONS.items():
        variant = switch_off(cfg)
        doc = run(variant, args.nodes, args.profile, args.pods, args.workload, args.rate, args.seed,
                  # never settled early: a slow variant (a pass of cycles at a full snapshot
                  # copy each takes minutes) binds in bursts far apart
                  settle_s=args.variant_seconds, timeout_s=args.variant_seconds, quiet=args.quiet,
                  churn_heartbeat_s=churn_heartbeat_s)
        rows.append(_row(name, doc, full))
    return rows


def _row(name: str, doc: dict, full: dict) -> dict:
    tp = doc["throughput_pods_per_s"]["average"]
    if doc["timed_out"] or doc["scheduled"] < full["scheduled"]:
        # Stopped before it bound what the full configuration did: the pods bound over the
        # whole run, not over the short span between its first and last binding, which would
        # flatter it.
        tp = round(doc["scheduled"] / doc["elapsed_s"], 1) if doc["elapsed_s"] else 0.0
    base = full["throughput_pods_per_s"]["average"]
    return {"variant": name, "throughput": tp, "p99_ms": doc["e2e_latency_ms"]["p99"],
            "ratio": round(tp / base, 2) if base else None, "scheduled": doc["scheduled"],
            "verify_ok": doc["verify"]["ok"]}
