"""deploy/components/monitoring: the alerting rules and the Grafana dashboard name only
metrics (and labels) that shardsched's processes serve, scraped from a running stack; the
rules hold the alerts the README lists. (`make check-rules` has promtool parse their PromQL and
the dashboard's: tests/check_rules.py.)"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import yaml

from builders import numbered_pod as pod
from test_runtime import cluster_env, runtime_config, scrape, wait_bound  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
MONITORING = ROOT / "deploy" / "components" / "monitoring"
#: Series Prometheus makes itself, not the processes.
PROMETHEUS_OWN = {"up"}
#: Labels the scrape adds to every series (the ServiceMonitor's target labels).
TARGET_LABELS = {"job", "namespace", "pod", "instance", "service", "endpoint", "container"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan"}


def rules() -> list[dict]:
    doc = yaml.safe_load((MONITORING / "rules.yaml").read_text())
    return [r for g in doc["spec"]["groups"] for r in g["rules"]]


def dashboard_exprs() -> list[str]:
    doc = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    out = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    out += [v["query"]["query"] for v in doc["templating"]["list"] if isinstance(v.get("query"), dict)]
    return out


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names its matchers and groupings name) of each metric in a PromQL
    expression; a grouping's labels (by/without) are credited to every metric of the expression."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings: no names in them
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    grouped = set()
    for clause in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        grouped |= {x.strip() for x in clause.split(",") if x.strip()}
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"label_values\(\s*([\w:]+)\s*,\s*(\w+)\s*\)", lambda m: f"{m[1]}{{{m[2]}=\"\"}}", expr)
    out = []
    for name, _, matchers in re.findall(r"([a-zA-Z_:][\w:]*)\s*(\{([^}]*)\})?", expr):
        if name.lower() in KEYWORDS or re.fullmatch(r"\d.*", name):
            continue
        out.append((name, set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers)) | grouped))
    # names followed by "(" are functions
    functions = set(re.findall(r"([a-zA-Z_]\w*)\s*\(", expr))
    return [(n, labels) for n, labels in out if n not in functions]


def all_exprs() -> list[str]:
    return [r["expr"] for r in rules()] + dashboard_exprs()


def test_the_rules_hold_every_alert_the_readme_lists():
    alerts = {r["alert"]: r for r in rules()}
    assert set(alerts) >= {"ShardschedPodsPendingTooLong", "ShardschedHighConflictRate", "ShardschedShardDown",
                           "ShardschedBinderDown", "ShardschedPartitionWithoutHolder", "ShardschedNoBinder",
                           "ShardschedNoLeader", "ShardschedEventsDropped"}
    readme = (ROOT / "README.md").read_text()
    for name, rule in alerts.items():
        assert name in readme, f"README does not describe {name}"
        assert rule["labels"]["severity"] in ("info", "warning", "critical") and rule["annotations"]["summary"]


def test_the_expression_reader_finds_names_and_labels():
    got = selectors('sum by (shard, le) (rate(a_bucket{x="1", y!~"z"}[5m])) / on(shard) b or absent(c{job="j"})')
    assert got == [("a_bucket", {"x", "y", "shard", "le"}), ("b", {"shard", "le"}), ("c", {"job", "shard", "le"})]


def test_every_metric_the_rules_and_dashboard_name_is_served(cluster_env):  # noqa: F811
    url, store, start = cluster_env
    cluster = start(free_metrics_ports=True)
    leases = cluster.wait_ready()
    assert not store.create_many([pod(i) for i in range(200)] + [pod(i, cpu="500", name="huge") for i in range(2)])
    wait_bound(store, 200)
    named = {name for expr in all_exprs() for name, _ in selectors(expr)} - PROMETHEUS_OWN
    deadline = time.monotonic() + 180
    while True:  # until every process has reported what it reports periodically (queue lengths)
        samples, families, labels = set(), {}, {}
        for role in ("dispatcher", "shard", "binder"):
            for address in leases[role].values():
                for name, family in scrape_families(cluster.status(role, address).metrics).items():
                    families[name] = family.type
                    for s in family.samples:
                        samples.add(s.name)
                        labels.setdefault(s.name, set()).update(s.labels)
        if all(served(n, samples, families) for n in named) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    values = {}
    for role in ("dispatcher", "binder"):
        for address in leases[role].values():
            for name, family in scrape_families(cluster.status(role, address).metrics).items():
                values.update((s.name, s.value) for s in family.samples)
    # what the alerts read: every partition held; the two huge pods wait, and for longer than 0 s
    assert values["shardsched_binder_partitions_held"] == values["shardsched_binder_partitions"] == 1
    assert values["shardsched_dispatcher_oldest_pending_pod_seconds"] > 0
    assert values["shardsched_events_dropped_total"] == 0
    missing = []
    for expr in all_exprs():
        for name, used in selectors(expr):
            if name in PROMETHEUS_OWN:
                continue
            if not served(name, samples, families):
                missing.append(f"{name} (in {expr!r})")
                continue
            unknown = used - TARGET_LABELS - {"le"} - labels.get(name, set())
            if name in samples and unknown:
                missing.append(f"{name}: labels {sorted(unknown)} (in {expr!r})")
    assert not missing, "\n".join(missing)


def scrape_families(address: str) -> dict:
    from urllib.request import urlopen

    from prometheus_client.parser import text_string_to_metric_families

    with urlopen(f"http://{address}/metrics", timeout=60) as resp:
        return {f.name: f for f in text_string_to_metric_families(resp.read().decode())}


def served(name: str, samples: set, families: dict) -> bool:
    """A sample seen, or the family of a counter or histogram that has none yet (a labelled
    series appears at its first increment: preemption attempts, say)."""
    if name in samples:
        return True
    for suffix, kind in (("_total", "counter"), ("_bucket", "histogram"), ("_sum", "histogram"),
                         ("_count", "histogram")):
        if name.endswith(suffix) and families.get(name.removesuffix(suffix)) == kind:
            return True
    return False
