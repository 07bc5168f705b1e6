"""How fast a shard or a binder gets from its start to ready over many running pods, by phase.

    python -m benchmarks.ready --nodes 20000 --running-pods 200000 --repeats 2 [--baseline-tree DIR]

A restarted shard must be back within a minute over a million running pods (issue 31), and
its start is its initial list: every pod listed, decoded, parsed and counted, then the heap
collected once and frozen (common.runtime.component.settle_heap). This fills an embedded Redis
once (the `mixed` fleet, then the running pods of benchmarks/running.py, as `bench
--running-pods` writes them), then starts each role's start-up code in a fresh interpreter
of its own, as `python -m shard|binder` runs it (the cyclic collector off while it lists):
the shard's loop (shard.loop.ShardLoop) or the binder's view and informer, on a RedisStore.
Each child times its phases:

* `import_s`: interpreter start to its modules imported and the role built;
* `list_s`: the informer's start, every kind listed and applied (the pods are most of it);
* `settle_s`: settle_heap (the heap frozen; before this work, a full collection first);
* `ready_s`: from the child's start (the parent's Popen) to the end of settle: what
  `bench`'s `processes.*.ready_s` measures but for serving and taking the lease;
* `cpu_s`: the child's CPU seconds (user + system) over list and settle.

and, in children of their own (the same list without what the role does with it): `fetch`,
the pods' pages read from Redis and not decoded, and `decode`, the pods' list as dicts
(`RedisStore.list_iter`), so list_s splits into round trips, decoding, and the role's parse
and insert. Pods/s = running pods / the phase's seconds.

`--baseline-tree DIR` runs the same children with DIR's code first on sys.path (e.g. a
`git archive` of main unpacked there), alternating with this tree's, and prints the ratio
of the medians: the same-run baseline. Prints a table; `--json FILE` writes
{"running_pods", "load", "runs": [{"tree", "role", ...phases}], "medians": {...}}.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

#: What a child runs, in the tree it is given (cwd first on sys.path): only interfaces both
#: trees have, so the baseline runs the same code around its own start-up path.
CHILD = r"""
import gc, json, os, sys, time
t0 = float(sys.argv[1]); role = sys.argv[2]; url = sys.argv[3]
from common import config as config_mod
from common.store import open_store
from common.runtime.component import settle_heap
cfg = config_mod.validate({})
store = open_store(url)
if role == "shard":
    from shard.loop import ShardLoop
    from shard.intake import DispatchedPods
    holder = ShardLoop(cfg, store, owner=DispatchedPods())
    informer = holder.informer
elif role == "binder":
    from binder.view import BinderView
    holder = BinderView([p.scheduler_name for p in cfg.profiles])
    informer = holder.intake.informer(store, None)
import common
out = {"import_s": time.time() - t0, "code": os.path.dirname(os.path.dirname(common.__file__))}
gc.disable()  # as common.runtime.runner does before the lists (freeze_before_list)
gc.freeze()
c0, t1 = time.process_time(), time.perf_counter()
if role in ("shard", "binder"):
    informer.start()
    t2 = time.perf_counter()
    settle_heap()
    out["list_s"] = t2 - t1
    out["settle_s"] = time.perf_counter() - t2
    out["ready_s"] = time.time() - t0
    out["skipped"] = informer.skipped + store.skipped_records
    out["pods"] = len(holder.pods) if role == "shard" else len(holder.acc.pod_node)  # kept, bound
elif role == "decode":
    objs, rv = store.list_iter("Pod")
    out["pods"] = sum(1 for _ in objs)
    out["list_s"] = time.perf_counter() - t1
else:  # fetch: the pages' round trips alone, the layout of common/store/redis_scripts.py
    r, prefix = store._r, store._prefix
    keys = list(r.hgetall(prefix + "st:Pod"))
    n = 0
    for i in range(0, len(keys), 2000):
        p = r.pipeline(transaction=True)
        p.hmget(prefix + "obj:Pod", keys[i:i + 2000]).hmget(prefix + "st:Pod", keys[i:i + 2000])
        n += len(p.execute()[0])
    out["pods"] = n
    out["list_s"] = time.perf_counter() - t1
