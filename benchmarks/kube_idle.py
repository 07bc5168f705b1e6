"""What shardsched's processes cost when there is nothing to schedule, on a real API server.

    python -m benchmarks.kube_idle [--nodes 1000] [--seconds 30] [--repeats 2] [--baseline-tree DIR] [--json FILE]

In the 200 pods/s stream of `benchmarks.kube_vs` a process's idle cost is paid for every
second of the run whatever it schedules, so it shows in the CPU per pod. This starts the
control plane of benchmarks/kube_cluster.py once with the `mixed` fleet of `--nodes` nodes,
then, `--repeats` times per tree: the four processes as benchmarks/kube_start.py spawns them,
one pod bound (they have listed and run), a second of grace, then `--seconds` of nothing: the
CPU of each process (share of a core) and of each of its threads, with the thread's voluntary
context switches per second (its wake-ups), read from /proc; then SIGTERM.

`--baseline-tree DIR` (main's checkout, run read-only) alternates DIR's code with this tree's,
baseline first, and prints the ratio of the medians of the four processes' cores together.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common.store.kube_store import KubeStore

from . import harness, kube_start, kube_vs
from .workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict[int, tuple[float, int]]:
    """tid -> (CPU seconds so far, voluntary context switches so far) of each thread of `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                switches = next(int(line.split()[1]) for line in fh if line.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration):
            continue
        out[int(tid)] = ((int(fields[11]) + int(fields[12])) / TICK, switches)
    return out


def thread_names(pid: int) -> dict[int, str]:
    """tid -> the Python thread's name, from `py-spy dump` where it is installed (beside this
    interpreter or on PATH; else empty: the threads go by their ids)."""
    spy = Path(sys.executable).with_name("py-spy")
    spy = str(spy) if spy.exists() else shutil.which("py-spy")
    if spy is None:
        return {}
    text = subprocess.run([spy, "dump", "--nonblocking", "--pid", str(pid)], capture_output=True,
                          text=True, timeout=60).stdout
    out = {}
    for line in text.splitlines():
        # Thread 12345 (idle): "MainThread"  /  Thread 0x7f.. (active): "name"
        if line.startswith("Thread "):
            parts = line.split()
            try:
                tid = int(parts[1], 0)
            except ValueError:
                continue
            out[tid] = line.split(":", 1)[1].strip().strip('"') if ":" in line else "?"
    return out


def trial(tree: Path, config: str, kubeconfig: Path, store: KubeStore, n: int, work: Path,
          seconds: float, timeout: float = 120.0) -> dict:
    pod = WORKLOADS["basic"](1, 0, 1)[0]
    pod["metadata"].update(name=f"idle-{n}", namespace="vs-idle")
    pod["spec"]["schedulerName"] = kube_vs.SCHEDULER_NAME["shardsched"]
    kube_vs.create_all(store, [pod], 0)
    procs = kube_start.spawn(tree, config, kubeconfig, work / f"trial-{n}")
    try:
        if kube_start.bound_after(store, f"vs-idle/idle-{n}", time.time(), timeout) is None:
            raise RuntimeError(f"trial {n}: the pod was not bound within {timeout} s")
        time.sleep(1.0)
        before = {name: threads(p.pid) for name, p in procs.items()}
        t0 = time.monotonic()
        time.sleep(seconds)
        after = {name: threads(p.pid) for name, p in procs.items()}
        wall = time.monotonic() - t0
        names = {name: thread_names(p.pid) for name, p in procs.items()}
    finally:
        kube_start.stop(procs)
        store.delete("Pod", f"vs-idle/idle-{n}")
    cores, per_thread = {}, {}
    for name in procs:
        rows = []
        for tid, (cpu, sw) in after[name].items():
            cpu0, sw0 = before[name].get(tid, (0.0, 0))
            rows.append((names[name].get(tid, str(tid)), round((cpu - cpu0) / wall, 4), round((sw - sw0) / wall, 1)))
        rows.sort(key=lambda r: (-r[1], -r[2]))
        cores[name] = round(sum(r[1] for r in rows), 4)
        per_thread[name] = [r for r in rows if r[1] or r[2]]
    return {"tree": str(tree), "cores": cores,
            "all_cores": round(sum(cores.values()), 4), "threads": per_thread}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--baseline-tree", help="a tree of the code to compare with (alternated, run first)")
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args(argv)
    trees = ([Path(args.baseline_tree).resolve()] if args.baseline_tree else []) + [ROOT]
    with kube_start.control_plane(args.nodes, ("vs-idle",), "kube-idle-") as (cluster, store, work):
        local = kube_start.configured(cluster.kubeconfig, work)  # holds the config file
        trials = kube_start.alternated(
            trees, args.repeats,
            lambda tree, n: trial(tree, local.config_path, cluster.kubeconfig, store, n, work, args.seconds))
    medians = {str(tree): statistics.median(t["all_cores"] for t in trials if t["tree"] == str(tree))
               for tree in trees}
    doc = {"nodes": args.nodes, "seconds": args.seconds, "trials": trials, "median_cores": medians}
    print(f"idle cores, the four processes together (median): {medians}", flush=True)
    if args.baseline_tree:
        base = medians[str(trees[0])]
        doc["ratio"] = round(medians[str(ROOT)] / base, 3) if base else None
        print(f"this tree / baseline: {doc['ratio']}", flush=True)
    harness.write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
