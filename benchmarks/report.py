"""What a bench run leaves behind: a Markdown summary and, when asked, PNG charts.

The JSON document is the source for both, so a run can be re-plotted later from its JSON.
"""
from __future__ import annotations

import os

from .harness import churn_summary


def markdown(doc: dict) -> str:
    tp, lat = doc["throughput_pods_per_s"], doc["e2e_latency_ms"]
    verify = doc["verify"]
    lines = [
        f"# shardsched bench: {doc['workload']}",
        "",
        f"{doc['pods']} pods on {doc['nodes']} {doc['profile']} nodes, {doc['shards']} shard(s), "
        f"{doc['binders']} binder(s), threshold `{doc['threshold']}`.",
        "",
        "| figure | value |", "|---|---:|",
        f"| throughput average (pods/s) | {tp['average']} |",
        f"| throughput p50 / p90 / p99 (pods/s) | {tp['p50']} / {tp['p90']} / {tp['p99']} |",
        f"| e2e latency p50 / p90 / p99 / p99.9 (ms) | {lat['p50']} / {lat['p90']} / {lat['p99']} / {lat.get('p999')} |",
        *([f"| running pods before the clock started | {doc['running_pods']} |"] if doc.get("running_pods") else []),
        f"| scheduled | {doc['scheduled']} |",
        f"| unschedulable | {doc['unschedulable']} |",
        f"| conflicts (refused by the binder's checks) | {doc['conflicts']} ({doc.get('conflicts_refused', '-')}) |",
        f"| nodes used | {doc.get('nodes_used', '-')} |",
        f"| verify | {'ok' if verify['ok'] else str(len(verify['violations'])) + ' violation(s)'} |",
        *([f"| churn: heartbeats / pods marked Running | {churn_summary(doc['churn'])} |"]
          if doc.get("churn") else []),
        *_baseline_rows(doc.get("baseline")),
        *_groups_rows(doc.get("groups")),
        *_quality_rows(doc),
        "",
        "| shard | scheduled | conflicts | cycles | unschedulable attempts |", "|---|---:|---:|---:|---:|",
    ]
    lines += [f"| {s['shard']} | {s['scheduled']} | {s['conflicts']} | {s['cycles']} | "
              f"{s['unschedulable_attempts']} |" for s in doc["per_shard"]]
    if doc.get("processes"):
        lines += ["", "| process | ready (s) | peak RSS (MB) | RSS once ready (MB) | on the empty fleet (MB) | "
                      "bytes per running pod |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {k} | {r['ready_s']} | {r['peak_rss_mb']} | {r.get('rss_ready_mb')} | "
                  f"{r.get('empty_fleet_rss_mb')} | {r['bytes_per_running_pod']} |" for k, r in doc["processes"].items()]
    if doc.get("ablation"):
        lines += ["", "## Ablation", "", ablation_markdown(doc["ablation"])]
    return "\n".join(lines) + "\n"


def _baseline_rows(b: dict | None) -> list[str]:
    if not b:
        return []
    return [f"| baseline {b['workload']}: throughput average (pods/s), p99 (ms) | {b['throughput']}, {b['p99_ms']} |",
            f"| baseline: scheduled / conflicts / verify | {b['scheduled']} / {b['conflicts']} / "
            f"{'ok' if b['verify_ok'] else 'violations'} |",
            f"| throughput / baseline's (same run) | {b['ratio']} |"]


def _quality_rows(doc: dict) -> list[str]:
    q = doc.get("quality")
    if not q:
        return []
    rows = [f"| quality: sampled / optimal share | {q['sampled']} / {q['optimal_share']} |",
            f"| quality: regret mean / p99 (%) | {q['regret_pct_mean']} / {q['regret_pct_p99']} |"]
    if "nodes_used_one_shard" in q:
        rows.append(f"| quality: nodes used / one shard's | {doc['nodes_used']} / {q['nodes_used_one_shard']} |")
    return rows


def _groups_rows(g: dict | None) -> list[str]:
    if not g:
        return []
    def spread(q):
        return " / ".join(str(q[k]) for k in ("p50", "p99", "max"))
    return [f"| pod groups placed / created | {g['placed']} / {g['groups']} |",
            f"| groups/s | {g['groups_per_s']} |",
            f"| 64-pod group placed in p50 / p99 / max (s) | {spread(g['place_64_s'])} |",
            f"| any group placed in p50 / p99 / max (s) | {spread(g['place_s'])} |",
            f"| partial groups at the end | {g['partial']} |"]


def ablation_markdown(rows: list[dict]) -> str:
    out = ["| variant | throughput (pods/s) | p99 latency (ms) | throughput vs full | pods bound | verify |",
           "|---|---:|---:|---:|---:|---|"]
    out += [f"| {r['variant']} | {r['throughput']} | {r['p99_ms']} | {r['ratio']} | {r['scheduled']} | "
            f"{'ok' if r['verify_ok'] else 'FAILED'} |" for r in rows]
    return "\n".join(out)


def plot(doc: dict, out_dir: str) -> list[str]:
    """Throughput over time, latency distribution, per-shard counts; returns the files."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    series = doc["series"]
    files = []

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(range(len(series["per_second"])), series["per_second"], width=1.0, align="edge")
    ax.set_xlabel("seconds since the first binding")
    ax.set_ylabel("pods bound per second")
    ax.set_title(f"throughput: {doc['workload']}, {doc['nodes']} nodes, {doc['shards']} shard(s)")
    files.append(_save(fig, out_dir, "throughput.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.hist(series["latencies_ms"], bins=50)
    ax.set_xlabel("end-to-end latency (ms), creation to binding")
    ax.set_ylabel("pods")
    ax.set_title("latency distribution")
    files.append(_save(fig, out_dir, "latency.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    shards = [s["shard"] for s in doc["per_shard"]]
    x = range(len(shards))
    ax.bar([i - 0.2 for i in x], [s["scheduled"] for s in doc["per_shard"]], width=0.4, label="scheduled")
    ax.bar([i + 0.2 for i in x], [s["conflicts"] for s in doc["per_shard"]], width=0.4, label="conflicts")
    ax.set_xticks(list(x), [f"shard {s}" for s in shards])
    ax.set_yscale("symlog")
    ax.legend()
    ax.set_title("per shard")
    files.append(_save(fig, out_dir, "shards.png"))
    return files


def _save(fig, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path
