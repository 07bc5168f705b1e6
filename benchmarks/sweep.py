"""`shardsched bench --sweep KEY=V1,V2,...`: the same workload once per value of one config
key, with the placement quality graded (`--quality`), side by side, so that a setting is
picked on evidence: pods/s, latency, regret, optimal share, conflicts and nodes used per
value, and a chart of throughput against regret."""
from __future__ import annotations

import os

import yaml

from common import config as config_mod


class SweepError(ValueError):
    """A --sweep argument that cannot be run (its message names the key or value)."""


def parse(text: str) -> tuple[str, list]:
    """"threshold.mode=adaptive,kube,all" -> ("threshold.mode", ["adaptive", "kube", "all"]);
    each value is read as YAML (numbers, booleans, strings)."""
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise SweepError(f"--sweep: {text!r}: expected KEY=V1,V2,... (e.g. threshold.mode=adaptive,kube,all)")
    try:
        return key, [yaml.safe_load(v) for v in values.split(",")]
    except yaml.YAMLError as e:
        raise SweepError(f"--sweep: {key}: cannot read a value: {e}") from e


def with_value(cfg: config_mod.Config, key: str, value) -> config_mod.Config:
    """`cfg` with the file's field `key` (dotted, as the file spells it) set to `value`,
    validated again: a bad key or value raises ConfigError naming the field."""
    doc = cfg.to_dict()
    node = doc
    *parents, leaf = key.split(".")
    for i, part in enumerate(parents):
        if not isinstance(node.get(part), dict):
            raise config_mod.ConfigError(".".join(parents[:i + 1]), "not a section of the configuration")
        node = node[part]
    if leaf not in node or isinstance(node[leaf], (dict, list)):
        raise config_mod.ConfigError(key, "not a field of the configuration (`shardsched config defaults` lists them)")
    node[leaf] = value
    return config_mod.validate(doc)


def row(value, doc: dict) -> dict:
    q = doc.get("quality") or {}
    lat, tp = doc["e2e_latency_ms"], doc["throughput_pods_per_s"]
    return {"value": value, "pods_per_s": tp["average"], "latency_p50_ms": lat["p50"],
            "latency_p99_ms": lat["p99"], "regret_pct_mean": q.get("regret_pct_mean"),
            "regret_pct_p99": q.get("regret_pct_p99"), "optimal_share": q.get("optimal_share"),
            "sampled": q.get("sampled"), "conflicts": doc["conflicts"], "nodes_used": doc.get("nodes_used"),
            "scheduled": doc["scheduled"], "verify_ok": doc["verify"]["ok"]}


def markdown(key: str, rows: list[dict]) -> str:
    cols = [c for c in rows[0] if c != "value"] if rows else []
    lines = [f"| `{key}` | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    lines += [f"| {r['value']} | " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot(key: str, rows: list[dict], out_dir: str) -> str:
    """Throughput (x) against mean regret (y), each point labelled with its value."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    pts = [(r["pods_per_s"], r["regret_pct_mean"] or 0.0, r["value"]) for r in rows]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o")
    for x, y, v in pts:
        ax.annotate(str(v), (x, y), textcoords="offset points", xytext=(5, 5))
    ax.set_xlabel("pods/s")
    ax.set_ylabel("mean regret of the chosen node (%)")
    ax.set_title(f"--sweep {key}")
    ax.grid(alpha=0.3)
    path = os.path.join(out_dir, "sweep.png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
