"""Small helpers every benchmark shares: timing loops, percentiles, the table and the JSON."""
from __future__ import annotations

import argparse
import statistics
import time

import orjson
from rich.console import Console
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
    Console().print(t)


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
