"""benchmarks/side_process.py: a harness process beside the stack is set up before the clock."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.side_process import SideProcess


def _slow_to_start(path: str, ready, stop, out) -> None:
    time.sleep(0.5)  # imports and first reads
    Path(path).write_text("set up")
    ready.set()
    stop.wait()
    out.send({"done": 1})


def _dies_at_start(ready, stop, out) -> None:
    raise SystemExit(3)


def test_start_returns_once_the_child_is_set_up(tmp_path):
    marker = tmp_path / "marker"
    side = SideProcess("slow", _slow_to_start, (str(marker),), {"done": 0})
    side.start()
    try:
        assert marker.exists(), "start() returned before the child was set up: the clock would include its start"
    finally:
        assert side.stop() == {"done": 1}


def test_a_child_that_dies_before_it_is_ready_is_an_error():
    side = SideProcess("doomed", _dies_at_start, (), {"done": 0})
    with pytest.raises(RuntimeError, match="doomed process did not get ready .exit code 3"):
        side.start()
