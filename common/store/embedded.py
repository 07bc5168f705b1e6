"""A private `redis-server` for runs without `--store`: started on a free loopback port with
persistence off, and stopped when the block ends."""
from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import redis

from ..errors import StoreUnavailable

_NOT_INSTALLED = "redis-server not found; install the Debian package redis-server (make run does this)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: on Linux, ask for SIGTERM when our process dies, so a
    kill -9 of the CLI does not leave an orphaned redis-server behind."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


class EmbeddedRedis:
    """`with EmbeddedRedis() as server: open_store(server.url)`.

    The port is chosen by binding port 0 and releasing it, so another process could grab it
    before redis-server does; startup is therefore retried on a new port a few times.
    """

    def __init__(self, executable: str = "redis-server", startup_timeout: float = 10.0, attempts: int = 3):
        self.executable = executable
        self.startup_timeout = startup_timeout
        self.attempts = attempts
        self.url: str | None = None
        self._proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> EmbeddedRedis:
        path = shutil.which(self.executable)
        if path is None:
            raise StoreUnavailable(_NOT_INSTALLED)
        self._dir = tempfile.TemporaryDirectory(prefix="shardsched-redis-")
        try:
            for _ in range(self.attempts):
                if self._start(path, _free_port()):
                    return self
            raise StoreUnavailable(f"redis-server did not start: {self._log_tail()}")
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def _start(self, path: str, port: int) -> bool:
        """Start on `port` and wait for PING; False if the server exited (port taken)."""
        with open(f"{self._dir.name}/redis.log", "wb") as log:
            self._proc = subprocess.Popen(
                [path, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--daemonize", "no", "--dir", self._dir.name],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1)
        deadline = time.monotonic() + self.startup_timeout
        try:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    return False
                try:
                    client.ping()
                    self.url = url
                    return True
                except redis.ConnectionError:
                    time.sleep(0.02)
        finally:
            client.close()
        raise StoreUnavailable(f"redis-server did not answer within {self.startup_timeout:g}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        with open(f"{self._dir.name}/redis.log", "rb") as f:
            lines = f.read().decode(errors="replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "no output"

    def stop(self) -> None:
        """Terminate (kill if it lingers) and remove the temp dir; safe to call twice."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
