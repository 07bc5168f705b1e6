"""`shardsched bench --running-pods N` (benchmarks/running.py, benchmarks/processes.py): the
fleet filled with bound, Running pods before the clock starts, and each process's figures.
Behaviour only, never timings."""
from __future__ import annotations

import json
from collections import Counter

from benchmarks import running
from common.tools import fleet as fleet_mod
from common.cli import main
from common.model.objects import parse_node, parse_pod
from common.tools.verify import verify


def test_the_running_pods_are_a_valid_placement_of_many_deployments():
    nodes = fleet_mod.generate(60, "mixed", 3)
    pods = [p for chunk in running.generate(3000, nodes, 3) for p in chunk]
    assert len(pods) == 3000 and len({p["metadata"]["uid"] for p in pods}) == 3000
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == 3000
    parsed = [parse_pod(p) for p in pods]
    assert all(p.node_name and p.phase == "Running" for p in parsed)
    apps = Counter(p["metadata"]["labels"]["app"] for p in pods)
    assert len(apps) == running.deployment_count(3000) and len({p["metadata"]["namespace"] for p in pods}) > 1
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in pods)
    assert any(p.anti_affinity[0] for p in parsed) and any(p.spread_constraints for p in parsed)
    assert len({p.priority for p in parsed}) > 1
    report = verify([parse_node(n) for n in nodes], parsed)
    assert report["ok"], report["violations"][:5]
    assert report["bound"] == 3000
    tainted = {n["metadata"]["name"] for n in nodes if n["spec"].get("taints")}
    assert not any(p.node_name in tainted for p in parsed)


def test_running_pods_on_a_fleet_without_zones_are_a_valid_placement_too():
    nodes = fleet_mod.generate(30, "uniform", 0)
    parsed = [parse_pod(p) for chunk in running.generate(300, nodes, 0) for p in chunk]
    report = verify([parse_node(n) for n in nodes], parsed)
    assert report["ok"], report["violations"][:5]
    assert report["bound"] == 300


def test_a_fill_that_does_not_fit_says_so():
    nodes = fleet_mod.generate(4, "uniform", 0)
    try:
        list(running.generate(4 * 110 + 1, nodes, 0))
    except ValueError as e:
        assert "do not fit" in str(e)
    else:
        raise AssertionError("overcommitted the fleet")


def test_a_small_bench_with_running_pods(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = main(["bench", "--nodes", "50", "--profile", "mixed", "--running-pods", "500", "--pods", "200",
               "--workload", "mixed", "--rate", "400", "--churn", "--heartbeat-s", "5", "--shards", "2",
               "--quiet", "--json", str(out)])
    assert rc == 0, capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["verify"]["ok"] and doc["verify_s"] >= 0  # verify judged them all, and was timed
    # every running pod is still there and bound, besides the bench's own
    assert doc["running_pods"] == 500 and doc["verify"]["bound"] == 500 + doc["scheduled"]
    assert doc["scheduled"] == doc["pods"] == 200
    lat = doc["e2e_latency_ms"]
    assert set(lat) >= {"p50", "p90", "p99", "p999"}
    assert all(isinstance(lat[q], (int, float)) for q in ("p50", "p90", "p99", "p999"))
    assert 0 <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"]
    procs = doc["processes"]
    assert set(procs) == {"dispatcher-0", "shard-0", "shard-1", "binder-0"}
    for row in procs.values():
        assert isinstance(row["ready_s"], (int, float)) and row["ready_s"] >= 0
        assert isinstance(row["peak_rss_mb"], (int, float)) and row["peak_rss_mb"] > 0
        assert isinstance(row["bytes_per_running_pod"], int)
        # CPU while the pods were scheduled: every process schedules, watches or binds them
        assert row["cpu_s"] >= 0 and abs(row["cpu_ms_per_pod"] - 1000 * row["cpu_s"] / 200) <= 0.26  # cpu_s to 0.1
    assert min(procs[k]["cpu_s"] for k in ("shard-0", "shard-1")) > 0
    cpu = doc["cpu"]
    assert set(cpu) == {"store", "bench", "churn", "whole_machine_cores"}
    # (the bench passes over the events it does not need undecoded: 200 pods may round to 0.0 s)
    assert cpu["bench"]["cpu_s"] >= 0 and cpu["store"]["cpu_s"] >= 0 and cpu["whole_machine_cores"] > 0
    for key in ("throughput_pods_per_s", "conflicts", "per_shard", "churn", "fleet_write_s"):
        assert key in doc  # today's figures stay
    assert "p99.9" in (tmp_path / "bench.md").read_text()


def test_without_running_pods_processes_are_reported_and_nothing_per_pod(tmp_path):
    out = tmp_path / "b.json"
    assert main(["bench", "--nodes", "20", "--profile", "uniform", "--pods", "30", "--shards", "1",
                 "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["running_pods"] == 0 and doc["verify"]["ok"]
    assert set(doc["processes"]) == {"dispatcher-0", "shard-0", "binder-0"}
    assert all(r["bytes_per_running_pod"] is None and r["peak_rss_mb"] > 0 for r in doc["processes"].values())


def test_a_shard_killed_in_the_middle_comes_back_and_nothing_is_lost(tmp_path):
    """`--kill-shard-at`: shard 0 is killed with -9 while pods flow and started again; the
    new process takes its lease and schedules, and every pod is bound once, verify ok."""
    out = tmp_path / "b.json"
    assert main(["bench", "--nodes", "30", "--profile", "uniform", "--running-pods", "300", "--pods", "300",
                 "--rate", "50", "--shards", "2", "--kill-shard-at", "2", "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    kill = doc["kill"]
    assert kill["killed"] and kill["error"] is None and kill["old_pid"] != kill["new_pid"]
    assert 0 < kill["ready_s"] <= kill["scheduling_s"]
    assert doc["scheduled"] == 300 and doc["verify"]["ok"]
    # every pod's latency counted in one window around the kill; the slowest listed
    windows = kill["e2e_latency_ms"]
    assert sum(windows[w]["pods"] for w in ("before", "until_back", "after_back")) == 300
    assert len(windows["slowest"]) == 10 and windows["slowest"][0][1] >= windows["slowest"][-1][1]
    # the killed shard's CPU is both processes' (it was the new one's less the old one's)
    assert doc["processes"]["shard-0"]["cpu_s"] >= kill["old_cpu_s"] - 0.05 and kill["old_cpu_s"] > 0
