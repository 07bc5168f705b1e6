"""`shardsched top`: a live table of the shards and binders, from their Status calls.

The processes are found through the dispatcher (its Status lists the shards and binders it
knows) or, without `--dispatcher`, through the leases in the store. Rates are computed from
the difference between two consecutive Status counters, so the first refresh shows none.
"""
from __future__ import annotations

import time

import grpc
from rich.console import Console
from rich.live import Live
from rich.table import Table

from .component import status_of

COLUMNS = ("process", "pods/s", "active", "backoff", "unschedulable", "in flight", "attempts",
           "bound", "conflicts", "threshold", "p99 cycle ms", "uptime s")


def discover(dispatcher: str | None, store, security) -> list[tuple[str, str, str]]:
    """(role, id, address) of every shard and binder."""
    if dispatcher:
        return [(p.role, p.id, p.address) for p in status_of(dispatcher, security, 2.0).peers]
    return [(role, id_, address) for role in ("shard", "binder")
            for id_, address in sorted(store.list_leases(role).items())]


def table(rows: list[tuple[str, str, str]], previous: dict, elapsed: float, security) -> Table:
    t = Table(title=f"shardsched top  {time.strftime('%H:%M:%S')}")
    for c in COLUMNS:
        t.add_column(c, justify="left" if c == "process" else "right")
    for role, id_, address in rows:
        name = f"{role} {id_}"
        try:
            s = status_of(address, security, 2.0)
        except grpc.RpcError:
            t.add_row(name, *(["-"] * (len(COLUMNS) - 2)), "down")
            continue
        c, q = s.counters, s.queues
        bound = c.get("bound", 0)
        before = previous.get(name)
        rate = f"{(bound - before) / elapsed:,.0f}" if before is not None and elapsed > 0 else ""
        previous[name] = bound
        attempts = c.get("cycles", c.get("decisions", 0))
        conflicts = c.get("conflicts", c.get("rejected", 0))
        t.add_row(name, rate, str(q.get("active", "")), str(q.get("backoff", "")),
                  str(q.get("unschedulable", "")), str(q.get("in_flight", q.get("assumed", ""))),
                  str(attempts), str(bound), str(conflicts), str(c.get("threshold", "")),
                  f"{c['cycle_p99_us'] / 1000:.2f}" if "cycle_p99_us" in c else "",
                  f"{s.uptime_seconds:.0f}")
    return t


def source(rows, security) -> callable:
    """A function returning a fresh table each call, with rates since the previous call;
    `rows` is a function returning the (role, id, address) list; `security` (common.security)
    makes the channels to the processes."""
    previous: dict = {}
    last = [time.monotonic()]

    def render() -> Table:
        now = time.monotonic()
        t = table(rows(), previous, now - last[0], security)
        last[0] = now
        return t

    return render


def run(dispatcher: str | None, store, security, interval: float = 1.0, iterations: int | None = None,
        console: Console | None = None) -> None:
    """Refresh every `interval` seconds, `iterations` times (None: until interrupted)."""
    render = source(lambda: discover(dispatcher, store, security), security)
    done = 0
    with Live(console=console or Console(), auto_refresh=False) as live:
        while iterations is None or done < iterations:
            live.update(render(), refresh=True)
            done += 1
            if iterations is None or done < iterations:
                time.sleep(interval)
