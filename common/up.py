"""Running the processes: `shardsched dispatcher|shard|binder` (one component, as it runs in
a cluster) and `shardsched up` (all of them on this machine, as separate OS processes).

`LocalCluster` is the same thing as a Python object, so the benchmark and the fault tests
can start, kill -9 and restart single processes.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time

from . import config as config_mod
from . import fleet as fleet_mod
from .component import channel, stop_on_signals

ROLES = ("binder", "shard", "dispatcher")


def store_url(args, cfg: dict) -> str:
    url = args.store or cfg["store"]["url"]
    if not url:
        raise ValueError(f"{args.cmd} needs a store: give --store URL or store.url in the config")
    return url


def run_component(args) -> int:
    """`shardsched dispatcher|shard|binder --config FILE --id N`: one process, until signalled."""
    from .store import open_store, store_options

    cfg = config_mod.load(args.config)
    store = open_store(store_url(args, cfg), **store_options(cfg))
    index = int(args.id)
    if args.cmd == "binder":
        from binder.server import BinderServer
        component = BinderServer(cfg, store, index, port=args.port, metrics_port=args.metrics_port)
    elif args.cmd == "shard":
        from shard.server import ShardServer
        component = ShardServer(cfg, store, index, port=args.port, seed=args.seed,
                                metrics_port=args.metrics_port)
    else:
        from dispatcher.server import Dispatcher
        component = Dispatcher(cfg, store, port=args.port, seed=args.seed, metrics_port=args.metrics_port)
    stop_on_signals(component)
    try:
        component.run()
    finally:
        store.close()
    return 0


class LocalCluster:
    """Binders, shards and a dispatcher as child processes sharing one store and config."""

    def __init__(self, cfg: dict, url: str, seed: int = 0, log_dir: str | None = None,
                 free_metrics_ports: bool = False):
        self.cfg = cfg
        #: Serve metrics on any free port (tests and benchmarks beside a running `up`).
        self.free_metrics_ports = free_metrics_ports
        self.url = url
        self.seed = seed
        self._tmp = tempfile.TemporaryDirectory(prefix="shardsched-")
        self.log_dir = log_dir or self._tmp.name
        self.config_path = os.path.join(self._tmp.name, "config.yaml")
        with open(self.config_path, "w") as fh:
            fh.write(config_mod.dump(cfg))
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}

    def counts(self) -> dict[str, int]:
        return {"binder": self.cfg["binders"]["count"], "shard": self.cfg["shards"]["count"],
                "dispatcher": 1}

    def start_one(self, role: str, index: int) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "common.cli", role, "--config", self.config_path,
               "--id", str(index), "--store", self.url, "--seed", str(self.seed)]
        if self.free_metrics_ports:
            cmd += ["--metrics-port", "0"]
        log = open(os.path.join(self.log_dir, f"{role}-{index}.log"), "ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs[(role, index)] = proc
        return proc

    def start(self, timeout: float = 30.0) -> None:
        for role in ROLES:
            for i in range(self.counts()[role]):
                self.start_one(role, i)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 30.0) -> dict:
        """Block until every process holds its lease; returns role -> {id: address}."""
        from .store import open_store, store_options

        store = open_store(self.url, **store_options(self.cfg))
        try:
            deadline = time.monotonic() + timeout
            while True:
                leases = {role: store.list_leases(role) for role in ROLES}
                if (all(len(leases[r]) >= n for r, n in self.counts().items())
                        and self._dispatcher_linked(leases)):
                    return leases
                for (role, i), proc in self.procs.items():
                    if proc.poll() is not None:
                        raise RuntimeError(f"{role} {i} exited with status {proc.returncode}; "
                                           f"see {self.log_dir}/{role}-{i}.log")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"processes not ready after {timeout} s: {leases}")
                time.sleep(0.1)
        finally:
            store.close()

    def _dispatcher_linked(self, leases: dict) -> bool:
        """The dispatcher holds a stream to every shard, so pods will be spread over all."""
        import grpc

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
        from proto import shardsched_pb2 as pb
        from proto import shardsched_pb2_grpc as rpc

        with channel(address) as ch:
            return rpc.ComponentStub(ch).Status(pb.StatusRequest(), timeout=5)


def run_up(args) -> int:
    """`shardsched up`: everything on this machine until Ctrl-C or SIGTERM."""
    from .store import open_store, store_options
    from .store.embedded import EmbeddedRedis

    cfg = config_mod.load(args.config)
    if args.shards is not None:
        cfg["shards"]["count"] = args.shards
    if args.binders is not None:
        cfg["binders"]["count"] = args.binders
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    with contextlib.ExitStack() as stack:
        url = args.store or cfg["store"]["url"] or stack.enter_context(EmbeddedRedis()).url
        store = open_store(url, **store_options(cfg))
        stack.callback(store.close)
        if args.nodes:
            errors = store.create_many(fleet_mod.generate(args.nodes, args.profile, args.seed))
            print(f"fleet: {args.nodes} {args.profile} nodes written ({len(errors)} rejected)")
        cluster = LocalCluster(cfg, url, args.seed)
        try:
            cluster.start()
            leases = cluster.wait_ready()
            print(f"store: {url}")
            for role in ROLES:
                for id_, address in sorted(leases[role].items()):
                    reply = cluster.status(role, address)
                    print(f"{role} {id_}: grpc {address}"
                          + (f", metrics {reply.metrics}" if reply.metrics else ""))
            print("running; Ctrl-C or SIGTERM stops everything")
            while not stopping:
                for (role, i), proc in cluster.procs.items():
                    if proc.poll() is not None:
                        print(f"{role} {i} exited with status {proc.returncode}", file=sys.stderr)
                        stopping.append(True)
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        finally:
            cluster.stop()
    return 0


def run_top(args) -> int:
    """`shardsched top`: the live table, until Ctrl-C (or --iterations refreshes)."""
    from . import top
    from .store import open_store, store_options

    store = None
    if not args.dispatcher:
        cfg = config_mod.load(args.config)
        store = open_store(store_url(args, cfg), **store_options(cfg))
    try:
        top.run(args.dispatcher, store, args.interval, args.iterations)
    finally:
        if store is not None:
            store.close()
    return 0


def add_commands(sub) -> None:
    """Register `up` and the single-component commands on the CLI's subparsers."""
    u = sub.add_parser("up", help="run the store, dispatcher, shards and binders on this machine")
    u.add_argument("--config", help="configuration file (default: built-in defaults)")
    u.add_argument("--store", help="store URL (default: store.url, else an embedded redis-server)")
    u.add_argument("--shards", type=int, help="number of shard processes (overrides shards.count)")
    u.add_argument("--binders", type=int, help="number of binder processes (overrides binders.count)")
    u.add_argument("--nodes", type=int, default=0, help="first write a kwok-style fleet of N nodes")
    u.add_argument("--profile", choices=fleet_mod.PROFILES, default="mixed")
    u.add_argument("--seed", type=int, default=0)
    u.set_defaults(func=run_up)
    t = sub.add_parser("top", help="live table of the shards and binders (from their Status calls)")
    t.add_argument("--config", help="configuration file (its store.url finds the processes)")
    t.add_argument("--store", help="store URL whose leases list the processes")
    t.add_argument("--dispatcher", metavar="ADDR", help="ask this dispatcher (host:port) instead")
    t.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    t.add_argument("--iterations", type=int, help="stop after this many refreshes")
    t.set_defaults(func=run_top)
    for role in ("dispatcher", "shard", "binder"):
        c = sub.add_parser(role, help=f"run one {role} process (as in a cluster)")
        c.add_argument("--config", help="configuration file (default: built-in defaults)")
        c.add_argument("--id", default="0", help="index of this process (shard/binder number)")
        c.add_argument("--store", help="store URL (default: store.url from the config)")
        c.add_argument("--port", type=int, help="gRPC port (default: from the config; 0 = any free port)")
        c.add_argument("--metrics-port", type=int,
                       help="Prometheus metrics port (default: from the config, where 0 = off; "
                            "here 0 = any free port)")
        c.add_argument("--seed", type=int, default=0)
        c.set_defaults(func=run_component)
