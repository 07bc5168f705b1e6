"""The fastest a scheduler could go on one API server: a binder with no scheduling in it.

    python -m benchmarks.ceiling --kubeconfig FILE [--scheduler-name ceiling] [--in-flight 128]

It does what every scheduler must do and little more: one watch of pods (after one list of
the nodes), and for each pending pod of `--scheduler-name`, a binding to the next node
round-robin that still has room for its requests and that the pod may use (taints, node
selector and required node affinity, so that `verify` holds). No scores, no preemption,
nothing across nodes. Its drain rate is what this API server on this machine can take from
a scheduler: benchmarks/kube_vs.py runs it as the `ceiling` side and reports each scheduler
as a fraction of it.

It binds as shardsched's binder does: BINDERS threads (binder.server's COMMIT_WORKERS), each
taking whatever bindings are waiting, up to `--in-flight`, as one KubeStore.bind_many
(common.store.kube_mux writes them and reads their answers from that thread). Until
2026-11-27 it bound one pod per thread from `--in-flight` threads, each binding costing it
about 3 x the CPU (benchmarks/kube_binds.py): ceilings measured before then are lower than
this one would have been on the same machine.
"""
from __future__ import annotations

import argparse
import queue
import signal
import threading

from common.model.objects import parse_node, parse_pod
from common.scheduling.predicates import node_matches, unschedulable_blocks, untolerated_taint
from common.model.resources import vsub
from common.store.kube_store import KubeStore


#: threads binding, each whatever is waiting at once (binder.server.COMMIT_WORKERS, not
#: imported: gRPC's import would count in the ceiling's start-up)
BINDERS = 4


class Room:
    """What is left on each node, handed out round-robin."""

    def __init__(self, nodes: list):
        self.nodes = nodes
        self.free = {n.name: n.allocatable for n in nodes}
        self.next = 0

    def take(self, pod) -> str | None:
        for step in range(len(self.nodes)):
            node = self.nodes[(self.next + step) % len(self.nodes)]
            left = vsub(self.free[node.name], pod.requests)
            if (min(left) >= 0 and node_matches(pod, node) and not unschedulable_blocks(pod, node)
                    and untolerated_taint(node.taints, pod.tolerations) is None):
                self.free[node.name] = left
                self.next = (self.next + step + 1) % len(self.nodes)
                return node.name
        return None


def run(store: KubeStore, scheduler_name: str, in_flight: int, stop: threading.Event) -> None:
    room = Room([parse_node(d) for d in store.list("Node")[0]])
    work: queue.SimpleQueue = queue.SimpleQueue()

    def bind_forever() -> None:
        while True:
            item = work.get()
            if item is None:
                return
            chunk = [item]
            while len(chunk) < in_flight:
                try:
                    item = work.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    work.put(None)  # another thread's
                    break
                chunk.append(item)
            store.bind_many([(key, node, uid) for key, uid, node in chunk])

    workers = [threading.Thread(target=bind_forever, daemon=True) for _ in range(BINDERS)]
    for w in workers:
        w.start()
    pods, rv = store.list("Pod")
    seen: set[str] = set()

    def offer(obj: dict) -> None:
        meta, spec = obj["metadata"], obj.get("spec") or {}
        key = f"{meta['namespace']}/{meta['name']}"
        if spec.get("nodeName") or spec.get("schedulerName") != scheduler_name or key in seen:
            return
        seen.add(key)
        node = room.take(parse_pod(obj))
        if node is not None:
            work.put((key, meta.get("uid"), node))

    for obj in pods:
        offer(obj)
    for ev in store.watch(rv, kinds=("Pod",), stop=stop, poll_timeout=0.2):
        if ev.type != "DELETED":
            offer(ev.obj)
    for _ in workers:
        work.put(None)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ceiling", description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--scheduler-name", default="ceiling")
    p.add_argument("--in-flight", type=int, default=128, help="bindings one thread takes as one bind_many (default 128)")
    args = p.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    store = KubeStore(args.kubeconfig, max_in_flight=args.in_flight)
    try:
        run(store, args.scheduler_name, args.in_flight, stop)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
