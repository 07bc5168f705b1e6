"""`shardsched up` (every process on this machine), `shardsched top` (their live table) and
`shardsched dispatcher|shard|binder` (one process, as `python -m ROLE` runs it)."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import time

from .. import config as config_mod
from ..tools import fleet as fleet_mod
from ..runtime import runner
from ..tools.local_cluster import ROLES, LocalCluster, private_file
from ..runtime.security import Security
from ..store import configured_url, implied_url, open_configured
from .errors import EXIT_REJECTED, fail


def register(sub: argparse._SubParsersAction) -> None:
    u = sub.add_parser("up", help="run the store, dispatcher, shards and binders on this machine")
    u.add_argument("--config", help="configuration file (default: built-in defaults)")
    u.add_argument("--store", help="store URL (default: store.url, else an embedded redis-server)")
    u.add_argument("--shards", type=int, help="number of shard processes (overrides shards.count)")
    u.add_argument("--binders", type=int, help="number of binder processes (overrides binders.count)")
    u.add_argument("--nodes", type=int, default=0, help="first write a kwok-style fleet of N nodes")
    u.add_argument("--profile", choices=fleet_mod.PROFILES, default="mixed")
    u.add_argument("--seed", type=int, default=0)
    u.add_argument("--log-dir", help="one log file per process here (default: a new directory "
                                     "under the system's temporary directory, printed at start)")
    u.add_argument("-v", "--verbosity", type=int, default=0, metavar="N", help="the processes' log verbosity")
    u.set_defaults(handler=cmd_up)

    t = sub.add_parser("top", help="live table of the shards and binders (from their Status calls)")
    t.add_argument("--config", help="configuration file (its store.url finds the processes)")
    t.add_argument("--store", help="store URL whose leases list the processes")
    t.add_argument("--dispatcher", metavar="ADDR", help="ask this dispatcher (host:port) instead")
    t.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    t.add_argument("--iterations", type=int, help="stop after this many refreshes")
    t.set_defaults(handler=cmd_top)

    for role in ("dispatcher", "shard", "binder"):
        r = sub.add_parser(role, help=f"run one {role} process, as in a cluster (= python -m {role})")
        runner.add_arguments(r)
        r.set_defaults(handler=cmd_role)


def cmd_role(args) -> int:
    """One component process; the role's `build` is imported only here."""
    if args.cmd == "dispatcher":
        from dispatcher.server import build
    elif args.cmd == "shard":
        from shard.server import build
    else:
        from binder.server import build
    return runner.run(args.cmd, args, build)


def cmd_up(args) -> int:
    """Everything on this machine until Ctrl-C or SIGTERM; one log file per process in a
    directory that outlives the run (printed first, so a failed start can be read).

    Like a kubelet, it restarts a process that dies (with a growing backoff) and keeps the
    others running. The embedded redis-server gets a random password and the processes a
    token for their links; both go to `<log dir>/config.yaml`, readable by our user only,
    for `get`, `verify` and `top --config`, and never onto a command line."""
    from ..store.embedded import EmbeddedRedis  # redis-py: only when the command runs
    from ..store.redis_store import redacted

    cfg = config_mod.load(args.config)
    if args.shards is not None:
        cfg = cfg.replace(shards={"count": args.shards})
    if args.binders is not None:
        cfg = cfg.replace(binders={"count": args.binders})
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="shardsched-up-")
    os.makedirs(log_dir, exist_ok=True)
    print(f"logs: {log_dir}", flush=True)
    stopping = []
    # every exit we can see stops the children and removes the secrets' directory (the
    # children also die with us on a kill -9: common/local_cluster.die_with_parent)
    def stop(*_):
        if not stopping:  # the first one interrupts whatever runs (a start, say); later ones wait
            stopping.append(True)
            raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    with contextlib.ExitStack() as stack:
        url = args.store or implied_url(cfg) or stack.enter_context(EmbeddedRedis(password=True)).url
        store = open_configured(cfg, url)
        stack.callback(store.close)
        if args.nodes:
            errors = store.create_many(fleet_mod.generate(args.nodes, args.profile, args.seed))
            print(f"fleet: {args.nodes} {args.profile} nodes written ({len(errors)} rejected)")
        cluster = LocalCluster(cfg, url, args.seed, log_dir=log_dir, verbosity=args.verbosity)
        try:
            try:
                cluster.start()
                leases = cluster.wait_ready()
            except (RuntimeError, TimeoutError) as e:  # a process exited or never got ready
                return fail(f"{e}", EXIT_REJECTED)
            print(f"store: {redacted(url)}")
            users_config = private_file(os.path.join(log_dir, "config.yaml"), config_mod.dump(cluster.cfg))
            print(f"config: {users_config} (store URL and credentials, for get, verify and top --config)")
            for role in ROLES:
                for id_, address in sorted(leases[role].items()):
                    reply = cluster.status(role, address)
                    print(f"{role} {id_}: pid {cluster.procs[(role, int(id_))].pid}, grpc {address}"
                          + (f", metrics {reply.metrics}" if reply.metrics else "")
                          + f", log {cluster.log_path(role, int(id_))}")
            print("running; Ctrl-C or SIGTERM stops everything", flush=True)
            while not stopping:
                for line in cluster.supervise():
                    print(line, file=sys.stderr, flush=True)
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        finally:
            cluster.stop()
    return 0


def cmd_top(args) -> int:
    """The live table, until Ctrl-C (or --iterations refreshes); a dispatcher that does not
    answer (no credentials, not running) is one line naming it and the remedy."""
    import grpc

    from ..tools import top

    store = None
    cfg = config_mod.load(args.config)
    if not args.dispatcher:
        store = open_configured(cfg, configured_url(args.store, cfg, args.cmd))
    try:
        top.run(args.dispatcher, store, Security.from_config(cfg.security), args.interval, args.iterations)
    except grpc.RpcError as e:  # only the dispatcher's own Status raises: a process's shows as a row
        return fail(top.refusal(args.dispatcher, e))
    finally:
        if store is not None:
            store.close()
    return 0
