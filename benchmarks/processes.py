"""Each process's start-to-ready time and memory, for `shardsched bench` (the `processes`
figures of its report).

* `ready_s`: from the process being started (its `Popen`) to its lease first seen in the
  store. A dispatcher, shard or binder takes its lease only once its initial lists are
  loaded and it serves (`Component.start`), so this is the time to be ready to work, with
  whatever the store holds then (with `--running-pods`, all of them).
* `peak_rss_mb`: VmHWM from /proc/PID/status, the process's peak resident set, read at the
  end of the run (before it is stopped).
* `bytes_per_running_pod`: what the running pods cost a process. The issue defines it as
  (peak RSS after the fill - RSS of the same process on the same fleet with no pods) /
  running pods, and the bench measures both sides so:
  - the baseline: before the running pods are written, the whole stack is started on the
    fleet alone (nodes only), and once every process is ready each one's VmHWM is read (its
    peak so far: the list of the nodes and everything it builds from them); the stack is
    then stopped;
  - the measured side: after the fill, the stack that is measured is started; once every
    process is ready (it has listed the running pods) and before any of the bench's pods
    is created, each one's VmHWM is read again.
  The difference divided by the running pods is the figure. Both readings are peaks at
  the same point of a process's life (ready), on the same fleet and config, so the
  transient of the initial list counts on both sides and the pods the bench then creates
  do not count at all (they would be charged to the running pods otherwise). Starting a
  stack once more costs the run a few seconds; reading the baseline from processes that
  then watch the pods come in would have measured a different thing (pods arriving one
  event at a time, not a list), and the ready time would not include listing them.
* `cpu_s` / `cpu_ms_per_pod`: CPU seconds (user + system, /proc/PID/stat) the process
  used while the bench's pods were created and scheduled, and that per pod scheduled; the
  report's `cpu` gives the same for the store and the bench itself (its pod creation,
  its watch of the bindings, the churn writer), which share the machine's cores with the
  scheduler, and the whole machine's busy cores over that window.
* `gc`: the cyclic garbage collector's full (generation 2) collections, from each
  process's Status counters (common.runtime.gcstats) at the end of the run:
  `gen2_collections` and `gen2_pause_max_ms` / `gen2_pause_total_ms` from its start
  (the initial list's included), and the same `..._ready` after it was ready (its heap
  frozen then: common.runtime.component.settle_heap).
"""
from __future__ import annotations

import os
import time

from common.tools.local_cluster import ROLES, LocalCluster
from common.store import open_store

MB = 1024 * 1024


def memory(pid: int) -> dict[str, int] | None:
    """{"VmHWM": bytes, "VmRSS": bytes} of a live process; None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            out = {}
            for line in fh:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    key, value = line.split(":", 1)
                    out[key] = int(value.split()[0]) * 1024  # kB
            return out
    except (FileNotFoundError, ProcessLookupError):
        return None


def name(role: str, index: int) -> str:
    return f"{role}-{index}"


def pids(cluster: LocalCluster) -> dict[str, int]:
    """Each running process's pid, by "<role>-<id>"."""
    return {name(role, i): proc.pid for (role, i), proc in sorted(cluster.procs.items()) if proc.poll() is None}


def sample(cluster: LocalCluster) -> dict[str, dict[str, int]]:
    """Each running process's memory now, by "<role>-<id>"."""
    out = {}
    for (role, i), proc in sorted(cluster.procs.items()):
        m = memory(proc.pid) if proc.poll() is None else None
        if m is not None:
            out[name(role, i)] = m
    return out


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    return _stat_cpu(f"/proc/{pid}/stat")


def thread_cpu_seconds(native_id: int) -> float:
    """CPU seconds one thread of this process has used so far (`threading.Thread.native_id`;
    /proc/<tid>/stat would sum the whole process's threads)."""
    return _stat_cpu(f"/proc/self/task/{native_id}/stat")


def _stat_cpu(path: str) -> float:
    try:
        with open(path) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    return sum(cpu) - cpu[3] - cpu[4], sum(cpu)  # busy, total (idle and iowait count as idle)


