"""`shardsched top` as a user runs it: against processes whose ports ask for a token, and
with its output going to a file or pipe rather than a terminal."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from builders import LiveBinder, make_config, node
from common import config as config_mod
from common.store.memory import MemoryStore

SHARDSCHED = Path(sys.executable).with_name("shardsched")


@pytest.fixture
def token_process(tmp_path):
    """A process (a binder) whose gRPC port asks for a token, and the config file that has it."""
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    cfg = make_config(security={"mode": "token", "tokenFile": str(token)})
    store = MemoryStore()
    store.create(node("n1"))
    binder = LiveBinder(store, cfg)
    path = tmp_path / "config.yaml"
    path.write_text(config_mod.dump(cfg))
    try:
        yield binder.server.address, str(path)
    finally:
        binder.close()


def top(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([str(SHARDSCHED), "top", *argv], capture_output=True, text=True, timeout=120)


def test_top_without_the_token_says_so_in_one_line_with_the_hint(token_process):
    address, _ = token_process
    done = top("--dispatcher", address, "--iterations", "1")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert address in done.stderr and "UNAUTHENTICATED" in done.stderr and "--config" in done.stderr


def test_top_to_a_pipe_keeps_whole_column_names(token_process):
    """Not a terminal, rich would cut the table to 80 columns ("pro…", "sha…")."""
    address, path = token_process
    done = top("--dispatcher", address, "--config", path, "--iterations", "1")
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "process" in line)
    cells = [c.strip() for c in header.strip("┃│ ").replace("┃", "│").split("│")]
    assert cells == ["process", "pods/s", "active", "backoff", "unschedulable", "in flight", "attempts",
                     "bound", "conflicts", "threshold", "p99 cycle ms", "uptime s"], header
