"""The binder's per-decision CPU against the forms before issue 31's binder work, in one run.

    python -m benchmarks.binder_commit --nodes 2000 --decisions 6000 --json FILE

- commit_path: a binder (BinderServer on an embedded Redis, its informer listed, its event
  writer running) gets `--decisions` decisions for pending pods in batches of four, as two
  shards send them at 1,000 pods/s, commits them and answers on a stream that a reader
  drains; the CPU time of the whole process (every thread, time.process_time) per 1,000
  decisions from the first batch to the last outcome (the partition leases renewed meanwhile). Optimised: the code as it is (commit
  workers taking their chunks from the queue, a chunk's Scheduled events handed to the
  writer at once, outcome metrics per reason and shard, what gathered on the stream sent as
  one message, the event writer lingering). Baseline: the same binder with those parts as
  they were (a feeder thread handing chunks to a thread pool, one `event` call and one
  metric increment per outcome, one message per reply, a writer that writes as soon as it
  wakes). Both variants alternate, `--repeat` times each, on fresh pods.
- now_rfc3339, micro_time: 10,000 timestamps formatted once per second against
  datetime's strftime each time (the strings must be equal).

commit_path is {"optimised_ms", "baseline_ms", "ratio"} (CPU ms per 1,000 decisions,
medians); the timestamps are ms per 10,000.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from binder.commits import Commits
from binder.server import BinderServer, Stream
from common import config as config_mod
from common.runtime.events import micro_time
from common.store.podstatus import now_rfc3339
from proto import shardsched_pb2 as pb

from . import harness

BATCH = 4  # decisions a shard sends at once at 1,000 pods/s


class PooledCommits(Commits):
    """The hand-over before: a feeder thread groups what waits into a chunk and hands it to
    a thread pool when a worker is free."""

    def feed_forever(self, beat=lambda: None) -> None:
        slots = threading.Semaphore(self.workers)
        with ThreadPoolExecutor(self.workers) as pool:
            while not self.stop.is_set():
                chunk = self.take()
                if not chunk:
                    continue
                slots.acquire()
                pool.submit(self._released, chunk, slots)

    def _released(self, chunk, slots) -> None:
        try:
            self._run(chunk)
        finally:
            slots.release()

    def _scheduled(self, reservations: list) -> None:
        for r in reservations:  # one event call each
            super()._scheduled([r])


class OneByOneStream(Stream):
    """A message for every reply."""

    def take(self):
        got = self.out.get()
        return None if got is None else pb.OutcomeBatch(outcomes=got)


class BaselineBinder(BinderServer):
    def _record(self, answered: list[tuple]) -> None:
        for outcome, shard in answered:  # one metric increment each
            super()._record([(outcome, shard)])


def _binder(cls, cfg, store, baseline: bool) -> BinderServer:
    binder = cls(cfg, store, 0, port=0, metrics_port=0)
    if baseline:
        binder.commits.__class__ = PooledCommits
        binder.status.linger_s = 0.0
    binder.informer.start()
    binder.partitions.holder = binder.group_commit.holder = binder.address  # as partitions_forever sets it
    binder.partitions.step(lambda p: False)
    return binder


def run_once(cfg, store, nodes: list[str], decisions: int, serial: int, baseline: bool) -> float:
    """CPU ms per 1,000 decisions of one binder committing `decisions` fresh pods."""
    scheduler = cfg.profiles[0].scheduler_name
    names = [f"p{serial}-{i}" for i in range(decisions)]
    store.create_many({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"namespace": "bench", "name": name, "uid": f"uid-{name}"},
                       "spec": {"schedulerName": scheduler, "containers": [
                           {"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
                      for name in names)
    binder = _binder(BaselineBinder if baseline else BinderServer, cfg, store, baseline)
    stop = binder.stop_event
    threads = [threading.Thread(target=t, daemon=True) for t in (binder.feed_forever, binder.write_status_forever,
                                                                 binder.partitions_forever)]
    for t in threads:
        t.start()
    stream = (OneByOneStream if baseline else Stream)("0")
    answered = threading.Event()

    def read():
        got = 0
        while got < decisions:
            got += len(stream.take().outcomes)
        answered.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    batches = [[pb.Decision(pod_key=f"bench/{name}", node=nodes[(serial + i) % len(nodes)], pod_uid=f"uid-{name}")
                for i, name in enumerate(names[start:start + BATCH], start)]
               for start in range(0, decisions, BATCH)]
    c0 = time.process_time()
    for batch in batches:
        binder.receive(batch, stream)
        time.sleep(BATCH / 1000)  # 1,000 decisions a second
    if not answered.wait(300):
        raise RuntimeError("the binder did not answer every decision")
    cpu = time.process_time() - c0
    stop.set()
    for t in threads:
        t.join(30)
    binder.commits.shutdown()
    binder.partitions.release_all()
    bound = binder.counters["bound"]
    if bound != decisions:
        raise RuntimeError(f"{bound} of {decisions} decisions bound: {dict(binder.counters)}")
    return 1e6 * cpu / decisions


def bench_commit_path(nodes: int, decisions: int, repeat: int, seed: int) -> dict:
    from common.store.embedded import EmbeddedRedis
    from common.store.redis_store import RedisStore
    from common.tools import fleet as fleet_mod

    cfg = config_mod.validate({})
    out: dict[bool, list[float]] = {False: [], True: []}
    with EmbeddedRedis() as server:
        store = RedisStore(server.url)
        fleet = fleet_mod.generate(nodes, "uniform", seed)
        store.create_many(fleet)
        names = [d["metadata"]["name"] for d in fleet if d.get("kind") == "Node"]
        for r in range(repeat):
            for baseline in (False, True):
                out[baseline].append(run_once(cfg, store, names, decisions, 2 * r + baseline, baseline))
        store.close()
    return harness.compare(out[False], out[True])


def bench_timestamps(repeat: int) -> dict:
    start = time.time()
    times = [start + i * 0.0001 for i in range(10_000)]  # one second's worth
    ns = [int(t * 1e9) for t in times]
    assert [micro_time(t) for t in times[:100]] == [
        datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") for t in times[:100]]
    micro = harness.compare(harness.time_ms(lambda: [micro_time(t) for t in times], repeat),
                            harness.time_ms(lambda: [datetime.fromtimestamp(t, timezone.utc).strftime(
                                "%Y-%m-%dT%H:%M:%S.%fZ") for t in times], repeat))
    now = harness.compare(harness.time_ms(lambda: [now_rfc3339(lambda: n) for n in ns], repeat),
                          harness.time_ms(lambda: [datetime.fromtimestamp(n // 10 ** 9, timezone.utc).strftime(
                              "%Y-%m-%dT%H:%M:%SZ") for n in ns], repeat))
    return {"now_rfc3339": now, "micro_time": micro}


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.set_defaults(nodes=2000)
    p.add_argument("--decisions", type=int, default=6000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    results = {"commit_path": bench_commit_path(args.nodes, args.decisions, args.repeat, args.seed),
               **bench_timestamps(args.repeat * 5)}
    return harness.report(f"binder, {args.decisions} decisions in batches of {BATCH} on {args.nodes} nodes "
                          "(medians, ratio = baseline / optimised)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
