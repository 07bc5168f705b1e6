"""What the dispatcher's process pays to send pods over a Dispatch stream, paced against not.

    python -m benchmarks.dispatch_link --pods 5000 --rate 1000 --repeats 3 --json FILE

A shard stand-in in another process serves the Dispatch stream (it counts the pods and
answers once they have all come). The dispatcher's side is its real link
(dispatcher.server.ShardLink over common.runtime.links.StreamLink); pods become ready at
`--rate` a second, a few each `--step-ms` (as the dispatcher's steps find them at a paced
rate), and are sent:

- `every_step`: each step's pods in one message at once (the dispatcher before
  DISPATCH_EVERY_S: a pod or two a message per shard);
- `paced`: the pods that come within dispatcher.server.DISPATCH_EVERY_S of the last message
  wait for the next one (the dispatcher's step as it is).

Measured: the sending process's CPU (user + system, every thread: gRPC's request thread and
its core's threads do most of the work of a message) per pod and per message; the two
variants alternate within each repeat, medians over the repeats, and the ratio
every_step / paced of CPU per pod.
"""
from __future__ import annotations

import argparse
import multiprocessing
import queue
import resource
import statistics
import time

from benchmarks.harness import write_json


def _serve(ports, totals) -> None:
    """The shard stand-in: counts the pods of a stream; a message revoking "END" asks for
    the count, which it reports (ShardReport.queued) and puts in `totals`."""
    from concurrent import futures

    import grpc

    from proto import shardsched_pb2 as pb
    from proto import shardsched_pb2_grpc as rpc

    class Shard(rpc.ShardServicer):
        def Dispatch(self, requests, context):
            n = 0
            for batch in requests:
                n += len(batch.pods)
                if list(batch.revoked) == ["END"]:
                    totals.put(n)
                    n = 0
                    yield pb.ShardReport(queued=n)

    server = grpc.server(futures.ThreadPoolExecutor(2))
    rpc.add_ShardServicer_to_server(Shard(), server)
    ports.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    server.wait_for_termination()


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(link, inbox, pods: int, rate: float, step_s: float, every_s: float, pb) -> dict:
    """One variant: pods ready at `rate`, a step every `step_s`; a message whenever at least
    `every_s` passed since the last one (0: every step with pods)."""
    per_step = max(1, round(rate * step_s))
    waiting, messages, made = [], 0, 0
    last = float("-inf")
    c0, t0 = _cpu_s(), time.perf_counter()
    while made < pods or waiting:
        n = min(per_step, pods - made)
        waiting += [pb.PendingPod(key=f"bench/p{made + i}", uid=f"uid-p{made + i}", resource_version="1700000000000-0")
                    for i in range(n)]
        made += n
        now = time.monotonic()
        if waiting and (now - last >= every_s or made >= pods):
            link.send(waiting, [])
            messages += 1
            waiting, last = [], now
        time.sleep(step_s)
    link.send([], ["END"])
    _, _, report = inbox.get(timeout=300)
    cpu, wall = _cpu_s() - c0, time.perf_counter() - t0
    return {"us_per_pod": 1e6 * cpu / pods, "us_per_message": 1e6 * cpu / messages,
            "pods_per_message": pods / messages, "wall_s": wall, "received": report is not None}


def run(pods: int, rate: float, step_ms: float, repeats: int) -> dict:
    from common.runtime.security import Security
    from dispatcher.server import DISPATCH_EVERY_S, ShardLink
    from proto import shardsched_pb2 as pb

    ctx = multiprocessing.get_context("spawn")
    ports, totals = ctx.Queue(), ctx.Queue()
    server = ctx.Process(target=_serve, args=(ports, totals), daemon=True)
    server.start()
    try:
        port = ports.get(timeout=60)
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        link = ShardLink("0", f"127.0.0.1:{port}", inbox, Security())
        measure(link, inbox, 200, rate, step_ms / 1000, 0.0, pb)  # connected and warm
        totals.get(timeout=60)
        variants = {"every_step": 0.0, "paced": DISPATCH_EVERY_S}
        rows: dict[str, list[dict]] = {name: [] for name in variants}
        for r in range(repeats):
            for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
                row = measure(link, inbox, pods, rate, step_ms / 1000, variants[name], pb)
                received = totals.get(timeout=60)
                assert received == pods, f"{name}: the shard received {received} of {pods} pods"
                rows[name].append(row)
        link.close()
    finally:
        server.kill()
    out = {}
    for name, runs in rows.items():
        out[name] = {k: round(statistics.median(r[k] for r in runs), 2)
                     for k in ("us_per_pod", "us_per_message", "pods_per_message")}
        out[name]["runs_us_per_pod"] = [round(r["us_per_pod"], 1) for r in runs]
    ratio = out["every_step"]["us_per_pod"] / out["paced"]["us_per_pod"]
    return {"pods": pods, "rate": rate, "step_ms": step_ms, "repeats": repeats, "dispatch_every_s": DISPATCH_EVERY_S,
            "load": _load(), "results": out, "cpu_ratio_every_step_over_paced": round(ratio, 2)}


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=5000, help="pods sent per variant and repeat")
    p.add_argument("--rate", type=float, default=1000.0, help="pods ready a second")
    p.add_argument("--step-ms", type=float, default=5.0, help="time between two steps (the watch's linger)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", help="write the results here too")
    args = p.parse_args(argv)
    doc = run(args.pods, args.rate, args.step_ms, args.repeats)
    for name, r in doc["results"].items():
        print(f"{name:10s}: {r['us_per_pod']:7.1f} us CPU per pod, {r['us_per_message']:7.1f} per message, "
              f"{r['pods_per_message']:5.1f} pods a message (runs {r['runs_us_per_pod']})")
    print(f"CPU per pod, every_step / paced: {doc['cpu_ratio_every_step_over_paced']}  (load {doc['load']})")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
