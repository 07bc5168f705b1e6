"""The `shardsched` command line: every subcommand, its flags and its exit status.

This package is the one place in common/ that may import the roles (shard, binder,
dispatcher) and benchmarks/; it does so only inside the handler that needs them, so
`shardsched --help` or `shardsched get` never loads the scheduler or the benchmark harness.
Exit statuses are in errors.py.
"""
from __future__ import annotations

import argparse
import importlib

from .. import config as config_mod
from ..errors import StoreUnavailable
from ..fleet import PROFILES
from ..runner import add_arguments as add_role_arguments
from ..version import VERSION
from .errors import EXIT_REJECTED, EXIT_USAGE, fail

#: Aliases `get` and `delete` take for the kinds.
KIND_ALIASES = ("no", "node", "nodes", "po", "pod", "pods", "pg", "pgs", "podgroup", "podgroups",
                "pvc", "persistentvolumeclaim", "persistentvolumeclaims", "pv", "persistentvolume",
                "persistentvolumes", "sc", "storageclass", "storageclasses", "csinode", "csinodes")
#: ... and the Events `get` lists.
EVENT_ALIASES = ("ev", "event", "events")
NO_STORE_HELP = ("store URL; required here (or store.url in --config): these commands act on an "
                 "existing store and never start an embedded redis-server")