out["cpu_s"] = time.process_time() - c0
print("READY " + json.dumps(out), flush=True)
"""

PHASES = ("import_s", "list_s", "settle_s", "ready_s", "cpu_s")


def fill(url: str, nodes: int, running_pods: int, seed: int) -> dict:
    """The `mixed` fleet and `running_pods` running pods written into the store at `url`."""
    from common.store import open_store
    from common.tools import fleet as fleet_mod
    from . import running
    from .e2e import create_all
    store = open_store(url)
    fleet = fleet_mod.generate(nodes, "mixed", seed)
    create_all(store, fleet)
    return running.fill(store, running_pods, fleet, seed)


def child(tree: str, role: str, url: str, timeout: float) -> dict:
    """One start-up of `role` with `tree`'s code, in a fresh interpreter."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=tree)
    t0 = time.time()
    done = subprocess.run([sys.executable, "-c", CHILD, repr(t0), role, url], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=timeout)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("READY ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"{role} in {tree} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    out = json.loads(line[6:])
    if os.path.realpath(out.pop("code")) != os.path.realpath(tree):
        raise RuntimeError(f"{role} did not run {tree}'s code")
    return out


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def run(nodes: int, running_pods: int, roles: list[str], repeats: int, trees: list[str],
        seed: int = 0, timeout: float = 1800.0, url: str | None = None) -> dict:
    """Fill once (unless `url` names a store filled already), then each role's start-up
    `repeats` times in each tree, the trees alternating."""
    from common.store.embedded import EmbeddedRedis
    runs = []
    with EmbeddedRedis() as server:
        filled = fill(server.url, nodes, running_pods, seed) if url is None else None
        for _ in range(repeats):
            for role in roles:
                for tree in trees:
                    before = load()
                    r = child(tree, role, url or server.url, timeout)
                    r.update(tree=tree, role=role, load=f"{before}; {load()}")
                    runs.append(r)
                    _print_run(r, running_pods)
    medians = {}
    for tree in trees:
        for role in roles:
            mine = [r for r in runs if r["tree"] == tree and r["role"] == role]
            medians[f"{role} {tree}"] = {p: round(statistics.median(r[p] for r in mine), 3)
                                         for p in PHASES if p in mine[0]}
    return {"running_pods": running_pods, "nodes": nodes, "fill": filled, "runs": runs, "medians": medians}


def _print_run(r: dict, n: int) -> None:
    phases = "  ".join(f"{p} {r[p]:7.2f}" for p in PHASES if p in r)
    rate = n / r["list_s"] if r.get("list_s") else 0
    print(f"{r['role']:7s} {r['tree']}: {phases}  list {rate:8,.0f} pods/s  "
          f"(ready {n / r['ready_s']:,.0f} pods/s)" if "ready_s" in r else
          f"{r['role']:7s} {r['tree']}: {phases}  {rate:8,.0f} pods/s", f" load {r['load']}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--running-pods", type=int, default=200000)
    ap.add_argument("--roles", default="fetch,decode,shard,binder",
                    help="comma-separated: shard, binder, and the list's phases alone: fetch, decode")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--baseline-tree", help="a tree of the code to compare with (its runs alternate with these)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--url", help="a store filled already with --running-pods pods (no fill)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [here] + ([os.path.abspath(args.baseline_tree)] if args.baseline_tree else [])
    out = run(args.nodes, args.running_pods, args.roles.split(","), args.repeats, trees, args.seed, url=args.url)
    print("medians (s):")
    for name, m in out["medians"].items():
        print(f"  {name}: " + ", ".join(f"{p} {v}" for p, v in m.items()))
    if args.baseline_tree:
        for role in args.roles.split(","):
            new, old = out["medians"][f"{role} {here}"], out["medians"][f"{role} {trees[1]}"]
            key = "ready_s" if "ready_s" in new else "list_s"
            print(f"  {role}: {key} baseline / this = {old[key] / new[key]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
