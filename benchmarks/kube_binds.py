"""The caller's CPU per binding on a real API server: kube://'s bind_many against its pool's threads.

    python -m benchmarks.kube_binds [--pods 2000] [--batch 64] [--repeats 3] [--json FILE]
    python -m benchmarks.kube_binds --batch 1 [--pods 400] ...

One control plane of benchmarks/kube_cluster.py (`make kube-bins` builds it) with a small
kwok fleet. Each repeat creates `--pods` pending pods twice over and binds one set each way,
`--batch` bindings per call, alternating which goes first:

- `optimised`: KubeStore.bind_many, every request written and every answer read by the
  calling thread (common.store.kube_mux);
- `baseline`: the same bindings as bind_many sent them before, one per thread of the
  store's pool (`KubeStore._in_parallel` over `KubeStore._bind`, still the path of a single
  binding and of a kubeconfig with a proxy).

With `--batch 1` (a stream's bindings, one pod at a time) the two ways are instead:

- `optimised`: bind_many of one binding as it is: the calling thread writes the request and
  reads the answer itself (common.store.kube_mux.run_one, the path of every write);
- `baseline`: the same request through http.client on a connection of the same pool, as
  every single request went before (`_http_client_send`, reproduced here).

Measured: this process's CPU (user + system, TLS included) per binding while binding, and
bindings per second. Prints medians over the repeats and their ratio (optimised / baseline);
`--json` writes them. The API server's own CPU is the same work either way and not counted.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

import orjson

from common.store.kube_store import _binding

from . import harness, kube_start, kube_vs
from .workloads import WORKLOADS

NAMESPACE = "binds"


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _pending(store, n: int, nodes: list[str], tag: str) -> list[tuple[str, str, str]]:
    """`n` new pending pods of no scheduler, as (key, node, uid) rows, round-robin on `nodes`."""
    pods = WORKLOADS["mixed"](n, 0, len(nodes))
    for pod in pods:
        pod["metadata"]["namespace"] = NAMESPACE
        pod["metadata"]["name"] = f"{tag}-{pod['metadata']['name']}"
        pod["spec"]["schedulerName"] = "no-one"
    kube_vs.create_all(store, pods, 0)
    return [(f"{NAMESPACE}/{p['metadata']['name']}", nodes[i % len(nodes)], None) for i, p in enumerate(pods)]


def _bind(call, rows: list[tuple], batch: int) -> dict:
    cpu, start = _cpu_s(), time.monotonic()
    refused = 0
    for i in range(0, len(rows), batch):
        refused += sum(1 for r in call(rows[i:i + batch]) if r is not None)
    wall, cpu = time.monotonic() - start, _cpu_s() - cpu
    if refused:
        raise RuntimeError(f"{refused} of {len(rows)} bindings were refused")
    return {"cpu_us_per_binding": round(1e6 * cpu / len(rows), 1), "bindings_per_s": round(len(rows) / wall, 1)}


def _http_client_send(requests, method: str, url: str, data: bytes | None, headers: dict, timeout) -> tuple:
    """One request as kube_http._Requests.send sent every request before writes went
    through kube_mux.run_one: http.client's request and response on a pooled connection."""
    conn, _ = requests._take(False, timeout)
    try:
        conn.sock.settimeout(timeout)
        conn.request(method, url, body=data, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
    except BaseException:
        conn.close()
        raise
    requests._give_back(conn, not resp.will_close)
    return resp.status, body


def _bind_by_http_client(store):
    """bind_many of one binding at a time, through `_http_client_send`."""
    http = store._http

    def bind(rows):
        (key, node, uid), = rows
        ns, name = key.split("/", 1)
        url = f"{http.prefix}/api/v1/namespaces/{ns}/pods/{name}/binding"
        status, body = _http_client_send(http.requests, "POST", url, orjson.dumps(_binding(key, node, uid)),
                                         http._headers("application/json"), store.timeout)
        return [None if 200 <= status < 300 else status]
    return bind


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kube_binds", description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=2000, help="bindings each way in each repeat (default 2000)")
    p.add_argument("--batch", type=int, default=64, help="bindings per bind_many call (default 64)")
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    ways = {
        "optimised": lambda store: store.bind_many,
        # the path bind_many took before: one binding per thread of the store's pool
        "baseline": lambda store: lambda rows: store._in_parallel(store._bind, rows),
    }
    if args.batch == 1:
        ways["baseline"] = _bind_by_http_client
    trials: dict[str, list[dict]] = {w: [] for w in ways}
    with kube_start.control_plane(args.nodes, (NAMESPACE,), "binds-") as (cluster, store, _):
        nodes = [d["metadata"]["name"] for d in store.list("Node")[0]]
        for r in range(args.repeats):
            order = list(ways) if r % 2 == 0 else list(reversed(ways))
            for way in order:
                rows = _pending(store, args.pods, nodes, f"r{r}-{way[0]}")
                t = _bind(ways[way](store), rows, args.batch)
                t["load"] = round(os.getloadavg()[0], 2)
                trials[way].append(t)
                print(json.dumps({"way": way, "repeat": r + 1, **t}), flush=True)
            store.evict_many([(k, None) for k, _, _ in rows], respect_budgets=False)
    medians = {w: {k: statistics.median(t[k] for t in ts) for k in ("cpu_us_per_binding", "bindings_per_s")}
               for w, ts in trials.items()}
    doc = {"pods": args.pods, "batch": args.batch, "repeats": args.repeats, "trials": trials, "medians": medians,
           "ratio_cpu": round(medians["optimised"]["cpu_us_per_binding"] / medians["baseline"]["cpu_us_per_binding"], 3),
           "load": os.getloadavg()}
    harness.print_table("kube:// bind_many, the caller's CPU per binding (medians)", medians)
    print(f"ratio (optimised / baseline CPU per binding): {doc['ratio_cpu']}", flush=True)
    harness.write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
