"""`shardsched up` (every process on this machine), `shardsched top` (their live table) and
`shardsched dispatcher|shard|binder` (one process, as `python -m ROLE` runs it)."""
from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import tempfile
import time

from .. import config as config_mod
from .. import fleet as fleet_mod
from .. import runner
from ..local_cluster import ROLES, LocalCluster
from ..store import configured_url, open_configured
from ..store.embedded import EmbeddedRedis


def cmd_role(args) -> int:
    """One component process; the role's `build` is imported only here."""
    build = importlib.import_module(f"{args.cmd}.server").build
    return runner.run(args.cmd, args, build)


def cmd_up(args) -> int:
    """Everything on this machine until Ctrl-C or SIGTERM; one log file per process in a
    directory that outlives the run (printed first, so a failed start can be read)."""
    cfg = config_mod.load(args.config)
    if args.shards is not None:
        cfg["shards"]["count"] = args.shards
    if args.binders is not None:
        cfg["binders"]["count"] = args.binders
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="shardsched-up-")
    os.makedirs(log_dir, exist_ok=True)
    print(f"logs: {log_dir}", flush=True)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    with contextlib.ExitStack() as stack:
        url = args.store or cfg["store"]["url"] or stack.enter_context(EmbeddedRedis()).url
        store = open_configured(cfg, url)
        stack.callback(store.close)
        if args.nodes:
            errors = store.create_many(fleet_mod.generate(args.nodes, args.profile, args.seed))
            print(f"fleet: {args.nodes} {args.profile} nodes written ({len(errors)} rejected)")
        cluster = LocalCluster(cfg, url, args.seed, log_dir=log_dir, verbosity=args.verbosity)
        try:
            cluster.start()
            leases = cluster.wait_ready()
            print(f"store: {url}")
            for role in ROLES:
                for id_, address in sorted(leases[role].items()):
                    reply = cluster.status(role, address)
                    print(f"{role} {id_}: grpc {address}"
                          + (f", metrics {reply.metrics}" if reply.metrics else "")
                          + f", log {cluster.log_path(role, int(id_))}")
            print("running; Ctrl-C or SIGTERM stops everything", flush=True)
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


def cmd_top(args) -> int:
    """The live table, until Ctrl-C (or --iterations refreshes)."""
    from .. import top

    store = None
    if not args.dispatcher:
        cfg = config_mod.load(args.config)
        store = open_configured(cfg, configured_url(args.store, cfg, args.cmd))
    try:
        top.run(args.dispatcher, store, args.interval, args.iterations)
    finally:
        if store is not None:
            store.close()
    return 0
