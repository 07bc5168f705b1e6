"""`shardsched bench --quality` and `--sweep` as a user runs them: the graded figures in the
JSON, the sweep's rows and chart, and clear errors for a bad key or value."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PACKING = str(ROOT / "benchmarks" / "configs" / "most-allocated.yaml")
SMALL = ("--nodes", "40", "--profile", "mixed", "--pods", "80", "--workload", "mixed", "--quiet")


def bench(*args: str) -> subprocess.CompletedProcess:
    # generous: the machine is shared, and a run starts redis and five processes
    return subprocess.run([sys.executable, "-m", "common.cli", "bench", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=900)


def test_quality_grades_placements_and_compares_packing_with_one_shard(tmp_path):
    out = tmp_path / "q.json"
    r = bench(*SMALL, "--shards", "2", "--config", PACKING, "--quality", "100", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    q = doc["quality"]
    assert 0 < q["sampled"] <= doc["scheduled"]
    assert 0 <= q["regret_pct_mean"] <= q["regret_pct_p99"] <= 100
    assert 0 <= q["optimal_share"] <= 1
    assert doc["packing"] and 0 < q["nodes_used_one_shard"] <= 40 and 0 < doc["nodes_used"] <= 40
    assert "regret mean / p99" in (tmp_path / "q.md").read_text()


def test_sweep_runs_one_graded_row_per_value_with_a_chart(tmp_path):
    out = tmp_path / "s.json"
    r = bench(*SMALL, "--sweep", "threshold.mode=adaptive,all", "--quality", "100", "--json", str(out), "--plot", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    sweep = json.loads(out.read_text())["sweep"]
    assert sweep["key"] == "threshold.mode" and [row["value"] for row in sweep["rows"]] == ["adaptive", "all"]
    for row in sweep["rows"]:
        assert row["scheduled"] == 80 and row["verify_ok"] and row["sampled"] > 0
    # every feasible node scored: every choice is optimal
    assert sweep["rows"][1]["regret_pct_mean"] == 0.0 and sweep["rows"][1]["optimal_share"] == 1.0
    assert (tmp_path / "sweep.png").stat().st_size > 0


def test_a_bad_sweep_names_the_key_or_value():
    r = bench("--sweep", "threshold.mode")
    assert r.returncode == 2 and "expected KEY=V1,V2,..." in r.stdout
    r = bench("--sweep", "threshold.nope=1,2")
    assert r.returncode == 1 and "threshold.nope: not a field of the configuration" in r.stdout
    r = bench("--sweep", "threshold.mode=adaptive,sometimes")
    assert r.returncode == 1 and "threshold.mode: must be one of" in r.stdout
    r = bench("--quality", "0")
    assert r.returncode == 2 and "must be a percentage in (0, 100]" in r.stderr