def _handler(p: argparse.ArgumentParser, target: str) -> None:
    """`target` is "module:function" in this package, imported when the command runs."""
    p.set_defaults(handler=target)


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", help=NO_STORE_HELP)
    p.add_argument("--config", help="configuration file whose store.url (and store.kubeconfig) to use")


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def _workload(name: str) -> str:
    from benchmarks.workloads import WORKLOADS

    if name not in WORKLOADS:
        raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {', '.join(sorted(WORKLOADS))})")
    return name


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardsched", description="A sharded Kubernetes scheduler.")
    p.add_argument("--version", action="version", version=f"shardsched {VERSION}")
    sub = p.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fleet", help="create a kwok-style node fleet in a store, or print it")
    f.add_argument("--nodes", type=int, required=True, help="number of nodes")
    f.add_argument("--profile", choices=PROFILES, default="uniform")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--csi-limit", action="append", metavar="DRIVER=COUNT",
                   help="also a CSINode per node whose DRIVER attaches at most COUNT volumes (repeatable)")
    g = f.add_mutually_exclusive_group()
    g.add_argument("--store", help="store URL (default: an embedded redis-server)")
    g.add_argument("-o", "--output", choices=("yaml", "json"), help="print a kind: List instead")
    _handler(f, "fleet:cmd_fleet")

    s = sub.add_parser("simulate", help="schedule the pending pods of manifests, print the outcome as JSON")
    s.add_argument("files", nargs="+", metavar="FILE", help="YAML with Nodes, Pods, PDBs, PriorityClasses")
    s.add_argument("--config", help="configuration file (default: built-in defaults)")
    s.add_argument("--seed", type=int, default=0, help="tie-break seed (default 0)")
    _handler(s, "simulate:cmd_simulate")

    c = sub.add_parser("config", help="print or check a configuration file")
    csub = c.add_subparsers(dest="config_cmd", required=True)
    _handler(csub.add_parser("defaults", help="print the full default configuration"), "config_cmd:cmd_defaults")
    v = csub.add_parser("validate", help="check one configuration file (shardsched's or a "
                                         "KubeSchedulerConfiguration) as every process would")
    v.add_argument("file")
    _handler(v, "config_cmd:cmd_validate")
    cv = csub.add_parser("convert", help="print the full shardsched configuration a file means")
    cv.add_argument("file")
    _handler(cv, "config_cmd:cmd_convert")

    u = sub.add_parser("up", help="run the store, dispatcher, shards and binders on this machine")
    u.add_argument("--config", help="configuration file (default: built-in defaults)")
    u.add_argument("--store", help="store URL (default: store.url, else an embedded redis-server)")
    u.add_argument("--shards", type=int, help="number of shard processes (overrides shards.count)")
    u.add_argument("--binders", type=int, help="number of binder processes (overrides binders.count)")
    u.add_argument("--nodes", type=int, default=0, help="first write a kwok-style fleet of N nodes")
    u.add_argument("--profile", choices=PROFILES, default="mixed")
    u.add_argument("--seed", type=int, default=0)
    u.add_argument("--log-dir", help="one log file per process here (default: a new directory "
                                     "under the system's temporary directory, printed at start)")
    u.add_argument("-v", "--verbosity", type=int, default=0, metavar="N", help="the processes' log verbosity")
    _handler(u, "up:cmd_up")

    t = sub.add_parser("top", help="live table of the shards and binders (from their Status calls)")
    t.add_argument("--config", help="configuration file (its store.url finds the processes)")
    t.add_argument("--store", help="store URL whose leases list the processes")
    t.add_argument("--dispatcher", metavar="ADDR", help="ask this dispatcher (host:port) instead")
    t.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes")
    t.add_argument("--iterations", type=int, help="stop after this many refreshes")
    _handler(t, "up:cmd_top")

    for role in ("dispatcher", "shard", "binder"):
        r = sub.add_parser(role, help=f"run one {role} process, as in a cluster (= python -m {role})")
        add_role_arguments(r)
        _handler(r, "up:cmd_role")

    b = sub.add_parser("bench", help="run the whole stack on an embedded Redis and measure it")
    b.add_argument("--nodes", type=int, default=20000)
    b.add_argument("--profile", choices=PROFILES, default="mixed")
    b.add_argument("--pods", type=int, default=50000)
    b.add_argument("--workload", type=_workload, default="basic",
                   help="a workload of benchmarks/workloads.py: basic (default), mixed, preemption, "
                        "unschedulable, daemonset, spread, gang")
    b.add_argument("--shards", type=int, default=2)
    b.add_argument("--binders", type=int)
    b.add_argument("--rate", type=float, default=0.0, help="pods created per second (0 = as fast as possible)")
    b.add_argument("--running-pods", type=int, default=0, metavar="N",
                   help="fill the fleet with N bound, Running pods (Deployments' pods of many shapes, "
                        "benchmarks/running.py) before the processes start and the clock runs, and "
                        "report each process's memory per running pod")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--config", help="configuration file (default: built-in defaults)")
    b.add_argument("--json", default="bench.json",
                   help="write the report here (default bench.json), and a Markdown summary beside it")
    b.add_argument("--ablation", action="store_true",
                   help="also run the workload with each optimisation switched off in turn")
    b.add_argument("--variant-seconds", type=float, default=180.0,
                   help="with --ablation: longest run of one variant (default 180)")
    b.add_argument("--plot", metavar="DIR", help="write PNG charts into DIR")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--live", action="store_true",
                   help="show the live table of shards and binders (as `shardsched top`) while it runs")
    b.add_argument("--churn", action="store_true",
                   help="a cluster's background writes beside the run, as kubelets make them: node status "
                        "heartbeats and bound pods marked Running (benchmarks/churn.py)")
    b.add_argument("--heartbeat-s", type=_positive_float, default=300.0, metavar="SECONDS",
                   help="with --churn: each node's status is written once per this period "
                        "(default 300, the kubelet's nodeStatusReportFrequency)")
    _handler(b, "bench:cmd_bench")

    ce = sub.add_parser("certs", help="write a development CA and a certificate per role (security.mode: mtls)")
    ce.add_argument("--out", required=True, metavar="DIR", help="directory for ca.crt/.key and ROLE.crt/.key")
    ce.add_argument("--server-name", default="shardsched",
                    help="the name every certificate carries (security.serverName; default shardsched)")
    ce.add_argument("--host", action="append", default=[], metavar="NAME",
                    help="another DNS name or IP address for the certificates (repeatable)")
    ce.add_argument("--days", type=int, default=365, help="validity (default 365)")
    ce.add_argument("--force", action="store_true", help="replace an existing CA in DIR")
    _handler(ce, "certs:cmd_certs")

    cr = sub.add_parser("create", help="create Nodes, Pods, PDBs, PriorityClasses, PodGroups, PVCs, PVs, "
                                       "StorageClasses and CSINodes from a file (like kubectl)")
    cr.add_argument("-f", "--filename", dest="file", required=True, metavar="FILE",
                    help="YAML (one or more documents, or kind: List) or JSON; '-' reads stdin")
    _store_args(cr)
    _handler(cr, "manage:cmd_create")
    d = sub.add_parser("delete", help="delete pods, pod groups or claims (NS/NAME) or nodes, volumes, "
                                      "storage classes, CSINodes (NAME) from the store")
    d.add_argument("kind", choices=KIND_ALIASES)
    d.add_argument("names", nargs="+", metavar="NAME",
                   help="NS/NAME for pods, pod groups and claims (NAME = default/NAME)")
    _store_args(d)
    _handler(d, "manage:cmd_delete")
    ge = sub.add_parser("get", help="list pods, nodes, pod groups, claims, volumes, storage classes, CSINodes "
                                    "or events as a table, or as a kind: List")
    ge.add_argument("kind", choices=KIND_ALIASES + EVENT_ALIASES)
    ge.add_argument("-o", "--output", choices=("wide", "json", "yaml"), help="wide table or the stored objects")
    _store_args(ge)
    _handler(ge, "manage:cmd_get")
    ve = sub.add_parser("verify", help="check the store's invariants (capacity, host ports, taints, "
                                       "affinity, missing nodes, double binding)")
    ve.add_argument("--json", action="store_true", help="print {ok, bound, pending, violations, ...} as JSON")
    ve.add_argument("--settled", type=float, metavar="SECONDS",
                    help="also fail on any pod pending longer than this that some node could take "
                         "(pods of --config's profiles when given)")
    _store_args(ve)
    _handler(ve, "manage:cmd_verify")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    module, _, function = args.handler.partition(":")
    handler = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    try:
        return handler(args)
    except config_mod.ConfigError as e:  # --config: unreadable (2) or invalid content (1)
        return fail(str(e), EXIT_USAGE if e.unreadable else EXIT_REJECTED)
    except (StoreUnavailable, ValueError) as e:  # unreachable store, no store URL, bad URL scheme
        return fail(str(e))
    except KeyboardInterrupt:
        return 130

