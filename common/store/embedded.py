"""A private `redis-server` for runs without `--store`: started on a free loopback port,
and stopped when the block ends.

Persistence is off unless asked for (`appendonly`: an AOF fsynced every write, for fault
tests that restart the server). With `password`, the server requires it: the password goes
into a configuration file only its owner can read, never onto the command line, where any
local user could read it in /proc/PID/cmdline; `url` then carries it.
"""
from __future__ import annotations

import ctypes
import os
import secrets
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

    def __init__(self, executable: str = "redis-server", startup_timeout: float = 10.0, attempts: int = 3,
                 password: str | bool | None = None, appendonly: bool = False):
        """`password`: the one to require, or True for a new random one."""
        self.executable = executable
        self.startup_timeout = startup_timeout
        self.attempts = attempts
        self.password = secrets.token_urlsafe(24) if password is True else (password or None)
        self.appendonly = appendonly
        self.url: str | None = None
        self.port: int | None = None
        self._path: str | None = None
        self._proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None

    @property
    def pid(self) -> int | None:
        """The redis-server's process id while it runs (for CPU and memory figures)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def __enter__(self) -> EmbeddedRedis:
        self._path = shutil.which(self.executable)
        if self._path is None:
            raise StoreUnavailable(_NOT_INSTALLED)
        self._dir = tempfile.TemporaryDirectory(prefix="shardsched-redis-")
        try:
            self._write_conf()
            for _ in range(self.attempts):
                if self._start(_free_port()):
                    return self
            raise StoreUnavailable(f"redis-server did not start: {self._log_tail()}")
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def _write_conf(self) -> None:
        """What the command line must not show: the password (owner-only file)."""
        conf = os.path.join(self._dir.name, "redis.conf")
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            if self.password:
                fh.write(f"requirepass {self.password}\n")

    def _start(self, port: int) -> bool:
        """Start on `port` and wait for PING; False if the server exited (port taken)."""
        with open(f"{self._dir.name}/redis.log", "ab") as log:
            self._proc = subprocess.Popen(
                [self._path, os.path.join(self._dir.name, "redis.conf"), "--port", str(port),
                 "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "always",
                 "--daemonize", "no", "--dir", self._dir.name],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        auth = f":{self.password}@" if self.password else ""
        url = f"redis://{auth}127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1)
        deadline = time.monotonic() + self.startup_timeout
        try:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    return False
                try:
                    client.ping()
                    self.url, self.port = url, port
                    return True
                except redis.ConnectionError:
                    time.sleep(0.02)
        finally:
            client.close()
        raise StoreUnavailable(f"redis-server did not answer within {self.startup_timeout:g}s: {self._log_tail()}")

    def save(self) -> None:
        """Write a snapshot (dump.rdb) now: a later `restart` without an AOF loads it."""
        client = redis.Redis.from_url(self.url)
        try:
            client.save()
        finally:
            client.close()

    def restart(self, down_s: float = 0.0) -> None:
        """kill -9 the server and start it again on the same port and directory after
        `down_s` seconds: it comes back with its AOF (`appendonly`), else the last `save()`,
        else empty."""
        self._proc.kill()
        self._proc.wait()
        time.sleep(down_s)
        if not self._start(self.port):
            raise StoreUnavailable(f"redis-server did not restart on port {self.port}: {self._log_tail()}")

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
