"""The `shardsched` command line.

Exit codes: 0 success, 1 the command ran but found rejected objects or violations,
2 usage errors (bad flags, unreadable files, invalid config, unreachable store).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

import orjson
import yaml

from . import config as config_mod
from . import fleet as fleet_mod
from .errors import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, StoreUnavailable, print_error


def fail(message: str, code: int = EXIT_USAGE):
    print_error(message)
    raise SystemExit(code)


@contextlib.contextmanager
def open_cluster(url: str | None):
    """The store at `url`, or an embedded redis-server for the duration of the block."""
    from .store import open_store
    from .store.embedded import EmbeddedRedis

    with contextlib.ExitStack() as stack:
        if url is None:
            url = stack.enter_context(EmbeddedRedis()).url
        store = open_store(url)
        stack.callback(store.close)
        yield store


def cmd_fleet(args) -> int:
    try:
        nodes = fleet_mod.generate(args.nodes, args.profile, args.seed)
    except ValueError as e:
        fail(str(e))
    if args.output:
        doc = {"apiVersion": "v1", "kind": "List", "items": nodes}
        if args.output == "yaml":
            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
        else:
            sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    from .objects import parse_node
    from .report import print_fleet_summary

    with open_cluster(args.store) as store:
        start = time.perf_counter()
        errors = store.create_many(nodes)
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        listed, _ = store.list("Node")
        list_s = time.perf_counter() - start
        summary = fleet_mod.summarize([parse_node(d) for d in listed])
    for e in errors:
        print(f"rejected: {e}", file=sys.stderr)
    print_fleet_summary(summary, args.profile, len(nodes), write_s, list_s)
    return EXIT_REJECTED if errors else EXIT_OK


def cmd_config(args) -> int:
    if args.config_cmd == "defaults":
        sys.stdout.write(config_mod.dump(config_mod.defaults()))
        return EXIT_OK
    try:
        config_mod.load(args.file)
    except config_mod.ConfigError as e:
        print(f"shardsched: {e}", file=sys.stderr)
        return EXIT_REJECTED
    print(f"{args.file}: valid")
    return EXIT_OK


def cmd_simulate(args) -> int:
    from shard.simulate import dumps, simulate
    from .manifests import UsageError

    try:
        cfg = config_mod.load(args.config)
    except config_mod.ConfigError as e:
        fail(str(e), EXIT_USAGE if e.unreadable else EXIT_REJECTED)
    try:
        doc, code = simulate(args.files, cfg, args.seed)
    except UsageError as e:
        fail(str(e))
    print(dumps(doc))
    return code


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardsched", description="A sharded Kubernetes scheduler.")
    sub = p.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fleet", help="create a kwok-style node fleet in a store, or print it")
    f.add_argument("--nodes", type=int, required=True, help="number of nodes")
    f.add_argument("--profile", choices=fleet_mod.PROFILES, default="uniform")
    f.add_argument("--seed", type=int, default=0)
    g = f.add_mutually_exclusive_group()
    g.add_argument("--store", help="store URL (default: an embedded redis-server)")
    g.add_argument("-o", "--output", choices=("yaml", "json"), help="print a kind: List instead")
    f.set_defaults(func=cmd_fleet)

    s = sub.add_parser("simulate", help="schedule the pending pods of manifests, print the outcome as JSON")
    s.add_argument("files", nargs="+", metavar="FILE", help="YAML with Nodes, Pods, PDBs, PriorityClasses")
    s.add_argument("--config", help="configuration file (default: built-in defaults)")
    s.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    s.set_defaults(func=cmd_simulate)

    c = sub.add_parser("config", help="print or check a configuration file")
    csub = c.add_subparsers(dest="config_cmd", required=True)
    csub.add_parser("defaults", help="print the full default configuration")
    v = csub.add_parser("validate", help="check one configuration file")
    v.add_argument("file")
    c.set_defaults(func=cmd_config)

    from . import up
    up.add_commands(sub)
    from . import manage
    manage.add_commands(sub)
    from benchmarks import e2e
    e2e.add_command(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (StoreUnavailable, ValueError) as e:  # unreachable store, unknown store URL scheme
        fail(str(e))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
