"""`bench --kill-shard-at S`: one shard killed with -9 in the middle of a run, restarted at
once (as a kubelet restarts a container that died), and timed until it schedules again.

Issue 31's target is about a large cluster: a restarted shard must list every running pod
and apply the events written meanwhile before it holds its lease, so the time back is the
time to relist and catch up. What the run shows besides: the other shards keep binding
meanwhile (the dispatcher moves the dead shard's pods to them as soon as its stream breaks),
the restarted shard is given pods from its first report on, and nothing is lost or bound
twice (the report's `verify` and `scheduled`, checked over the final store).
"""
from __future__ import annotations

import threading
import time

import grpc

from common.store import open_store

from . import harness
from .processes import cpu_seconds


class ShardKiller:
    """A thread that kills shard `index` `at_s` seconds after `start()`, starts it again and
    records when the new process holds the shard's lease (`ready_s`) and has run its first
    scheduling cycle (`scheduling_s`, None when the run ended before it was given a pod),
    both counted from the kill."""

    def __init__(self, cluster, at_s: float, index: int = 0, timeout_s: float = 600.0, meter=None):
        """`meter`: the run's CpuMeter, told of the replacement (the killed shard's CPU
        figure is then both processes')."""
        self.cluster = cluster
        self.meter = meter
        self.at_s = at_s
        self.index = index
        self.timeout_s = timeout_s
        self.report: dict = {"shard": str(index), "at_s": at_s, "killed": False,
                             "ready_s": None, "scheduling_s": None, "error": None}
        #: monotonic times of the kill and of the new process's first cycle (None: not yet)
        self.killed_at: float | None = None
        self.back_at: float | None = None
        self._stop = threading.Event()
        self._ending = threading.Event()  # the run is over: no more pods will come
        self._thread = threading.Thread(target=self._run, name="shard-killer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> dict:
        """The report; a shard already killed is waited for until it schedules again (or the
        timeout): the other shards may have bound every pod long before it is back."""
        self._ending.set()
        if not self.report["killed"]:
            self._stop.set()
        self._thread.join()
        return self.report

    def _run(self) -> None:
        if self._stop.wait(self.at_s):
            return
        try:
            self._kill_and_time()
        except Exception as e:  # reported, and the run goes on: its verify still counts
            self.report["error"] = f"{type(e).__name__}: {e}"

    def _kill_and_time(self) -> None:
        old = self.cluster.procs[("shard", self.index)].pid
        used_s = cpu_seconds(old)
        killed_at = self.killed_at = time.monotonic()
        self.cluster.kill("shard", self.index)
        self.report["killed"] = True
        self.cluster.start_one("shard", self.index)
        self.report["new_pid"] = self.cluster.procs[("shard", self.index)].pid
        if self.meter is not None:  # the old process's CPU in the measured window
            self.report["old_cpu_s"] = round(self.meter.restarted(f"shard-{self.index}", used_s,
                                                                  self.report["new_pid"]), 2)
        store = open_store(self.cluster.url)
        try:
            while not self._stop.is_set() and time.monotonic() - killed_at < self.timeout_s:
                since = time.monotonic() - killed_at
                reply = self._new_process_status(store, since)
                if reply is not None:
                    if self.report["ready_s"] is None:
                        self.report["ready_s"] = round(since, 2)
                    if reply.counters["cycles"] > 0:
                        self.report["scheduling_s"] = round(since, 2)
                        self.back_at = killed_at + since
                        break
                    if self._ending.is_set():  # back, but the run left it nothing to schedule
                        break
                time.sleep(0.2)
        finally:
            store.close()
        self.report["old_pid"] = old

    def _new_process_status(self, store, since_kill: float):
        """The Status of the process holding the shard's lease, if it is the new one (its
        uptime is shorter than the time since the kill; the dead one's lease lingers until it
        expires, naming an address nobody answers on)."""
        address = store.list_leases("shard").get(str(self.index))
        if not address:
            return None
        try:
            reply = self.cluster.status("shard", address)
        except grpc.RpcError:
            return None
        return reply if reply.uptime_seconds < since_kill else None


def latency_around(killer: ShardKiller, created_at: dict, bound_at: dict) -> dict:
    """Where the end-to-end latency's tail comes from: the pods created before the kill, from
    the kill until the new process's first cycle, and after it (each {pods, p50, p99, max}
    in ms), and the slowest pods as [created s from the kill, latency ms]."""
    windows: dict[str, list] = {"before": [], "until_back": [], "after_back": []}
    slowest = []
    back = killer.back_at if killer.back_at is not None else float("inf")
    for key, bound in bound_at.items():
        created = created_at.get(key)
        if created is None:
            continue
        ms = (bound - created) * 1000
        name = "before" if created < killer.killed_at else "until_back" if created < back else "after_back"
        windows[name].append(ms)
        slowest.append((ms, created - killer.killed_at))
    slowest.sort(reverse=True)
    return {**{name: {"pods": len(v), "p50": round(harness.percentile(v, 50), 1),
                      "p99": round(harness.percentile(v, 99), 1), "max": round(max(v), 1)} if v else {"pods": 0}
               for name, v in windows.items()},
            "slowest": [[round(at, 2), round(ms, 1)] for ms, at in slowest[:10]]}
