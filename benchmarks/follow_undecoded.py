"""Following pods' creations and bindings on Redis, undecoded where the reader can, against decoded.

    python -m benchmarks.follow_undecoded --pods 20000 --repeats 3 --json FILE

The writer creates `--pods` pods of the bench's mixed profile and binds each (two events a
pod), all before the reader reads. A reader listed before the writes then follows them with
its informer in syncs of up to 10,000 events, as fast as it can; its CPU (thread time) and
wall time over those syncs are measured, per pod, for two readers:

- `shard`: a shard's loop (shard.loop.ShardLoop owning what is dispatched to it, as the
  server's, none dispatched): with two shards, half of all pods are the other shard's, whose
  creation it reads (held as its stored bytes: shard.intake.ShardIntake._holds) and whose
  binding it counts;
- `binder`: a binder's view (binder/view.py): it parses every pending pod and takes each
  binding from the binding's patch (common.runtime.intake.bound_from_patch).

each as it is (`undecoded`) and with its informer's take_undecoded removed (`decoded`: every
event decoded, the code before). The variants alternate within each repeat, each on its own
key prefix of one embedded Redis; medians over the repeats, and the ratio decoded /
undecoded of CPU per pod.
"""
from __future__ import annotations

import argparse
import statistics
import uuid

from benchmarks.following import NODES, follow, write_bound
from benchmarks.harness import write_json
from benchmarks.workloads import SCHEDULER
from binder.view import BinderView
from common import config as config_mod
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import RedisStore
from common.tools.fleet import generate
from shard.intake import DispatchedPods
from shard.loop import ShardLoop


def _shard(store: RedisStore):
    loop = ShardLoop(config_mod.validate({}), store, owner=DispatchedPods())
    loop.start()
    return loop.informer, lambda: sum(1 for key in loop.pods if loop.cache.counted(key) is not None) \
        if not loop.intake.unowned else -1


def _binder(store: RedisStore):
    view = BinderView((SCHEDULER,))
    informer = view.intake.informer(store, linger_s=0.0)
    informer.start()
    return informer, lambda: sum(1 for _ in view.acc.counted_pods()) if not view.pending else -1


READERS = {"shard": _shard, "binder": _binder}


def measure(url: str, pods: int, reader: str, undecoded: bool) -> dict:
    """One run: the reader's CPU and wall time over the syncs that bring every event."""
    store = RedisStore(url, prefix=f"undecodedbench-{uuid.uuid4().hex[:8]}:")
    try:
        assert not store.create_many(generate(NODES, "mixed"))
        informer, counted = READERS[reader](store)
        if not undecoded:
            informer.take_undecoded = None
        write_bound(store, pods)
        cpu, wall = follow(store, informer)
        assert counted() == pods, f"{reader}: counted {counted()} of {pods}"
        return {"us_per_pod": 1e6 * cpu / pods, "pods_per_s": pods / wall}
    finally:
        store.close()


def run(pods: int, repeats: int) -> dict:
    variants = [(reader, undecoded) for reader in READERS for undecoded in (False, True)]
    rows: dict = {v: [] for v in variants}
    with EmbeddedRedis() as server:
        for _ in range(repeats):
            for reader, undecoded in variants:
                rows[(reader, undecoded)].append(measure(server.url, pods, reader, undecoded))
    out: dict = {}
    for (reader, undecoded), runs in rows.items():
        out.setdefault(reader, {})["undecoded" if undecoded else "decoded"] = {
            "us_per_pod": round(statistics.median(r["us_per_pod"] for r in runs), 2),
            "pods_per_s": round(statistics.median(r["pods_per_s"] for r in runs)),
            "runs_us_per_pod": [round(r["us_per_pod"], 2) for r in runs]}
    for reader, r in out.items():
        r["cpu_ratio_decoded_over_undecoded"] = round(r["decoded"]["us_per_pod"] / r["undecoded"]["us_per_pod"], 2)
    return {"pods": pods, "repeats": repeats, "results": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=20000, help="pods written (created and bound: 2 events each)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    doc = run(args.pods, args.repeats)
    for reader, r in doc["results"].items():
        for name in ("undecoded", "decoded"):
            v = r[name]
            print(f"{reader} {name}: {v['us_per_pod']} us CPU per pod, {v['pods_per_s']} pods/s "
                  f"(runs {v['runs_us_per_pod']})")
        print(f"{reader}: CPU per pod, decoded / undecoded: {r['cpu_ratio_decoded_over_undecoded']}")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
