"""shardsched's start on a real API server, alone and repeated: from its four processes' spawn
to their first binding, phase by phase, and the CPU they spent to get there.

    python -m benchmarks.kube_start [--nodes 1000] [--pods 5000] [--repeats 3] [--baseline-tree DIR] [--json FILE]
    python -m benchmarks.kube_start --imports N [--baseline-tree DIR] [--json FILE]

In `benchmarks.kube_vs --mode backlog` shardsched's start (imports, lists, leases, streams) is
a fifth of its run and one run gives one sample of it; this gives many, from one control
plane. It starts the control plane of benchmarks/kube_cluster.py once, the `mixed` fleet of
`--nodes` nodes and `--pods` pending pods of kube_vs's `mixed` workload for a scheduler no one
runs (every process lists them, as in a backlog; the binder keeps only its own scheduler's
and the shards and the dispatcher do not decode them further), then, `--repeats` times: one
pod for shardsched, the dispatcher, two shards and a binder spawned as kube_vs spawns them,
and the time until that pod is bound (the start's end), then each process's CPU (user +
system, read from /proc at that moment), then SIGTERM. Per trial it prints the first binding,
the CPU of each process and every process's phases from its log (kube_vs.startup: seconds
after the spawn).

`--baseline-tree DIR` (a `git archive` of main unpacked there, its .cache linked) runs the
same trials with DIR's code, alternating with this tree's, and prints the ratio of the
medians: the same-run baseline. The wall figures follow how busy the machine is; the CPU to
the first binding much less so. The JSON has {"load", "trials": [{"tree", "bound_s",
"cpu_s": {process: s}, "startup_s": {process: {phase: s}}}], "medians": {tree: {...}}}.

`--imports N`: no control plane; each role's imports alone (what `python -m ROLE` loads
before its config: its server module, the runner, the kube:// store), N fresh interpreters per
role and tree, alternated, each reporting the CPU (`time.process_time`) its imports took;
medians in ms per role, and the ratio against `--baseline-tree` when given. The JSON has
{"load", "imports_ms": {tree: {role: [ms...]}}, "medians": {tree: {role: ms}}, "ratio": {role: r}}.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import config as config_mod
from common.store.kube_store import KubeStore
from common.tools.local_cluster import LocalCluster

from . import harness, kube_cluster, kube_vs, processes
from .workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
#: The processes of one start, in kube_vs's order of spawning.
PROCESSES = (("binder", 0), ("shard", 0), ("shard", 1), ("dispatcher", 0))


def configured(kubeconfig: Path, work: Path, seed: int = 0) -> LocalCluster:
    """kube_vs's shardsched (2 shards, 1 binder, any free ports, no metrics) on `kubeconfig`;
    its `config_path` is the processes' config file, removed when it is collected."""
    cfg = config_mod.defaults().replace(
        store={"kubeconfig": str(kubeconfig)},
        shards={"count": len([p for p in PROCESSES if p[0] == "shard"]), "base_port": 0, "metrics_base_port": None},
        binders={"count": 1, "base_port": 0, "metrics_base_port": None},
        dispatcher={"port": 0, "metrics_port": None})
    return LocalCluster(cfg, f"kube://{kubeconfig}", seed, log_dir=str(work))


def spawn(tree: Path, config: str, kubeconfig: Path, logs: Path) -> dict[str, subprocess.Popen]:
    """The processes of PROCESSES with `tree`'s code, spawned as kube_vs spawns them, each
    logging into `logs` (made here)."""
    logs.mkdir()
    procs = {}
    for role, i in PROCESSES:
        with open(logs / f"{role}-{i}.log", "wb") as out:
            procs[f"{role} {i}"] = subprocess.Popen(
                [sys.executable, "-m", role, "--config", config, "--id", str(i), "--store", f"kube://{kubeconfig}"],
                cwd=tree, stdout=out, stderr=subprocess.STDOUT)
    return procs


def bound_after(store: KubeStore, key: str, since: float, timeout: float) -> float | None:
    """Seconds from `since` (time.time()) until the pod `key` is bound; None after `timeout`."""
    while time.time() - since < timeout:
        got = store.get("Pod", key)
        if got is not None and (got.get("spec") or {}).get("nodeName"):
            return time.time() - since
        time.sleep(0.01)
    return None


def stop(procs: dict[str, subprocess.Popen]) -> None:
    for p in procs.values():
        p.terminate()
    for p in procs.values():
        p.wait(30)


def trial(tree: Path, config: str, kubeconfig: Path, store: KubeStore, n: int, work: Path,
          timeout: float = 60.0) -> dict:
    """One start of the four processes with `tree`'s code, until the trial's pod is bound."""
    pod = WORKLOADS["basic"](1, 0, 1)[0]
    pod["metadata"].update(name=f"start-{n}", namespace="vs-start")
    pod["spec"]["schedulerName"] = kube_vs.SCHEDULER_NAME["shardsched"]
    kube_vs.create_all(store, [pod], 0)
    logs = work / f"trial-{n}"
    spawned = time.time()
    procs = spawn(tree, config, kubeconfig, logs)
    try:
        bound = bound_after(store, f"vs-start/start-{n}", spawned, timeout)
        cpu = {name: processes.cpu_seconds(p.pid) for name, p in procs.items()}
    finally:
        stop(procs)
        store.delete("Pod", f"vs-start/start-{n}")
    return {"tree": str(tree), "bound_s": None if bound is None else round(bound, 3), "cpu_s": cpu,
            "startup_s": kube_vs.startup(logs, spawned, procs)}


