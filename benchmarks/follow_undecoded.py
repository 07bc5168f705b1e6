"""A shard's CPU to follow another shard's pods on Redis, their creations held undecoded or not.

    python -m benchmarks.follow_pending --pods 20000 --repeats 3 --json FILE

With two shards, half of all pods are the other shard's: this shard reads their creation
(pending, not dispatched here) and then their binding by the other shard, which it counts.
The writer creates `--pods` pods of the bench's mixed profile and binds each, all before the
reader reads; a shard's loop (shard.loop.ShardLoop owning what is dispatched to it, as the
server's, with none dispatched), listed before the writes, then follows them with its
informer in syncs of up to 10,000 events, as fast as it can. Its CPU (thread time) and wall
time over those syncs are measured for:

- `hold`: the shard as it is: each creation is held as its stored bytes
  (shard.intake.ShardIntake._holds) and dropped undecoded when the binding comes;
- `decode`: the same shard with its informer's take_undecoded removed: every creation
  decoded and kept as a dict until the binding (the code before).

The variants alternate within each repeat, each on its own key prefix of one embedded
Redis; medians over the repeats, and the ratio decode / hold of CPU per pod.
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid

from benchmarks.harness import write_json
from benchmarks.workloads import mixed
from common import config as config_mod
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import RedisStore
from common.tools.fleet import generate
from shard.intake import DispatchedPods
from shard.loop import ShardLoop

NODES = 200
_WRITE_CHUNK = 1000


def _write(store: RedisStore, pods: int) -> None:
    docs = mixed(pods, seed=1, nodes=NODES)
    for start in range(0, pods, _WRITE_CHUNK):
        chunk = docs[start:start + _WRITE_CHUNK]
        assert not store.create_many(chunk)
        keys = [f"bench/{d['metadata']['name']}" for d in chunk]
        store.bind_many([(k, f"kwok-node-{i % NODES}", None) for i, k in enumerate(keys, start)])


def measure(url: str, pods: int, hold: bool) -> dict:
    """One run: the reader's CPU and wall time over the syncs that bring every event."""
    store = RedisStore(url, prefix=f"pendingbench-{uuid.uuid4().hex[:8]}:")
    try:
        assert not store.create_many(generate(NODES, "mixed"))
        loop = ShardLoop(config_mod.validate({}), store, owner=DispatchedPods())
        loop.start()
        informer = loop.informer
        if not hold:
            informer.take_undecoded = None
        _write(store, pods)
        head = store.list("PriorityClass")[1]  # the last event written
        cpu0, wall0 = time.thread_time(), time.perf_counter()
        while informer.rv != head:
            informer.sync(0.0, max_events=10000)
        cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
        counted = sum(1 for key in loop.pods if loop.cache.counted(key) is not None)
        assert counted == pods and not loop.intake.unowned, f"counted {counted} of {pods}"
        return {"us_per_pod": 1e6 * cpu / pods, "pods_per_s": pods / wall}
    finally:
        store.close()


def run(pods: int, repeats: int) -> dict:
    rows: dict[str, list[dict]] = {"hold": [], "decode": []}
    with EmbeddedRedis() as server:
        for _ in range(repeats):
            rows["decode"].append(measure(server.url, pods, hold=False))
            rows["hold"].append(measure(server.url, pods, hold=True))
    out = {}
    for name, runs in rows.items():
        out[name] = {"us_per_pod": round(statistics.median(r["us_per_pod"] for r in runs), 2),
                     "pods_per_s": round(statistics.median(r["pods_per_s"] for r in runs)),
                     "runs_us_per_pod": [round(r["us_per_pod"], 2) for r in runs]}
    ratio = out["decode"]["us_per_pod"] / out["hold"]["us_per_pod"]
    return {"pods": pods, "repeats": repeats, "results": out, "cpu_ratio_decode_over_hold": round(ratio, 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=20000, help="pods written (created and bound: 2 events each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    doc = run(args.pods, args.repeats)
    for name, r in doc["results"].items():
        print(f"{name}: {r['us_per_pod']} us CPU per pod, {r['pods_per_s']} pods/s "
              f"(runs {r['runs_us_per_pod']})")
    print(f"CPU per pod, decode / hold: {doc['cpu_ratio_decode_over_hold']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
