"""Small helpers every benchmark shares: timing loops, percentiles, the table and the JSON."""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import orjson
from rich.console import Console
from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def percentile(samples, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    s = sorted(samples)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


def time_ms(fn, repeat: int, setup=None) -> list[float]:
    """Run `fn` `repeat` times (after `setup()` each time, untimed); milliseconds per run."""
    out = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def compare(optimised: list[float], baseline: list[float]) -> dict:
    """The JSON shape shared by the data-structure benchmarks: medians and their ratio."""
    o, b = statistics.median(optimised), statistics.median(baseline)
    return {"optimised_ms": round(o, 4), "baseline_ms": round(b, 4), "ratio": round(b / o, 1) if o else None}


def latency(samples: list[float], baseline: list[float]) -> dict:
    """The JSON shape of the cycle benchmarks: median/p99 against the baseline's."""
    m, bm = statistics.median(samples), statistics.median(baseline)
    return {"median_ms": round(m, 4), "p99_ms": round(percentile(samples, 99), 4),
            "baseline_median_ms": round(bm, 4), "baseline_p99_ms": round(percentile(baseline, 99), 4),
            "ratio": round(bm / m, 1) if m else None}


def print_table(title: str, results: dict) -> None:
    columns = list(dict.fromkeys(k for r in results.values() for k in r))
    t = Table(title=title)
    t.add_column("item")
    for c in columns:
        t.add_column(c, justify="right")
    for name, r in results.items():
        t.add_row(name, *(str(r.get(c, "")) for c in columns))
    Console(width=max(Console().width, 160)).print(t)  # figures unclipped in logs and pipes


def write_json(path: str | None, doc: dict) -> None:
    if path:
        with open(path, "wb") as fh:
            fh.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def report(title: str, results: dict, path: str | None) -> int:
    """Print the results table, write the JSON when asked, and give main()'s exit status."""
    print_table(title, results)
    write_json(path, results)
    return 0


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--nodes", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the results to this file")
    return p


@contextlib.contextmanager
def progress(total: int, quiet: bool = False, extra=None):
    """A progress bar of pods scheduled, with `extra()` (a renderable, e.g. the live table of
    the shards) drawn under it; yields update(created=, scheduled=)."""
    if quiet:
        yield lambda **_: None
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   auto_refresh=False)  # never started: drawn inside the Live below
    task = bar.add_task("starting", total=total)
    last = [time.monotonic(), 0]
    with Live(console=Console(), auto_refresh=False) as live:
        def update(created: int, scheduled: int) -> None:
            now = time.monotonic()
            rate = (scheduled - last[1]) / max(now - last[0], 1e-9)
            last[:] = [now, scheduled]
            bar.update(task, completed=scheduled, description=(
                f"created {created}  scheduled {scheduled}  pending {created - scheduled}  "
                f"{rate:,.0f} pods/s"))
            parts = [bar.get_renderable()] + ([extra()] if extra is not None else [])
            live.update(Group(*parts), refresh=True)

        yield update


def churn_summary(c: dict) -> str:
    """`bench --churn`'s writes in one line (for the table and the Markdown)."""
    return (f"{c['heartbeats']} / {c['running']} (every node each {c['heartbeat_s']:g} s; "
            f"{c['conflicts']} conflicts, {c['errors']} errors)")


