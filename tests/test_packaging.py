"""The image's build steps on this machine (no Docker engine runs here): the build stage of
deploy/Dockerfile, its COPY and RUN lines as they are, into a fresh virtualenv under a
temporary directory instead of /opt/shardsched. So the dependencies install from
requirements.lock with every hash checked, the wheel builds from the copied sources alone,
and the installed `shardsched` runs from outside the repository: `--help` and a small
`simulate`. pip's own cache is kept (the first run on a machine downloads the dependencies).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

import builders

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
LOCK = ROOT / "requirements.lock"
INSTALL_S = 1800  # every dependency, on two busy cores, perhaps from the registry


def build_stage() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile's first stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stage, steps = 0, []
    for line in text.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word == "FROM":
            stage += 1
        elif stage == 1 and word in ("COPY", "RUN"):
            steps.append((word, rest.strip()))
    return steps


def run(argv, cwd: Path, timeout: float = 300, shell: bool = False) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR")}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, shell=shell)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def locked() -> dict[str, str]:
    """name -> version pinned in requirements.lock (names normalised as pip does)."""
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", LOCK.read_text(), re.M)
    return {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in pins}


def test_the_lock_pins_every_dependency_with_hashes():
    """Every runtime dependency of pyproject.toml, and setuptools (the build backend), is pinned
    to one version with at least one sha256; pip --require-hashes would refuse anything else."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in project["project"]["dependencies"]]
    wanted += [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in project["build-system"]["requires"]]
    pins = locked()
    assert [w for w in wanted if re.sub(r"[-_.]+", "-", w).lower() not in pins] == []
    hashed = re.findall(r"^(\S+)==\S+ \\\n(?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+", LOCK.read_text(), re.M)
    assert len(hashed) == len(pins)


def test_the_dockerfile_installs_from_the_lock_with_hashes():
    runs = [args for word, args in build_stage() if word == "RUN"]
    assert any("--require-hashes -r requirements.lock" in r for r in runs), runs
    assert any("--no-build-isolation" in r and "--no-deps" in r for r in runs), runs


def test_the_wheel_installs_and_runs_from_a_clean_venv(tmp_path):
    src, venv, elsewhere = tmp_path / "src", tmp_path / "venv", tmp_path / "elsewhere"
    src.mkdir()
    elsewhere.mkdir()
    run([sys._base_executable, "-m", "venv", str(venv)], tmp_path)
    for word, args in build_stage():
        if word == "COPY":
            *sources, dest = args.split()
            for s in sources:
                target = src / dest / Path(s).name if dest.endswith("/") else src / dest
                copy = shutil.copytree if (ROOT / s).is_dir() else shutil.copy
                copy(ROOT / s, target)
        elif not args.startswith("python -m venv"):  # the venv is made above, from this Python
            command = args.replace("/opt/shardsched", str(venv)).replace("/tmp/dist", str(tmp_path / "dist"))
            run(command, src, INSTALL_S, shell=True)
    where = run([str(venv / "bin/python"), "-c", "import common, shard; print(common.__file__, shard.__file__)"],
                elsewhere)
    assert all(p.startswith(str(venv)) for p in where.split()), where
    assert "simulate" in run([str(venv / "bin/shardsched"), "--help"], elsewhere)
    manifests = elsewhere / "cluster.yaml"
    manifests.write_text(yaml.safe_dump_all([builders.manifest_node("n1", cpu="2"),
                                             builders.manifest_pod("fits", cpu="1"),
                                             builders.manifest_pod("too-big", cpu="4")]))
    out = json.loads(run([str(venv / "bin/shardsched"), "simulate", str(manifests), "--config", str(config(elsewhere))],
                         elsewhere))
    assert out["pods"]["default/fits"]["status"] == "Bound" and out["pods"]["default/fits"]["node"] == "n1"
    assert out["pods"]["default/too-big"]["status"] == "Unschedulable", out["pods"]["default/too-big"]


def config(directory: Path) -> Path:
    """A KubeSchedulerConfiguration whose lone profile takes the manifests' pods
    (default-scheduler's: they name no scheduler)."""
    path = directory / "config.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    return path
