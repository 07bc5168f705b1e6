"""`/livez`, `/readyz` and `/healthz` beside `/metrics`, on each process's metrics port.

Liveness is about threads, not the process: every loop of a component (its main loop, the
binder's watch, partition and commit loops, the lease renewals) calls `beat(name)` each time
it comes round, and `/livez` fails once one of them has not for `health.livenessTimeoutSeconds`.
The metrics server runs on its own threads, so a process whose main loop is wedged used to
look healthy to a probe of `/metrics`; now the kubelet restarts it. A loop that waits for the
store keeps coming round (it retries), so an outage of the store does not fail liveness:
restarting would not cure it.

Readiness is about serving: each component registers named checks (its informer has listed,
its lease is held, the store answers, the links it needs are up); `/readyz` fails while one
does. `/healthz` is `/livez`, as kube's components keep it for old probes.

Answers follow kube's health endpoints: `ok` with 200, or with `?verbose` (and always on
failure, with 500) one line per check, `[+]name ok` or `[-]name failed: reason`, then
`livez check passed|failed`. `/livez/NAME` and `/readyz/NAME` answer for one check.
"""
from __future__ import annotations

import ipaddress
import socket
import socketserver
import threading
import time
from typing import Callable
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

#: A readiness check: None when ready, else why not.
Check = Callable[[], "str | None"]


class Health:
    def __init__(self, liveness_timeout: float, clock=time.monotonic):
        self.timeout = liveness_timeout
        self.clock = clock
        self._beats: dict[str, float] = {}
        self._ready: dict[str, Check] = {}

    def beat(self, name: str) -> None:
        """The loop `name` came round (it is watched from its first beat on)."""
        self._beats[name] = self.clock()

    def add_ready(self, name: str, check: Check) -> None:
        self._ready[name] = check

    def live(self) -> list[tuple[str, str | None]]:
        now = self.clock()
        return [(name, None if now - at <= self.timeout else
                 f"has not come round for {now - at:.1f} s (limit {self.timeout:g} s)")
                for name, at in sorted(self._beats.items())]

    def ready(self) -> list[tuple[str, str | None]]:
        out = []
        for name, check in self._ready.items():
            try:
                out.append((name, check()))
            except Exception as e:  # a check that breaks says so instead of passing
                out.append((name, f"check raised {type(e).__name__}: {e}"))
        return out


def answer(kind: str, results: list[tuple[str, str | None]], only: str, verbose: bool) -> tuple[int, str]:
    """(HTTP status, body) of /livez or /readyz (`kind`), for one check when `only` is set."""
    if only:
        results = [r for r in results if r[0] == only]
        if not results:
            return 404, f"no {kind} check named {only!r}\n"
    failed = any(reason is not None for _, reason in results)
    if not failed and not verbose:
        return 200, "ok"
    lines = [f"[+]{name} ok" if reason is None else f"[-]{name} failed: {reason}" for name, reason in results]
    lines.append(f"{kind} check {'failed' if failed else 'passed'}")
    return (500 if failed else 200), "\n".join(lines) + "\n"


def wsgi_app(registry: CollectorRegistry, health: Health):
    """/metrics from prometheus_client, the health endpoints from `health`, 404 elsewhere."""
    metrics = make_wsgi_app(registry)
    probes = {"livez": health.live, "healthz": health.live, "readyz": health.ready}

    def app(environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return metrics(environ, start_response)
        first, _, only = path.strip("/").partition("/")
        if first in probes:
            verbose = "verbose" in parse_qs(environ.get("QUERY_STRING") or "", keep_blank_values=True)
            kind = "livez" if first == "healthz" else first
            status, body = answer(kind, probes[first](), only, verbose)
        else:
            status, body = 404, "not found: try /metrics, /livez, /readyz or /healthz\n"
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
        start_response(f"{status} {reason}", [("Content-Type", "text/plain; charset=utf-8"),
                                              ("X-Content-Type-Options", "nosniff")])
        return [body.encode()]

    return app


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # probes every few seconds: not worth a log line
        pass


def listen_hosts(host: str) -> list[str]:
    """Where a server configured for `host` listens: `host`, plus loopback when `host` is one
    specific non-loopback address (a pod IP), so that `kubectl port-forward`, which connects
    to localhost inside the pod, reaches it while the pod's other addresses stay closed."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return [host]  # a name: whatever it resolves to
    if ip.is_loopback or ip.is_unspecified:
        return [host]
    return [host, "::1" if ip.version == 6 else "127.0.0.1"]


def serve(registry: CollectorRegistry, health: Health, host: str, port: int | None) -> str:
    """Serve metrics and health on `host`:`port` (and loopback, see listen_hosts); returns
    host:port, "" when `port` is None (off). Port 0 takes a free port, the same on both."""
    if port is None:
        return ""
    app = wsgi_app(registry, health)
    bound = port
    for h in listen_hosts(host):
        server = make_server(h, bound, app, server_class=_Server6 if ":" in h else _Server,
                             handler_class=_QuietHandler)
        bound = server.server_port
        threading.Thread(target=server.serve_forever, name=f"health-{h}", daemon=True).start()
    return f"{host}:{bound}"