@contextlib.contextmanager
def control_plane(nodes: int, namespaces, prefix: str):
    """A control plane of benchmarks/kube_cluster.py in a temporary directory, with the `mixed`
    fleet of `nodes` nodes and `namespaces` made: yields (cluster, store, that directory);
    stopped at the end."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = Path(tmp)
        cluster = kube_cluster.KubeCluster(work, kube_cluster.kube_bin_dir()).start()
        try:
            cluster.create_fleet(nodes, "mixed", timeout=3600)
            store = KubeStore(str(cluster.kubeconfig))
            for ns in namespaces:
                kube_vs.create_namespace(store, ns)
            yield cluster, store, work
        finally:
            cluster.stop()


def alternated(trees: list[Path], repeats: int, run) -> list[dict]:
    """`run(tree, n)` for each tree in turn, `repeats` rounds (n counts the trials from 1):
    the same-run baseline first in each round. Each trial's result gets the load average
    then, and is printed as it comes."""
    trials, n = [], 0
    for _ in range(repeats):
        for tree in trees:
            n += 1
            t = run(tree, n)
            t["load"] = round(os.getloadavg()[0], 2)
            trials.append(t)
            print(json.dumps(t), flush=True)
    return trials


def medians(trials: list[dict]) -> dict:
    bound = [t["bound_s"] for t in trials if t["bound_s"] is not None]
    cpu = [sum(t["cpu_s"].values()) for t in trials]
    out = {"bound_s": statistics.median(bound) if bound else None, "cpu_s": round(statistics.median(cpu), 3),
           "trials": len(trials), "unbound": len(trials) - len(bound)}
    for name in trials[0]["cpu_s"]:
        out[f"cpu_s {name}"] = round(statistics.median(t["cpu_s"][name] for t in trials), 3)
    return out


#: What each role's process imports before it reads its config (its __main__ runs the program).
ROLE_IMPORTS = {role: f"{role}.server, common.runtime.runner, common.store.kube_store"
                for role in ("binder", "shard", "dispatcher")}


def import_cpu_ms(tree: Path, role: str) -> float:
    """The CPU one fresh interpreter spends importing `role`'s modules from `tree`."""
    code = ("import time; t = time.process_time(); import " + ROLE_IMPORTS[role]
            + "; print((time.process_time() - t) * 1000)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True)
    return float(out.stdout)


def imports(trees: list[Path], repeats: int) -> dict:
    """`--imports`: each role's import CPU, `repeats` times per tree, alternated."""
    got = {str(t): {role: [] for role in ROLE_IMPORTS} for t in trees}
    for _ in range(repeats):
        for role in ROLE_IMPORTS:
            for tree in trees:
                got[str(tree)][role].append(round(import_cpu_ms(tree, role), 1))
    meds = {tree: {role: round(statistics.median(ms), 1) for role, ms in roles.items()} for tree, roles in got.items()}
    doc = {"load": [round(x, 2) for x in os.getloadavg()], "imports_ms": got, "medians": meds}
    for tree, m in meds.items():
        print(f"{tree}: import CPU ms, median of {repeats}: " + ", ".join(f"{r} {v}" for r, v in m.items()), flush=True)
    if len(trees) == 2:
        base, ours = meds[str(trees[0])], meds[str(trees[1])]
        doc["ratio"] = {role: round(ours[role] / base[role], 3) for role in ROLE_IMPORTS}
        print(f"this tree / baseline: {doc['ratio']} (load {doc['load']})", flush=True)
    return doc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline-tree", help="a tree of the code to compare with (alternated, run first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--imports", type=int, metavar="N", help="only each role's import CPU, N times (no control plane)")
    args = p.parse_args(argv)
    trees = ([Path(args.baseline_tree).resolve()] if args.baseline_tree else []) + [ROOT]
    for tree in trees:
        kube_vs.compile_bytecode(tree)
    if args.imports:
        doc = imports(trees, args.imports)
        harness.write_json(args.json, doc)
        return 0
    with control_plane(args.nodes, ("vs-idle", "vs-start"), "kube-start-") as (cluster, store, work):
        pods = WORKLOADS["mixed"](args.pods, args.seed, args.nodes)
        for pod in pods:
            pod["metadata"]["namespace"] = "vs-idle"
            pod["spec"]["schedulerName"] = "no-one"
        kube_vs.create_all(store, pods, 0)
        local = configured(cluster.kubeconfig, work, args.seed)  # holds the config file
        trials = alternated(trees, args.repeats,
                            lambda tree, n: trial(tree, local.config_path, cluster.kubeconfig, store, n, work))
    doc = {"nodes": args.nodes, "pods": args.pods, "trials": trials,
           "medians": {str(tree): medians([t for t in trials if t["tree"] == str(tree)]) for tree in trees}}
    for tree, m in doc["medians"].items():
        print(f"{tree}: " + ", ".join(f"{k} {v}" for k, v in m.items()), flush=True)
    if args.baseline_tree:
        base, ours = doc["medians"][str(trees[0])], doc["medians"][str(ROOT)]
        doc["ratio"] = {k: round(ours[k] / base[k], 3) for k in ("bound_s", "cpu_s") if ours[k] and base[k]}
        print(f"this tree / baseline: {doc['ratio']}", flush=True)
    harness.write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
