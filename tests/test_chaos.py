"""Chaos under `shardsched up`: 200 nodes, 3,000 pods, 3 shards. While pods flow, kill -9 a
shard, the binder and the dispatcher in turn (up restarts each), and restart Redis once (its
AOF fsynced on every write, as a production Redis would be run). Every pod ends bound
exactly once, and `verify --settled` finds no violation and no pod left behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import yaml

from builders import numbered_pod as pod
from common.store import open_store
from common.store.embedded import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent
PODS, BATCH = 3000, 500


def shardsched(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "common.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_kill_9_of_every_process_and_a_redis_restart_lose_no_pod(tmp_path):
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
        "dispatcher": {"port": 0, "metricsPort": None, "redispatchAfterSeconds": 5, "shardTimeoutSeconds": 2},
        "shards": {"count": 3, "basePort": 0, "metricsBasePort": None},
        "binders": {"basePort": 0, "metricsBasePort": None, "leaseDurationSeconds": 2}}))
    with EmbeddedRedis(appendonly=True, password=True) as server:
        up = subprocess.Popen([sys.executable, "-m", "common.cli", "up", "--config", str(tmp_path / "cfg.yaml"),
                               "--store", server.url, "--nodes", "200", "--log-dir", str(tmp_path / "logs")],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        store = None
        try:
            out = []
            deadline = time.monotonic() + 90
            while not out or not out[-1].startswith("running"):
                assert time.monotonic() < deadline and up.poll() is None, "".join(out)
                out.append(up.stdout.readline())
            pids = {line.split(":")[0]: int(line.split("pid ")[1].split(",")[0]) for line in out if ": pid " in line}
            store = open_store(server.url)
            faults = [lambda: os.kill(pids["shard 0"], signal.SIGKILL),
                      lambda: os.kill(pids["binder 0"], signal.SIGKILL),
                      lambda: os.kill(pids["dispatcher 0"], signal.SIGKILL),
                      lambda: server.restart(down_s=1.0)]
            for batch in range(PODS // BATCH):
                assert not store.create_many([pod(i) for i in range(batch * BATCH, (batch + 1) * BATCH)])
                time.sleep(0.3)  # the batch is being scheduled when the fault strikes
                if batch < len(faults):
                    faults[batch]()
            deadline = time.monotonic() + 180
            while (bound := sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName"))) < PODS:
                assert time.monotonic() < deadline, f"only {bound}/{PODS} bound"
                assert up.poll() is None, "up stopped"
                time.sleep(0.5)
            done = shardsched("verify", "--json", "--settled", "30", "--store", server.url)
            report = orjson.loads(done.stdout)
            assert done.returncode == 0 and report["ok"], report["violations"][:5]
            assert (report["bound"], report["pending"]) == (PODS, 0)
        finally:
            if store is not None:
                store.close()
            up.send_signal(signal.SIGTERM)
            rest, _ = up.communicate(timeout=60)
        restarts = [line for line in rest.splitlines() if " restarted (pid " in line]
        assert {line.split(" restarted")[0] for line in restarts} >= {"shard 0", "binder 0", "dispatcher 0"}, rest
