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
    cfg = {"dispatcher": {"port": 0, "metricsPort": None},
           "shards": {"count": 2, "basePort": 0, "metricsBasePort": None},
           "binders": {"basePort": 0, "metricsBasePort": None}}
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
    names = sorted(p.name for p in logs.iterdir() if p.suffix == ".log")
    assert names == ["binder-0.log", "dispatcher-0.log", "shard-0.log", "shard-1.log"]
    assert (logs / "config.yaml").stat().st_mode & 0o077 == 0  # it holds the credentials
    for name in names:
        text = (logs / name).read_text()
        assert "holds its lease" in text and "shutting down" in text, name


def _start_up(tmp_path, *extra) -> tuple[subprocess.Popen, list[str]]:
    """`shardsched up` with free ports; returns it and its output up to "running"."""
    free_ports_config(tmp_path / "cfg.yaml")
    proc = subprocess.Popen([sys.executable, "-m", "common.cli", "up", "--config", str(tmp_path / "cfg.yaml"),
                             "--log-dir", str(tmp_path / "logs"), *extra], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out: list[str] = []
    deadline = time.monotonic() + 60
    while not out or not out[-1].startswith("running"):
        assert time.monotonic() < deadline and proc.poll() is None, "".join(out)
        out.append(proc.stdout.readline())
    return proc, out


def _descendants(pid: int) -> list[int]:
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def test_up_restarts_a_process_that_dies_and_keeps_the_rest_running(tmp_path):
    """kill -9 of a shard and of the binder under `up`: each is restarted (with backoff) and
    pods keep being bound; `up` used to stop everything when one process died. No process
    shows the store's password or the links' token on its command line."""
    from common import config as config_mod
    from common.store import open_configured
    from builders import numbered_pod

    proc, out = _start_up(tmp_path, "--nodes", "30")
    try:
        pids = {line.split(":")[0]: int(line.split("pid ")[1].split(",")[0]) for line in out if ": pid " in line}
        cfg = config_mod.load(str(tmp_path / "logs" / "config.yaml"))
        secrets = [cfg.store.url.split(":")[2].split("@")[0], (Path(cfg.security.token_file).read_text())]
        for pid in _descendants(proc.pid):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            assert not any(s in cmdline for s in secrets), cmdline
        for name in ("shard 0", "binder 0"):
            os.kill(pids[name], signal.SIGKILL)
        said = []
        deadline = time.monotonic() + 60
        while sum("restarted" in line for line in said) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "".join(out + said)
            said.append(proc.stdout.readline())
        assert any(line.startswith("shard 0 exited with status -9; restarting in 1 s") for line in said), said
        store = open_configured(cfg, cfg.store.url)
        store.create_many([numbered_pod(i) for i in range(300)])
        deadline = time.monotonic() + 60
        while sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName")) < 300:
            assert time.monotonic() < deadline, "pods not bound after the restarts"
            time.sleep(0.2)
        store.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_up_that_cannot_start_says_why_and_keeps_its_logs(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
            "dispatcher": {"port": 0, "metricsPort": None},
            "shards": {"basePort": 0, "metricsBasePort": None},
            "binders": {"basePort": taken.getsockname()[1], "metricsBasePort": None}}))
        done = subprocess.run([sys.executable, "-m", "common.cli", "up", "--config", str(tmp_path / "cfg.yaml"),
                               "--log-dir", str(tmp_path / "logs")], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"logs: {tmp_path / 'logs'}\n")
    assert "binder 0 exited with status" in done.stderr and "Traceback" not in done.stderr
    assert "cannot listen" in (tmp_path / "logs" / "binder-0.log").read_text()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper is dead)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _secrets_dir(pid: int) -> Path:
    """Where a child of `up` reads its config (the store's password, the links' token)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return Path(args[args.index("--config") + 1]).parent


def test_kill_9_of_up_leaves_no_process_behind(tmp_path):
    """The children die with `up` (PR_SET_PDEATHSIG): they used to keep running, retrying a
    dead store, after a kill -9 of `up` (only the embedded redis-server died with it)."""
    proc, out = _start_up(tmp_path, "--nodes", "10")
    children = _descendants(proc.pid)
    assert len(children) >= 5, out  # redis-server, a binder, two shards, the dispatcher
    proc.kill()
    proc.communicate(timeout=30)
    killed = time.monotonic()
    while alive := [pid for pid in children if _alive(pid)]:
        assert time.monotonic() - killed < 20, f"left running after kill -9 of up: {alive}"
        time.sleep(0.1)
    print(f"every child of up gone {time.monotonic() - killed:.2f} s after its kill -9")


def test_sighup_of_up_stops_everything_and_removes_its_secrets(tmp_path):
    """A closed terminal (SIGHUP) is an exit `up` sees: it stops its children and removes the
    directory holding the store's password and the token, as on Ctrl-C and SIGTERM (SIGHUP
    used to kill `up` at once, leaving both)."""
    proc, out = _start_up(tmp_path)
    children = _descendants(proc.pid)
    secrets = {_secrets_dir(pid) for pid in children if b"--config" in Path(f"/proc/{pid}/cmdline").read_bytes()}
    assert len(secrets) == 1 and next(iter(secrets)).exists()
    proc.send_signal(signal.SIGHUP)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert not any(_alive(pid) for pid in children)
    assert not any(d.exists() for d in secrets)
