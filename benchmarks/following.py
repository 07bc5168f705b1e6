"""What the benchmarks of a reader following the store share (follow_hint, follow_undecoded,
kube_watchers): the writer's pods, created and bound (and written Running) in chunks before
the reader reads, the CPU the reader's informer spends to catch up with them, and on the API
server the control plane and the writer's process."""
from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

from benchmarks.churn import running
from benchmarks.workloads import mixed
from common.store.redis_store import RedisStore

NODES = 200
_WRITE_CHUNK = 1000

#: The kube writer's process (python -c KUBE_WRITER KUBECONFIG PODS): the pods created, bound
#: and written Running (write_bound); prints the last pod's resourceVersion.
KUBE_WRITER = """
import sys
from benchmarks.following import write_bound
from common.store.kube_store import KubeStore
store = KubeStore(sys.argv[1])
write_bound(store, int(sys.argv[2]), run=True)
last = max(int(p["metadata"]["resourceVersion"]) for p in store.list("Pod")[0] if p["metadata"]["namespace"] == "bench")
print(last)
"""


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


@contextlib.contextmanager
def kube_plane():
    """The API server of benchmarks/kube_cluster.py without kwok, the fleet of NODES nodes and
    the writer's namespace made: yields the KubeCluster."""
    from benchmarks import kube_cluster
    from benchmarks.kube_vs import create_namespace
    from common.store.kube_store import KubeStore
    from common.tools.fleet import generate

    with tempfile.TemporaryDirectory(prefix="following-") as tmp:
        cluster = kube_cluster.KubeCluster(Path(tmp), kube_cluster.kube_bin_dir(), kwok=False).start()
        try:
            store = KubeStore(str(cluster.kubeconfig))
            assert not store.create_many(generate(NODES, "mixed"))
            create_namespace(store, "bench")
            store.close()
            yield cluster
        finally:
            cluster.stop()
