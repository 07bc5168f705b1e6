"""Python's cyclic garbage collector, measured: every collection's pause by generation
(gc.callbacks), since the process started and since it was ready.

A shard or binder holds a few objects per running pod for as long as the pod runs; a full
(generation 2) collection walks every tracked object, so with hundreds of thousands of pods
one pause would be a large part of a second, and it stops every thread (scheduling, the
watch, the gRPC streams) while it runs. `common.runtime.component.settle_heap` freezes what
the initial list built (gc.freeze: those objects are never walked again) and raises the
thresholds once the process is ready; these figures, in every process's Status counters
(`gc_gen2_collections`, `gc_gen2_pause_max_us`, `gc_gen2_pause_total_us`, and the same for
generations 0 and 1; `..._ready` for what happened after it was ready), show what is left.
"""
from __future__ import annotations

import gc
import threading
import time


class GcPauses:
    """Counts, total and longest pause of each generation's collections; installed once per
    process (`install`)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._started = 0.0
        self.since_start = [[0, 0.0, 0.0] for _ in range(3)]   # per generation: n, total s, max s
        self.since_ready = [[0, 0.0, 0.0] for _ in range(3)]

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        gen = info.get("generation", 2)
        for table in (self.since_start, self.since_ready):
            row = table[gen]
            row[0] += 1
            row[1] += pause
            if pause > row[2]:
                row[2] = pause

    def ready(self) -> None:
        """The process is ready: the `_ready` figures start from now."""
        self.since_ready = [[0, 0.0, 0.0] for _ in range(3)]

    def counters(self) -> dict[str, int]:
        out = {}
        for suffix, table in (("", self.since_start), ("_ready", self.since_ready)):
            for gen, (n, total, longest) in enumerate(table):
                out[f"gc_gen{gen}_collections{suffix}"] = n
                out[f"gc_gen{gen}_pause_total_us{suffix}"] = round(total * 1e6)
                out[f"gc_gen{gen}_pause_max_us{suffix}"] = round(longest * 1e6)
        return out


_PAUSES: GcPauses | None = None
_INSTALL = threading.Lock()


def install() -> GcPauses:
    """This process's GcPauses, its callback added to gc.callbacks the first time."""
    global _PAUSES
    with _INSTALL:
        if _PAUSES is None:
            _PAUSES = GcPauses()
            gc.callbacks.append(_PAUSES)
        return _PAUSES
