"""`shardsched up`: it says where its logs are, and every process writes there."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def free_ports_config(path: Path) -> None:
    cfg = {"dispatcher": {"port": 0, "metricsPort": 0},
           "shards": {"count": 2, "basePort": 0, "metricsBasePort": 0},
           "binders": {"basePort": 0, "metricsBasePort": 0}}
    path.write_text(yaml.safe_dump(cfg))


def test_up_prints_its_log_directory_and_each_process_logs_there(tmp_path):
    free_ports_config(tmp_path / "cfg.yaml")
    logs = tmp_path / "logs"
    proc = subprocess.Popen([sys.executable, "-m", "common.cli", "up", "--config", str(tmp_path / "cfg.yaml"),
                             "--nodes", "20", "--log-dir", str(logs)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = []
    try:
        deadline = time.monotonic() + 60
        while not out or not out[-1].startswith("running"):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(out)
            out.append(proc.stdout.readline())
        assert out[0] == f"logs: {logs}\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, "".join(out) + rest
    names = sorted(p.name for p in logs.iterdir())
    assert names == ["binder-0.log", "dispatcher-0.log", "shard-0.log", "shard-1.log"]
    for name in names:
        text = (logs / name).read_text()
        assert "holds its lease" in text and "shutting down" in text, name
