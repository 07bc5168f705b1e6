"""`shardsched config validate|convert`, and kube-scheduler's own default configuration
(written by the real kube-scheduler binary) validated, converted and run: through `simulate`
and through the dispatcher, a shard and a binder as processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from benchmarks.kube_cluster import kube_bin_dir
from builders import node, pod
from common import config
from common.tools import fleet
from common.store import open_store
from common.store.embedded import EmbeddedRedis
from common.tools.verify import verify_store

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def shardsched(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "common.cli", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def kube_default(tmp_path_factory) -> Path:
    """`kube-scheduler --write-config-to`: kube-scheduler v1.37's full default configuration."""
    path = tmp_path_factory.mktemp("kube") / "kube-scheduler-defaults.yaml"
    done = subprocess.run([str(kube_bin_dir() / "kube-scheduler"), "--master", "http://127.0.0.1:1",
                           "--write-config-to", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and path.exists(), done.stderr[-2000:]
    return path


def test_validate_exit_statuses(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("threshold:\n  mode: kube\n")
    bad.write_text("threshold:\n  rejectionDecay: .nan\n")
    done = shardsched("config", "validate", str(good))
    assert (done.returncode, done.stdout) == (0, f"{good}: valid\n")
    done = shardsched("config", "validate", str(bad))
    assert done.returncode == 1
    assert done.stderr == "shardsched: error: config: threshold.rejectionDecay: must be a finite number, got nan\n"
    assert shardsched("config", "validate", str(tmp_path / "missing.yaml")).returncode == 2


def test_kube_schedulers_default_configuration_validates_with_notes(kube_default):
    doc = yaml.safe_load(kube_default.read_text())
    assert doc["kind"] == "KubeSchedulerConfiguration" and doc["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    done = shardsched("config", "validate", str(kube_default))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{kube_default}: valid\n"
    notes = done.stderr.splitlines()
    assert f"{kube_default}: note: enableProfiling: shardsched serves no profiling endpoints" in notes
    assert not any("Volume" in n for n in notes)  # kube's volume plugins are shipped now


def test_convert_keeps_kube_volume_plugins_and_their_args(kube_default):
    converted = config.load(str(kube_default))
    profile = converted.profiles[0]
    enabled = [p.name for p in profile.plugins.enabled]
    for plugin in ("SchedulingGates", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"):
        assert plugin in enabled
    args = {c.name: c.args for c in profile.plugin_config}
    assert args["VolumeBinding"]["bindTimeoutSeconds"] == 600


def test_convert_prints_the_equivalent_shardsched_configuration(kube_default, tmp_path):
    done = shardsched("config", "convert", str(kube_default))
    assert done.returncode == 0, done.stderr
    converted = yaml.safe_load(done.stdout)
    assert converted["apiVersion"] == config.API_VERSION
    assert converted == config.load(str(kube_default)).to_dict()
    out = tmp_path / "converted.yaml"
    out.write_text(done.stdout)
    assert config.load(str(out)).to_dict() == converted


def test_kube_schedulers_default_configuration_schedules_pods(kube_default, tmp_path):
    """Pods without a schedulerName (default-scheduler, the default profile's name) spread over
    the nodes as kube's LeastAllocated scoring places them."""
    objs = [node(f"n{i}", cpu="4", memory="8Gi") for i in range(4)]
    objs += [pod(f"p{i}", cpu="500m", memory="256Mi", scheduler=None, status=False) for i in range(8)]
    manifests = tmp_path / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all(objs))
    done = shardsched("simulate", str(manifests), "--config", str(kube_default))
    assert done.returncode == 0, done.stderr
    pods = json.loads(done.stdout)["pods"]
    assert all(p["status"] == "Bound" for p in pods.values()), pods
    assert sorted({p["node"] for p in pods.values()}) == ["n0", "n1", "n2", "n3"]


def test_kube_schedulers_default_configuration_runs_the_processes(kube_default, tmp_path):
    """The dispatcher, a shard and a binder, each reading the kube file itself (`--config`)."""
    with EmbeddedRedis() as server:
        store = open_store(server.url)
        procs = []
        try:
            store.create_many(fleet.generate(20, "uniform", seed=1))
            for role in ("binder", "shard", "dispatcher"):
                log = open(tmp_path / f"{role}.log", "wb")
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", role, "--config", str(kube_default), "--id", "0", "--store", server.url,
                     "--port", "0", "--metrics-port", "0"], cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT))
                log.close()
            for i in range(40):
                store.create(pod(f"p{i}", cpu="100m", memory="64Mi", scheduler=None, status=False))
            deadline = time.monotonic() + 90
            while sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName")) < 40:
                assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                    "\n".join((tmp_path / f"{r}.log").read_text()[-1500:] for r in ("binder", "shard", "dispatcher"))
                time.sleep(0.2)
            assert verify_store(store)["ok"]
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
            store.close()
    shard_log = (tmp_path / "shard.log").read_text()
    assert "config: enableProfiling: shardsched serves no profiling endpoints" in shard_log
