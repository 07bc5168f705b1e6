"""`shardsched fleet`: write a kwok-style fleet into a store (or print it)."""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

import orjson
import yaml

from ..tools import fleet as fleet_mod
from ..model.objects import parse_node
from ..store import open_store
from .errors import EXIT_OK, EXIT_REJECTED, fail


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("fleet", help="create a kwok-style node fleet in a store, or print it")
    f.add_argument("--nodes", type=int, required=True, help="number of nodes")
    f.add_argument("--profile", choices=fleet_mod.PROFILES, default="uniform")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--csi-limit", action="append", metavar="DRIVER=COUNT",
                   help="also a CSINode per node whose DRIVER attaches at most COUNT volumes (repeatable)")
    f.add_argument("--gpus-per-node", type=int, default=0, metavar="N",
                   help=f"also publish N GPUs per node as the DRA driver {fleet_mod.GPU_DRIVER} would: a "
                        "ResourceSlice per node (one pool per node) and the DeviceClass selecting them")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--store", help="store URL (default: an embedded redis-server)")
    g.add_argument("-o", "--output", choices=("yaml", "json"), help="print a kind: List instead")
    f.set_defaults(handler=cmd_fleet)


@contextlib.contextmanager
def open_cluster(url: str | None):
    """The store at `url`, or an embedded redis-server for the duration of the block."""
    with contextlib.ExitStack() as stack:
        if url is None:
            from ..store.embedded import EmbeddedRedis  # redis-py: only when one is started

            url = stack.enter_context(EmbeddedRedis()).url
        store = open_store(url)
        stack.callback(store.close)
        yield store


def cmd_fleet(args) -> int:
    from ..tools.report import print_fleet_summary  # rich: only when there is a summary to print

    try:
        nodes = fleet_mod.generate(args.nodes, args.profile, args.seed)
        csi = fleet_mod.csi_nodes(nodes, fleet_mod.csi_limits(args.csi_limit))
        gpus = fleet_mod.gpu_fleet(nodes, args.gpus_per_node)
    except ValueError as e:
        return fail(str(e))
    if args.output:
        doc = {"apiVersion": "v1", "kind": "List", "items": nodes + csi + gpus}
        if args.output == "yaml":
            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
        else:
            sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    with open_cluster(args.store) as store:
        start = time.perf_counter()
        errors = store.create_many(nodes + csi + gpus)
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        listed, _ = store.list("Node")
        list_s = time.perf_counter() - start
        summary = fleet_mod.summarize([parse_node(d) for d in listed])
    for e in errors:
        print(f"rejected: {e}", file=sys.stderr)
    print_fleet_summary(summary, args.profile, len(nodes), write_s, list_s)
    if gpus:
        print(f"devices: {args.gpus_per_node} per node from driver {fleet_mod.GPU_DRIVER} in {len(gpus) - 1} "
              f"ResourceSlices, DeviceClass {fleet_mod.GPU_CLASS} (written with the nodes, in the time above)")
    return EXIT_REJECTED if errors else EXIT_OK
