"""The caller's CPU per request of kube://'s requests answered at once, against urllib3.

    python -m benchmarks.kube_requests [--requests 3000] [--repeats 5] [--json FILE]

A local HTTP/1.1 server in a process of its own answers each POST with a small Status, as
the API server answers a binding. The calling thread's CPU (its thread time) per request is
measured, alternating within each repeat, for:

- `optimised`: common.store.kube_http.KubeHttp.call (http.client keep-alive connections);
- `baseline`: the same request through urllib3's connection pool `urlopen`, as every request
  went before (the answer decoded with orjson likewise).

TLS is left out: the encryption is the same work either way. Prints medians over the repeats
and their ratio (optimised / baseline); `--json` writes them.
"""
from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import urllib3

from common.store.kube_http import Endpoint, KubeHttp

from . import harness

BINDING = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-1", "namespace": "default", "uid": "u"},
           "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
ANSWER = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the status line and headers, then the body: no delayed ACK between

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


def _serve(httpd: ThreadingHTTPServer) -> None:
    httpd.serve_forever()


def _per_request_us(call, n: int) -> float:
    t = time.thread_time()
    for _ in range(n):
        call()
    return 1e6 * (time.thread_time() - t) / n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args(argv)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server = multiprocessing.get_context("fork").Process(target=_serve, args=(httpd,), daemon=True)
    server.start()
    httpd.server_close()  # the child serves; the listening socket stays open there
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    path = "/api/v1/namespaces/default/pods/web-1/binding"
    ours = KubeHttp(Endpoint(server=base), 10.0, 4)
    pool = urllib3.connection_from_url(base, maxsize=4, block=True, retries=urllib3.Retry(3, redirect=0))
    headers = {"Accept": "application/json", "User-Agent": "shardsched", "Content-Type": "application/json"}

    def baseline():
        resp = pool.urlopen("POST", path, body=orjson.dumps(BINDING), headers=headers, timeout=10.0,
                            preload_content=True, release_conn=True)
        return orjson.loads(resp.data)

    def optimised():
        return ours.call("POST", path, body=BINDING)

    try:
        assert baseline() == optimised() == orjson.loads(ANSWER)
        runs = {"optimised": [], "baseline": []}
        for _ in range(args.repeats):
            for name, call in (("baseline", baseline), ("optimised", optimised)):
                runs[name].append(_per_request_us(call, args.requests))
    finally:
        ours.close()
        pool.close()
        server.terminate()
        server.join()
    doc = {"requests": args.requests, "repeats": args.repeats,
           "optimised_us_per_request": round(statistics.median(runs["optimised"]), 1),
           "baseline_us_per_request": round(statistics.median(runs["baseline"]), 1),
           "runs_us": {k: [round(v, 1) for v in vs] for k, vs in runs.items()}}
    doc["ratio"] = round(doc["optimised_us_per_request"] / doc["baseline_us_per_request"], 3)
    print(f"caller's CPU per request: optimised {doc['optimised_us_per_request']} us, "
          f"baseline (urllib3) {doc['baseline_us_per_request']} us, ratio {doc['ratio']}", flush=True)
    harness.write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
