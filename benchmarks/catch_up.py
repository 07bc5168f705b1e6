"""What a restarted shard pays per event to catch up with what the cluster wrote during its list.

    python -m benchmarks.catch_up --nodes 2000 --running-pods 20000 --pods 20000 --repeats 3

A shard listing a million running pods takes a minute, and the cluster meanwhile writes
thousands of events a second, three per new pod with `--churn` (created pending, bound,
started). Before it takes its lease the shard applies them (shard.server.ShardServer.catch_up).
This fills an embedded Redis with the `mixed` fleet and `--running-pods` running pods, then per
repeat: two shards (shard.loop.ShardLoop on RedisStore) list it, `--pods` pods are written
as a busy cluster writes them (created pending, bound, each then Running: three events a
pod), and each shard applies them: `every` event in turn (ShardLoop.sync, what catch-up did
before) or each object's `latest` (ShardLoop.sync(latest=True), reads of
shard.server.CATCH_UP_READ events, as catch-up now reads them: superseded events left out
undecoded, the pods counted node by node), the order of the two alternating, the
cyclic collector off throughout as a shard's runner keeps it until its heap is settled. Prints each
one's thread CPU per event written (us) and the ratio of the medians; `--json FILE` writes
the runs.
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

MODES = ("every", "latest")


def _pods(n: int, nodes: list[dict], seed: int) -> list[dict]:
    """`n` pods shaped as the running ones (benchmarks.running), pending: no node, no status."""
    from . import running
    out = []
    for chunk in running.generate(n, nodes, seed + 1):
        for d in chunk:
            d["metadata"]["name"] = "late-" + d["metadata"]["name"]
            d["metadata"]["uid"] = "late-" + d["metadata"]["uid"]
            del d["spec"]["nodeName"]
            d["status"] = {"phase": "Pending"}
            out.append(d)
    return out


def _write(store, pods: list[dict], nodes: list[str], step: int = 2000) -> int:
    """Create, bind and start `pods` as a cluster does, a batch at a time; events written."""
    written = 0
    for i in range(0, len(pods), step):
        batch = pods[i:i + step]
        errors = store.create_many(batch)
        if errors:
            raise RuntimeError(f"refused: {errors[:3]}")
        keys = [f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in batch]
        refused = [r for r in store.bind_many([(k, nodes[(i + j) % len(nodes)], None) for j, k in enumerate(keys)]) if r]
        if refused:
            raise RuntimeError(f"bindings refused: {refused[:3]}")
        started = []
        for k in keys:
            d = store.get("Pod", k)
            d["status"] = {"phase": "Running", "startTime": d["metadata"].get("creationTimestamp")}
            started.append(d)
        failed = [r for r in store.update_status_many(started) if r]
        if failed:
            raise RuntimeError(f"status refused: {failed[:3]}")
        written += 3 * len(batch)
    return written


def _apply(loop, mode: str) -> tuple[float, int]:
    """Thread CPU seconds to apply everything there is, and the syncs' count."""
    from shard.server import CATCH_UP_READ
    c0, n = time.thread_time(), 0
    while True:
        got = (loop.sync(0.0, latest=True, max_events=CATCH_UP_READ) if mode == "latest" else loop.sync(0.0))
        n += got
        if not got:
            return time.thread_time() - c0, n


def run(nodes: int, running_pods: int, pods: int, repeats: int, seed: int = 0) -> dict:
    from common import config as config_mod
    from common.store.embedded import EmbeddedRedis
    from common.store.redis_store import RedisStore
    from common.tools import fleet as fleet_mod
    from shard.intake import DispatchedPods
    from shard.loop import ShardLoop
    from . import running
    from .e2e import create_all

    cfg = config_mod.validate({})
    runs = []
    with EmbeddedRedis() as server:
        store = RedisStore(server.url)
        fleet = fleet_mod.generate(nodes, "mixed", seed)
        create_all(store, fleet)
        node_docs = [d for d in fleet if d.get("kind") == "Node"]
        running.fill(store, running_pods, fleet, seed)
        names = [d["metadata"]["name"] for d in node_docs
                 if not (d.get("spec") or {}).get("taints") and not (d.get("spec") or {}).get("unschedulable")]
        for r in range(repeats):
            gc.collect()
            gc.disable()  # as common.runtime.runner keeps it through a shard's list and catch-up
            loops = {mode: ShardLoop(cfg, RedisStore(server.url), owner=DispatchedPods()) for mode in MODES}
            for loop in loops.values():
                loop.start()
            late = _pods(pods, node_docs, seed + r)
            written = _write(store, late, names)
            order = MODES if r % 2 == 0 else MODES[::-1]
            for mode in order:
                cpu, applied = _apply(loops[mode], mode)
                runs.append({"mode": mode, "events": written, "applied": applied, "cpu_s": round(cpu, 3),
                             "us_per_event": round(cpu / written * 1e6, 2), "load": _load()})
                print(f"{mode:6s} {written:,} events written, {applied:,} applied: {cpu:6.2f} CPU s, "
                      f"{cpu / written * 1e6:6.2f} us per event  load {_load()}", flush=True)
            states = [(sorted(lp.cache.pod_node.items()), sorted(lp.pods)) for lp in loops.values()]
            if states[0] != states[1]:
                raise RuntimeError("the two ways of catching up left different shards")
            for d in late:
                store.delete("Pod", f"{d['metadata']['namespace']}/{d['metadata']['name']}")
            del loops
            gc.enable()
    medians = {m: statistics.median(x["us_per_event"] for x in runs if x["mode"] == m) for m in MODES}
    print("median us per event: " + ", ".join(f"{m} {v}" for m, v in medians.items())
          + f"; every / latest = {medians['every'] / medians['latest']:.2f}")
    return {"nodes": nodes, "running_pods": running_pods, "pods": pods, "runs": runs, "medians": medians}


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--running-pods", type=int, default=20000)
    ap.add_argument("--pods", type=int, default=20000, help="pods written during the list (three events each)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = run(args.nodes, args.running_pods, args.pods, args.repeats, args.seed)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
