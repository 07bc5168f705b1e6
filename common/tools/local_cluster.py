"""Binders, shards and a dispatcher as child processes on this machine (`python -m ROLE`),
sharing one store and one config: what `shardsched up`, `shardsched bench` and the fault
tests run. The tests and benchmarks use it to start, kill -9 and restart single processes,
and `up` to restart the ones that die (`supervise`).

Each process logs to `<log_dir>/<role>-<id>.log`. Secrets stay off the command lines (any
local user can read /proc/PID/cmdline): the store URL, which may carry a password, goes to
the children in their config file, in a directory only our user can read, and so does the
token their links authenticate with (`security.mode: token`, generated here unless the
config chose credentials).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

import grpc

from .. import config as config_mod
from ..runtime import orphans
from ..runtime.component import status_of
from ..scheduling.partition import PARTITION_ROLE
from ..runtime.security import Security, new_token
from ..store import open_configured

ROLES = ("binder", "shard", "dispatcher")
#: A process that dies is restarted after a delay doubling from the first to the last, reset
#: once it has run for RESET_BACKOFF_S (as the kubelet's CrashLoopBackOff).
FIRST_BACKOFF_S, MAX_BACKOFF_S, RESET_BACKOFF_S = 1.0, 30.0, 60.0


def private_file(path: str, text: str) -> str:
    """Write `text` to a file only our user can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return path


#: How long `start` and `wait_ready` wait for every process to be ready. A process that exits
#: is reported at once (check_running), so this only bounds one that hangs; on a busy
#: two-core machine five Python processes importing grpc and numpy at once took more than
#: the 30 s this used to be.
READY_TIMEOUT_S = 120.0


class LocalCluster:
    def __init__(self, cfg: config_mod.Config, url: str, seed: int = 0, log_dir: str | None = None,
                 free_metrics_ports: bool = False, verbosity: int = 0, role_urls: dict | None = None):
        """Without `log_dir`, logs go to a temporary directory removed by `stop()`;
        `role_urls` gives a role its own store URL (a kubeconfig per ServiceAccount, say)."""
        self._tmp = tempfile.TemporaryDirectory(prefix="shardsched-")
        cfg = cfg.replace(store={"url": url})
        if cfg.security.mode == "none":
            cfg = cfg.replace(security={"mode": "token", "token_file": private_file(
                os.path.join(self._tmp.name, "token"), new_token())})
        self.cfg = cfg
        self.security = Security.from_config(cfg.security)
        #: Serve metrics on any free port (tests and benchmarks beside a running `up`).
        self.free_metrics_ports = free_metrics_ports
        self.url = url
        self.seed = seed
        self.verbosity = verbosity
        self.log_dir = log_dir or self._tmp.name
        os.makedirs(self.log_dir, exist_ok=True)
        self.config_path = private_file(os.path.join(self._tmp.name, "config.yaml"), config_mod.dump(cfg))
        self.role_configs = {}
        for role, role_url in (role_urls or {}).items():
            own = cfg.replace(store={"url": role_url})
            self.role_configs[role] = private_file(os.path.join(self._tmp.name, f"config-{role}.yaml"),
                                                   config_mod.dump(own))
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}
        #: (role, index) -> [started at, restarts in a row, restart due at (None: running)]
        self._life: dict[tuple[str, int], list] = {}

    def counts(self) -> dict[str, int]:
        return {"binder": self.cfg.binders.count, "shard": self.cfg.shards.count,
                "dispatcher": 1}

    def log_path(self, role: str, index: int) -> str:
        return os.path.join(self.log_dir, f"{role}-{index}.log")

    def start_one(self, role: str, index: int, env: dict | None = None) -> subprocess.Popen:
        """Start one process; `env` adds environment variables (the fault tests' failpoints)."""
        cmd = [sys.executable, "-m", role, "--config", self.role_configs.get(role, self.config_path), "--id", str(index),
               "--seed", str(self.seed), "-v", str(self.verbosity)]
        if self.free_metrics_ports:
            cmd += ["--metrics-port", "0"]
        log = open(self.log_path(role, index), "ab")
        # the child dies with us (common/runtime/orphans.py)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {}), **orphans.child_env()})
        log.close()
        self.procs[(role, index)] = proc
        life = self._life.setdefault((role, index), [0.0, 0, None])
        life[0], life[2] = time.monotonic(), None
        return proc

    def supervise(self) -> list[str]:
        """Restart the processes that exited, each after its backoff; returns one line per
        exit and restart, for the caller to print."""
        now, said = time.monotonic(), []
        for (role, i), proc in list(self.procs.items()):
            life = self._life[(role, i)]
            if life[2] is None and proc.poll() is not None:
                life[1] = 1 if now - life[0] >= RESET_BACKOFF_S else life[1] + 1
                delay = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (life[1] - 1))
                life[2] = now + delay
                said.append(f"{role} {i} exited with status {proc.returncode}; restarting in {delay:g} s "
                            f"(see {self.log_path(role, i)})")
            elif life[2] is not None and now >= life[2]:
                proc = self.start_one(role, i)
                said.append(f"{role} {i} restarted (pid {proc.pid})")
        return said

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        for role in ROLES:
            for i in range(self.counts()[role]):
                self.start_one(role, i)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> dict:
        """Block until every process holds its lease, every binder partition is held, no
        binder holds more than its share (a binder that started first takes them all, then
        hands the others over), and the dispatcher streams to every shard; returns role ->
        {id: address}."""
        store = open_configured(self.cfg, self.url)
        try:
            deadline = time.monotonic() + timeout
            while True:
                leases = {role: store.list_leases(role) for role in ROLES}
                partitions = store.list_leases(PARTITION_ROLE)
                share = -(-self.cfg.binders.count // max(1, len(leases["binder"])))
                if (all(len(leases[r]) >= n for r, n in self.counts().items())
                        and len(partitions) >= self.cfg.binders.count
                        and max(Counter(partitions.values()).values(), default=0) <= share
                        and self._dispatcher_linked(leases)):
                    return leases
                self.check_running()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"processes not ready after {timeout} s: {leases}")
                time.sleep(0.1)
        finally:
            store.close()

    def check_running(self) -> None:
        """Raise if a process exited while it should be starting or running, naming its log."""
        for (role, i), proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{role} {i} exited with status {proc.returncode}; "
                                   f"see {self.log_path(role, i)}")

    def _dispatcher_linked(self, leases: dict) -> bool:
        """The dispatcher holds a stream to every shard, so pods will be spread over all."""
        try:
            reply = self.status("dispatcher", leases["dispatcher"]["0"])
        except grpc.RpcError:
            return False
        linked = [q for q in reply.queues if q.startswith("in_flight_shard_")]
        return len(linked) >= self.counts()["shard"]

    def kill(self, role: str, index: int) -> None:
        """kill -9: no goodbye, no lease drop."""
        proc = self.procs[(role, index)]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop(self, timeout: float = 10.0) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._tmp.cleanup()

    def status(self, role: str, address: str):
        """The Status reply of one of the processes (`role` is for the caller's reading)."""
        return status_of(address, self.security)
