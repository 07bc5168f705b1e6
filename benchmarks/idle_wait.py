"""An idle shard's and dispatcher's loop: CPU and passes a second, waiting on the doorbell
against the fixed 20 ms poll, in the same run.

    python -m benchmarks.idle_wait [--nodes 1000] [--seconds 5] [--repeats 3] [--json FILE]

A shard (listed `--nodes` nodes) and a dispatcher (leading, no shard joined: it looks for
one every 0.1 s) on the in-memory store run their passes (`step()`) for `--seconds` with
nothing to do, on the calling thread, its CPU read with
`time.thread_time`: `doorbell` with the store's watch ringing the loop's doorbell (as on
kube://), `poll` on the same store made unable to ring (`listen` returns False: as on Redis,
a pass waits at most 20 ms, the code before this change on every store). Variants alternate
within each repeat; medians over the repeats, and the ratio doorbell / poll.
"""
from __future__ import annotations

import argparse
import statistics
import time

from common import config as config_mod
from common.store.memory import MemoryStore
from common.tools import fleet as fleet_mod
from dispatcher.server import Dispatcher
from shard.server import ShardServer

from . import harness


class PollingStore(MemoryStore):
    """The baseline: a store whose watch cannot ring a loop's doorbell."""

    def listen(self, ring) -> bool:
        return False


def _store(cls, nodes: int):
    store = cls()
    store.create_many(fleet_mod.generate(nodes, "mixed"))
    return store


def _run(component, seconds: float) -> dict:
    passes = 0
    cpu0, t0 = time.thread_time(), time.monotonic()
    while time.monotonic() - t0 < seconds:
        component.step()
        passes += 1
    wall = time.monotonic() - t0
    return {"cpu_ms_per_s": round(1000 * (time.thread_time() - cpu0) / wall, 3), "passes_per_s": round(passes / wall, 1)}


def measure(role: str, variant: str, nodes: int, seconds: float) -> dict:
    store = _store(PollingStore if variant == "poll" else MemoryStore, nodes)
    cfg = config_mod.defaults()
    if role == "shard":
        component = ShardServer(cfg, store, 0)
        component.loop.start()
    else:
        component = Dispatcher(cfg, store, 0)
        component.informer.start()
    component.step()  # the first read opens the watch
    if role == "dispatcher":
        component.adopt_until = 0.0  # (no shard to wait for: its adoption is over)
    return _run(component, seconds)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    runs: dict = {}
    for _ in range(args.repeats):
        for role in ("shard", "dispatcher"):
            for variant in ("poll", "doorbell"):
                runs.setdefault((role, variant), []).append(measure(role, variant, args.nodes, args.seconds))
    out = {}
    for role in ("shard", "dispatcher"):
        row = {}
        for variant in ("poll", "doorbell"):
            for figure in ("cpu_ms_per_s", "passes_per_s"):
                row[f"{variant}_{figure}"] = statistics.median(r[figure] for r in runs[(role, variant)])
        row["ratio_cpu"] = round(row["doorbell_cpu_ms_per_s"] / row["poll_cpu_ms_per_s"], 3) \
            if row["poll_cpu_ms_per_s"] else None
        out[role] = row
        print(f"{role}: " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    harness.write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