class CpuMeter:
    """CPU each named process used between start() and stop(): seconds, and the share of one
    core over the wall time."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.cpu0 = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.machine0 = _machine_busy()

    def restarted(self, name: str, used_s: float, new_pid: int) -> float:
        """`name`'s process, which had used `used_s` CPU seconds in all when it was killed,
        was replaced by `new_pid`: the old one's share of the window is kept and the new one
        counted from its start (its start-up is the restart's cost). Without it the figure
        was the new process's CPU less the old one's at start(): negative after a kill.
        Returns the old process's CPU seconds in the window."""
        share = used_s - self.cpu0[name]
        self.cpu0[name] = -share
        self.pids[name] = new_pid
        return share

    def stop(self) -> tuple[dict, dict]:
        """(cores: name -> share of one core, seconds: name -> CPU seconds)."""
        wall = time.monotonic() - self.t0
        seconds = {name: cpu_seconds(pid) - self.cpu0[name] for name, pid in self.pids.items()}
        cores = {name: round(s / wall, 2) for name, s in seconds.items()}
        busy, total = (b - a for a, b in zip(self.machine0, _machine_busy()))
        machine = os.cpu_count() * busy / total if total else 0.0
        cores["other processes"] = round(machine - sum(cores.values()), 2)
        cores["whole machine"] = round(machine, 2)
        return cores, seconds


def start_timed(cluster: LocalCluster, timeout: float) -> tuple[dict, dict[str, float]]:
    """Start every process of `cluster` (as `LocalCluster.start`) and wait until it is
    ready; returns (the leases as `wait_ready` gives them, each process's ready_s)."""
    started: dict[tuple[str, str], float] = {}
    for role in ROLES:
        for i in range(cluster.counts()[role]):
            cluster.start_one(role, i)
            started[(role, str(i))] = time.monotonic()
    ready: dict[str, float] = {}
    store = open_store(cluster.url)
    try:
        deadline = time.monotonic() + timeout
        while len(ready) < len(started):
            now = time.monotonic()
            for role in ROLES:
                for id_ in store.list_leases(role):
                    key = f"{role}-{id_}"
                    if (role, id_) in started and key not in ready:
                        ready[key] = round(now - started[(role, id_)], 2)
            cluster.check_running()
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes not ready after {timeout} s (ready: {sorted(ready)})")
            time.sleep(0.1)
    finally:
        store.close()
    return cluster.wait_ready(max(10.0, deadline - time.monotonic())), ready


def baseline(cfg: dict, url: str, seed: int, timeout: float) -> dict[str, int]:
    """Each process's VmHWM (bytes) once ready on the store as it is now (the fleet alone),
    by "<role>-<id>"; the stack is stopped before this returns."""
    cluster = LocalCluster(cfg, url, seed)
    try:
        start_timed(cluster, timeout)
        return {k: m["VmHWM"] for k, m in sample(cluster).items()}
    finally:
        cluster.stop()


def gc_counters(cluster: LocalCluster, leases: dict) -> dict[str, dict]:
    """Each process's gc_* Status counters now, by "<role>-<id>" (a process that does not
    answer is left out)."""
    out = {}
    for role in ("dispatcher", "shard", "binder"):
        for id_, address in sorted(leases.get(role, {}).items()):
            try:
                counters = cluster.status(role, address).counters
            except Exception:
                continue
            out[f"{role}-{id_}"] = {k: v for k, v in counters.items() if k.startswith("gc_")}
    return out


def _gc_row(counters: dict) -> dict:
    row = {}
    for suffix in ("", "_ready"):
        row[f"gen2_collections{suffix}"] = counters.get(f"gc_gen2_collections{suffix}", 0)
        row[f"gen2_pause_max_ms{suffix}"] = round(counters.get(f"gc_gen2_pause_max_us{suffix}", 0) / 1000, 1)
        row[f"gen2_pause_total_ms{suffix}"] = round(counters.get(f"gc_gen2_pause_total_us{suffix}", 0) / 1000, 1)
    return row


def _cpu(seconds: float, scheduled: int) -> dict:
    return {"cpu_s": round(seconds, 1),
            "cpu_ms_per_pod": round(1000 * seconds / scheduled, 3) if scheduled else None}


def cpu_figures(seconds: dict[str, float], cores: dict[str, float], scheduled: int) -> dict:
    """The report's `cpu`: what the store, the bench itself, its churn writer and claim controller used while
    the pods were scheduled (the scheduler's processes are in `processes`), and the whole
    machine's busy cores over that window."""
    out = {k: _cpu(v, scheduled) for k, v in seconds.items() if k in ("store", "bench", "churn", "claims")}
    out["whole_machine_cores"] = cores.get("whole machine")
    return out


def figures(ready: dict[str, float], at_ready: dict, at_end: dict, empty: dict | None,
            running_pods: int, gc: dict | None = None, cpu_s: dict | None = None,
            scheduled: int = 0) -> dict[str, dict]:
    """The report's `processes`: {"<role>-<id>": {ready_s, peak_rss_mb, bytes_per_running_pod,
    ...}}; bytes_per_running_pod is None without running pods or a baseline."""
    out = {}
    order = ("dispatcher", "shard", "binder")
    for key in sorted(ready, key=lambda k: (order.index(k.rsplit("-", 1)[0]), int(k.rsplit("-", 1)[1]))):
        end = at_end.get(key) or at_ready.get(key) or {}
        hwm_ready = (at_ready.get(key) or {}).get("VmHWM")
        row = {"ready_s": ready[key],
               "peak_rss_mb": round(end["VmHWM"] / MB, 1) if end else None,
               "bytes_per_running_pod": None}
        if hwm_ready is not None:
            row["rss_ready_mb"] = round(hwm_ready / MB, 1)
            # what it holds then (VmRSS), against that peak: the initial list's transient
            row["vmrss_ready_mb"] = round(at_ready[key]["VmRSS"] / MB, 1)
        if empty and key in empty:
            row["empty_fleet_rss_mb"] = round(empty[key] / MB, 1)
            if running_pods and hwm_ready is not None:
                row["bytes_per_running_pod"] = round((hwm_ready - empty[key]) / running_pods)
        if cpu_s and key in cpu_s:
            row.update(_cpu(cpu_s[key], scheduled))
        if gc and key in gc:
            row["gc"] = _gc_row(gc[key])
        out[key] = row
    return out
