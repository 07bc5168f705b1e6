"""`shardsched top`: a live table of the shards and binders, from their Status calls.

The processes are found through the dispatcher (its Status lists the shards and binders it
knows) or, without `--dispatcher`, through the leases in the store. Rates are computed from
the difference between two consecutive Status counters, so the first refresh shows none.
Under the processes, the sub-cluster pools the shards queue (config `subClusters`: each
pool's queued pods per shard), and the pod groups the shards are placing: members, and how
many are bound, assumed by the shard and waiting at Permit for the rest of their group.
"""
from __future__ import annotations

import time

import grpc
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from ..runtime.component import status_of

GROUP_COLUMNS = ("pod group", "shard", "minMember", "members", "bound", "assumed", "waiting")
#: Columns a table written to a file or pipe may take: far more than it needs, since rich
#: sizes a table to its cells and cuts them only to fit the console.
PIPE_WIDTH = 1000
COLUMNS = ("process", "pods/s", "active", "backoff", "unschedulable", "in flight", "attempts",
           "bound", "conflicts", "threshold", "p99 cycle ms", "uptime s")


def refusal(address: str, error: grpc.RpcError) -> str:
    """One line for a dispatcher that did not answer `top`: its status code, and what to do
    about it (a token or certificate comes only from the processes' configuration)."""
    code = error.code()
    line = f"dispatcher {address}: {code.name if code else 'error'} ({error.details()})"
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return (line + ": its ports ask for credentials; pass --config with the processes' configuration "
                "(`shardsched up` prints its path, <log dir>/config.yaml)")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return line + ": is it running, and listening there? (under mtls: pass --config with its certificates)"
    return line


def discover(dispatcher: str | None, store, security) -> list[tuple[str, str, str]]:
    """(role, id, address) of every shard and binder."""
    if dispatcher:
        return [(p.role, p.id, p.address) for p in status_of(dispatcher, security, 2.0).peers]
    return [(role, id_, address) for role in ("shard", "binder")
            for id_, address in sorted(store.list_leases(role).items())]


def table(rows: list[tuple[str, str, str]], previous: dict, elapsed: float, security):
    """The processes' table, and under it the pod groups the shards are placing (if any)."""
    t = Table(title=f"shardsched top  {time.strftime('%H:%M:%S')}")
    for c in COLUMNS:
        t.add_column(c, justify="left" if c == "process" else "right")
    units = {}
    pools: dict[str, dict[str, int]] = {}  # pool -> shard id -> its pods queued there
    for role, id_, address in rows:
        name = f"{role} {id_}"
        try:
            s = status_of(address, security, 2.0)
        except grpc.RpcError as e:
            refused = e.code() == grpc.StatusCode.UNAUTHENTICATED
            t.add_row(name, *(["-"] * (len(COLUMNS) - 2)), "refused" if refused else "down")
            continue
        units.update((u.group, (id_, u)) for u in s.groups)
        c, q = s.counters, s.queues
        for key, n in q.items():
            if key.startswith("pool:"):
                pools.setdefault(key[len("pool:"):], {})[id_] = n
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
    parts = [t] + ([pools_table(pools)] if pools else []) + ([units_table(units)] if units else [])
    return Group(*parts) if len(parts) > 1 else t


def pools_table(pools: dict) -> Table:
    """Sub-cluster pools: pool -> {shard id: pods queued}; `*` is the cluster-wide pool."""
    t = Table(title="pools (pods queued per shard)")
    t.add_column("pool")
    t.add_column("shards", justify="right")
    t.add_column("queued", justify="right")
    for pool, by_shard in sorted(pools.items()):
        t.add_row(pool, " ".join(f"{i}:{n}" for i, n in sorted(by_shard.items())), str(sum(by_shard.values())))
    return t


def units_table(units: dict) -> Table:
    """Pod groups as units: group -> (shard id, GroupUnit)."""
    t = Table(title="pod groups being placed")
    for c in GROUP_COLUMNS:
        t.add_column(c, justify="left" if c == "pod group" else "right")
    for key, (shard, u) in sorted(units.items()):
        t.add_row(key, shard, str(u.min_member), str(u.members), str(u.bound), str(u.assumed), str(u.waiting))
    return t


def shard_units(store, security, timeout: float = 1.0) -> dict:
    """group -> (shard id, GroupUnit) from every live shard's Status (shards that do not
    answer within `timeout` are left out)."""
    out = {}
    for id_, address in sorted(store.list_leases("shard").items()):
        try:
            out.update((u.group, (id_, u)) for u in status_of(address, security, timeout).groups)
        except grpc.RpcError:
            continue
    return out


def source(rows, security) -> callable:
    """A function returning a fresh table each call, with rates since the previous call;
    `rows` is a function returning the (role, id, address) list; `security` (common.runtime.security)
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
    """Refresh every `interval` seconds, `iterations` times (None: until interrupted).

    On a terminal the table is redrawn in place; written to a file or pipe, each refresh is
    printed after the last, as wide as its columns need (rich would cut it to 80 columns)."""
    render = source(lambda: discover(dispatcher, store, security), security)
    console = console or Console()
    if not console.is_terminal:
        console.width = max(console.width, PIPE_WIDTH)
        for _ in _ticks(interval, iterations):
            console.print(render())
        return
    with Live(console=console, auto_refresh=False) as live:
        for _ in _ticks(interval, iterations):
            live.update(render(), refresh=True)


def _ticks(interval: float, iterations: int | None):
    """Yields once per refresh, sleeping `interval` between them."""
    done = 0
    while iterations is None or done < iterations:
        yield
        done += 1
        if iterations is None or done < iterations:
            time.sleep(interval)