def print_bench(doc: dict) -> None:
    """The end-to-end benchmark's summary: one table of figures, one of shards."""
    t = Table(title=f"{doc['workload']}: {doc['pods']} pods on {doc['nodes']} {doc['profile']} nodes, "
                    f"{doc['shards']} shard(s), {doc['binders']} binder(s)")
    t.add_column("figure")
    t.add_column("value", justify="right")
    tp, lat = doc["throughput_pods_per_s"], doc["e2e_latency_ms"]
    for name, value in (("throughput avg pods/s", tp["average"]), ("throughput p50/p90/p99",
                        f"{tp['p50']} / {tp['p90']} / {tp['p99']}"),
                        ("e2e latency p50/p90/p99/p99.9 ms",
                         f"{lat['p50']} / {lat['p90']} / {lat['p99']} / {lat.get('p999')}"),
                        ("scheduled", doc["scheduled"]), ("unschedulable", doc["unschedulable"]),
                        ("conflicts (refused by the binder's checks)", f"{doc['conflicts']} ({doc.get('conflicts_refused', '-')})"),
                        ("nodes used", doc.get("nodes_used", "-")),
                        ("verify", "ok" if doc["verify"]["ok"] else
                                                          f"{len(doc['verify']['violations'])} violation(s)")):
        t.add_row(name, str(value))
    if doc.get("claims"):
        c = doc["claims"]
        t.add_row("claim controller: passes / writes / errors", f"{c['passes']} / {c['writes']} / {c['errors']}")
    if doc.get("baseline"):
        b = doc["baseline"]
        t.add_row(f"baseline {b['workload']}: throughput avg pods/s (p99 ms)", f"{b['throughput']} ({b['p99_ms']})")
        t.add_row("baseline: scheduled / conflicts / verify",
                  f"{b['scheduled']} / {b['conflicts']} / {'ok' if b['verify_ok'] else 'violations'}")
        t.add_row("throughput / baseline's (same run)", str(b["ratio"]))
    if doc.get("churn"):
        t.add_row("churn: heartbeats / pods marked Running", churn_summary(doc["churn"]))
    if doc.get("kill") and doc["kill"].get("killed"):
        k = doc["kill"]
        t.add_row("kill: shard back (lease) / scheduling s after", f"{k['ready_s']} / {k['scheduling_s']}")
        if k.get("e2e_latency_ms"):
            w = k["e2e_latency_ms"]
            t.add_row("kill: e2e p99 ms, pods created before / until back / after",
                      " / ".join(str(w[n].get("p99", "-")) for n in ("before", "until_back", "after_back")))
    if doc.get("quality"):
        t.add_row("quality: sampled / optimal share", f"{doc['quality']['sampled']} / {doc['quality']['optimal_share']}")
        t.add_row("quality: regret mean / p99 %",
                  f"{doc['quality']['regret_pct_mean']} / {doc['quality']['regret_pct_p99']}")
        if "nodes_used_one_shard" in doc["quality"]:
            t.add_row("quality: nodes used / one shard's", f"{doc['nodes_used']} / {doc['quality']['nodes_used_one_shard']}")
    if doc.get("groups"):
        g = doc["groups"]
        for name, value in (("pod groups placed / created", f"{g['placed']} / {g['groups']}"),
                            ("groups/s", g["groups_per_s"]),
                            ("64-pod group placed in p50/p99/max s",
                             " / ".join(str(g["place_64_s"][q]) for q in ("p50", "p99", "max"))),
                            ("any group placed in p50/p99/max s",
                             " / ".join(str(g["place_s"][q]) for q in ("p50", "p99", "max"))),
                            ("partial groups at the end", g["partial"])):
            t.add_row(name, str(value))
    if doc.get("running_pods_fill"):
        f = doc["running_pods_fill"]
        t.add_row("running pods (deployments), written in s",
                  f"{doc['running_pods']} ({f['deployments']}), {f['write_s']}")
    console = Console(width=max(Console().width, 120))  # figures unclipped in logs and pipes
    console.print(t)
    if doc.get("processes"):
        p = Table(title="per process (peak RSS = VmHWM at the end; per running pod = VmHWM once ready "
                        "over the empty fleet's)")
        for c in ("process", "ready s", "peak RSS MB", "peak at ready MB", "RSS at ready MB", "empty fleet MB",
                  "bytes/running pod", "cpu s", "cpu ms/pod"):
            p.add_column(c, justify="right")
        columns = ("ready_s", "peak_rss_mb", "rss_ready_mb", "vmrss_ready_mb", "empty_fleet_rss_mb",
                   "bytes_per_running_pod", "cpu_s", "cpu_ms_per_pod")
        for key, row in doc["processes"].items():
            p.add_row(key, *("-" if row.get(c) is None else str(row[c]) for c in columns))
        for key, row in (doc.get("cpu") or {}).items():
            if isinstance(row, dict):  # the store, the bench, its churn writer: CPU only
                p.add_row(key, *("-" if row.get(c) is None else str(row[c]) for c in columns))
        console.print(p)
        if (doc.get("cpu") or {}).get("whole_machine_cores") is not None:
            console.print(f"whole machine busy while the pods were scheduled: "
                          f"{doc['cpu']['whole_machine_cores']} of {os.cpu_count()} cores")
    s = Table(title="per shard")
    for c in ("shard", "scheduled", "conflicts", "cycles", "unschedulable_attempts"):
        s.add_column(c, justify="right")
    for row in doc["per_shard"]:
        s.add_row(*(str(row[c]) for c in ("shard", "scheduled", "conflicts", "cycles",
                                           "unschedulable_attempts")))
    console.print(s)
