"""What a scheduler extender costs a scheduling cycle, against the same cycle without one.

    python -m benchmarks.extenders --nodes 5000 --json FILE

One cycle (snapshot update, filters, scoring, selection) for one pod on a mixed kwok fleet,
with one extender on this machine (filterVerb and prioritizeVerb; it keeps every node and
scores them all 0, after reading the request as a real extender must), sent whole Nodes
(`whole_nodes`) or node names (`node_names`, nodeCacheCapable). Baseline, in the same run on
the same cache: the same cycle with no extender. The extender's own work is a JSON decode and
encode in this process's HTTP server thread, so the figures are the client's cost (two round
trips per cycle, the documents built and parsed) plus a minimal server's.

Each item: {"median_ms", "p99_ms", "baseline_median_ms", "baseline_p99_ms", "ratio"} (ratio =
baseline median / median: below 1, the extender's cycle is slower), plus "nodes_sent" (the
feasible nodes the threshold gave the extender per cycle).
"""
from __future__ import annotations

import http.server
import json
import statistics
import threading
import time

from common import config
from common.scheduling.extenders import build
from shard.extenders import ShardExtenders
from shard.scheduler import Scheduler

from . import harness
from .fill import fleet_cache, template_pod


class _Extender(http.server.BaseHTTPRequestHandler):
    """Keeps every node it is sent and scores each 0."""

    def do_POST(self):
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        names = args.get("NodeNames")
        if names is None:
            names = [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or ()]
        if self.path.endswith("/filter"):
            answer = {"NodeNames": names} if args.get("NodeNames") is not None else {"Nodes": args["Nodes"]}
        else:
            answer = [{"Host": n, "Score": 0} for n in names]
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def scheduler(cache, seed: int, url: str | None, cache_capable: bool = False) -> Scheduler:
    extenders = [] if url is None else [{"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize",
                                          "weight": 1, "nodeCacheCapable": cache_capable}]
    cfg = config.defaults().replace(extenders=tuple(config.ExtenderConfig.of(e) for e in extenders))
    s = Scheduler(cfg, cache, seed=seed, extenders=ShardExtenders(build(cfg.extenders)))
    s.refresh()
    return s


def measure(s: Scheduler, pod, repeat: int, warmup: int = 3) -> tuple[list[float], int]:
    """Cycle times (ms), and the feasible nodes of the last cycle."""
    result = None

    def one():
        nonlocal result
        s.refresh()
        result = s.schedule(pod)
        assert result.scheduled
    for _ in range(warmup):
        one()
    return harness.time_ms(one, repeat), result.feasible


def run(args) -> dict:
    t = time.perf_counter()
    cache = fleet_cache(args.nodes, args.pods_per_node, args.seed)
    print(f"filled {args.nodes} nodes x {args.pods_per_node} pods in {time.perf_counter() - t:.1f} s")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Extender)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/ext"
    pod = template_pod(100, 500)
    try:
        plain = scheduler(cache, args.seed, None)
        results = {}
        for case, cache_capable in (("whole_nodes", False), ("node_names", True)):
            samples, sent = measure(scheduler(cache, args.seed, url, cache_capable), pod, args.repeat)
            baseline, _ = measure(plain, pod, args.repeat)
            results[case] = {**harness.latency(samples, baseline), "nodes_sent": sent,
                             "ratio": round(statistics.median(baseline) / statistics.median(samples), 3)}
        return results
    finally:
        server.shutdown()
        server.server_close()


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--repeat", type=int, default=200)
    args = p.parse_args(argv)
    return harness.report(f"scheduling cycle with one local extender, {args.nodes} mixed nodes (ms; ratio = "
                          "no-extender median / median)", run(args), args.json)


if __name__ == "__main__":
    raise SystemExit(main())
