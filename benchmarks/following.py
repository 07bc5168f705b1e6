"""What the benchmarks of a reader following the store share (follow_hint, follow_undecoded):
the writer's pods, created and bound (and written Running) in chunks before the reader reads,
and the CPU the reader's informer spends to catch up with them."""
from __future__ import annotations

import time

from benchmarks.churn import running
from benchmarks.workloads import mixed
from common.store.redis_store import RedisStore

NODES = 200
_WRITE_CHUNK = 1000


def write_bound(store: RedisStore, pods: int, run: bool = False) -> None:
    """`pods` pods of the bench's mixed profile created and bound on the fleet's NODES nodes,
    a chunk at a time, and with `run` written Running as kwok does (benchmarks.churn.running):
    two events a pod, or three."""
    docs = mixed(pods, seed=1, nodes=NODES)
    for start in range(0, pods, _WRITE_CHUNK):
        chunk = docs[start:start + _WRITE_CHUNK]
        assert not store.create_many(chunk)
        keys = [f"bench/{d['metadata']['name']}" for d in chunk]
        store.bind_many([(k, f"kwok-node-{i % NODES}", None) for i, k in enumerate(keys, start)])
        if run:
            when = "2026-01-01T00:00:00Z"
            store.update_status_many([running(store.get("Pod", k), when, f"10.1.{i // 250 % 250}.{i % 250}")
                                      for i, k in enumerate(keys, start)])


def follow(store: RedisStore, informer) -> tuple[float, float]:
    """The thread CPU and wall seconds `informer` spends in syncs of up to 10,000 events, as
    fast as it can, until it has read the last event written to `store`."""
    head = store.list("PriorityClass")[1]  # the last event written
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    while informer.rv != head:
        informer.sync(0.0, max_events=10000)
    return time.thread_time() - cpu0, time.perf_counter() - wall0
