"""A piece of the harness run in a process of its own beside the stack (kubelets' churn, the
ResourceClaim controller): as on a cluster, it does not share the bench's interpreter lock
with the load generator and the observer, and its CPU shows as its own process.

The child runs `target(*args, ready, stop, out)`: it sets `ready` once it is set up, works
until the `stop` event is set, then sends its counts through `out`, which `stop()` returns.
"""
from __future__ import annotations

import logging
import multiprocessing
import time

log = logging.getLogger(__name__)


class SideProcess:
    def __init__(self, name: str, target, args: tuple, died: dict):
        """`died`: the counts `stop()` reports when the child sent none (it died)."""
        ctx = multiprocessing.get_context("spawn")  # the bench has threads running: no fork
        self.name = name
        self._died = died
        self._ready, self._stop = ctx.Event(), ctx.Event()
        self._counts, child_end = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=target, args=(*args, self._ready, self._stop, child_end), name=name,
                                    daemon=True)

    def start(self, timeout_s: float = 120.0) -> None:
        """Start it and return once it is set up (a fresh interpreter, its imports, its first
        reads: the churn writer lists every node). The bench starts its clock next: a child
        still starting would take the stack's two cores in the measured first second, and
        the pods created then would wait for it (the latency's tail). Raises RuntimeError
        when it dies or is not ready within `timeout_s`."""
        self._process.start()
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.05):
            if not self._process.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} process did not get ready "
                                   f"(exit code {self._process.exitcode})")

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def stop(self, timeout_s: float = 30.0) -> dict:
        """Stop it; returns its counts (`died`, logged, when it sent none)."""
        self._stop.set()
        try:
            counts = self._counts.recv() if self._counts.poll(timeout_s) else None
        except EOFError:  # it died before sending them
            counts = None
        self._process.join(timeout_s)
        if counts is None:
            log.error("the %s process sent no counts (exit code %s)", self.name, self._process.exitcode)
            counts = dict(self._died)
        return counts
