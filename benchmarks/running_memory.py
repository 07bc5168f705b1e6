"""What a running pod costs a shard and a binder in objects, by where they were allocated.

    python -m benchmarks.running_memory --nodes 5000 --running-pods 50000

`bench --running-pods` measures each process's RSS per running pod; this finds what makes
it up. It builds, in this process, a shard's loop and a binder's view from the same events
their informers apply (the `--profile mixed` fleet, then the fill of benchmarks/running.py,
every pod ADDED), and with tracemalloc reports the bytes per running pod each one holds
after the pods, grouped by the source line that allocated them (the Pod object, its
strings, the splay tree, the dicts that count it...). Only what outlives the pods' arrival
is counted: tracemalloc snapshots before and after, with the fleet already applied.

Prints one table per role and, with `--json FILE`, {"shard": {...}, "binder": {...}}, each
{"bytes_per_pod", "by_line": [[file:line, bytes per pod], ...]}.
"""
from __future__ import annotations

import argparse
import gc
import json
import linecache
import subprocess
import sys
import tracemalloc

from common import config as config_mod
from common.tools.fleet import generate as generate_fleet

from . import running


def _pods(nodes: list[dict], n: int, seed: int):
    """The fill's pods, each with its own resourceVersion as the embedded Redis gives them."""
    serial = 0
    for chunk in running.generate(n, nodes, seed):
        for pod in chunk:
            serial += 1
            pod["metadata"]["resourceVersion"] = f"{1764000000000 + serial // 7}-{serial % 7}"
            yield pod


def _shard(cfg):
    from common.store.memory import MemoryStore
    from shard.loop import ShardLoop
    loop = ShardLoop(cfg, MemoryStore())
    return loop, lambda kind, obj: loop.apply("ADDED", kind, obj)


def _binder(cfg):
    from binder.view import BinderView
    view = BinderView([p.scheduler_name for p in cfg.profiles])
    return view, lambda kind, obj: view.apply("ADDED", kind, obj)


def measure(role: str, nodes: list[dict], n: int, seed: int = 0, top: int = 15) -> dict:
    """Bytes per running pod that `role` ("shard" or "binder") keeps, in all and by line."""
    cfg = config_mod.validate({})
    holder, apply = (_shard if role == "shard" else _binder)(cfg)
    for node in nodes:
        apply("Node", node)
    gc.collect()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    for pod in _pods(nodes, n, seed):
        apply("Pod", pod)
        # (the manifest itself is dropped here, as an informer drops each event's document)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = after.compare_to(before, "lineno")
    total = sum(s.size_diff for s in stats)
    by_line = []
    for s in stats[:top]:
        frame = s.traceback[0]
        where = f"{frame.filename.rsplit('/', 2)[-2]}/{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
        code = linecache.getline(frame.filename, frame.lineno).strip()[:60]
        by_line.append([where, round(s.size_diff / n, 1), code])
    del holder
    return {"bytes_per_pod": round(total / n, 1), "by_line": by_line}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--running-pods", type=int, default=50000)
    ap.add_argument("--roles", default="shard,binder")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    roles = args.roles.split(",")
    if len(roles) > 1:  # one process each: the parse's memo and shared values start empty, as in a role
        out = {}
        for role in roles:
            cmd = [sys.executable, "-m", "benchmarks.running_memory", "--nodes", str(args.nodes),
                   "--running-pods", str(args.running_pods), "--roles", role, "--top", str(args.top),
                   "--json", "/dev/stdout"]
            text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            out[role] = json.loads(text[text.index("{"):])[role]
            _print(role, out[role])
    else:
        nodes = generate_fleet(args.nodes, "mixed")
        out = {roles[0]: measure(roles[0], nodes, args.running_pods, top=args.top)}
        if args.json != "/dev/stdout":
            _print(roles[0], out[roles[0]])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def _print(role: str, r: dict) -> None:
    print(f"{role}: {r['bytes_per_pod']:.0f} bytes per running pod (tracemalloc)")
    for where, size, code in r["by_line"]:
        print(f"  {size:8.1f}  {where:40s} {code}")


if __name__ == "__main__":
    raise SystemExit(main())
