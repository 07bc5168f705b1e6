"""`shardsched bench`: the whole stack on an embedded Redis, measured (benchmarks/e2e.py),
with its JSON, Markdown and PNG reports."""
from __future__ import annotations

import argparse
import os

from .. import config as config_mod
from ..tools.fleet import PROFILES
from .errors import EXIT_OK, EXIT_REJECTED


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


def register(sub: argparse._SubParsersAction) -> None:
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
    b.set_defaults(handler=cmd_bench)


def cmd_bench(args) -> int:
    from benchmarks import e2e, harness, report

    if args.running_pods < 0:
        print("shardsched bench: --running-pods must be >= 0")
        return EXIT_REJECTED
    cfg = config_mod.load(args.config)
    binders = {} if args.binders is None else {"count": args.binders}
    free = {"base_port": 0, "metrics_base_port": None}  # never collide with a running `shardsched up`
    cfg = cfg.replace(shards={"count": args.shards, **free}, binders={**binders, **free},
                      dispatcher={"port": 0, "metrics_port": None})
    churn = args.heartbeat_s if args.churn else None  # the period, or no background writes
    doc = e2e.run(cfg, args.nodes, args.profile, args.pods, args.workload, args.rate, args.seed,
                  quiet=args.quiet, live=args.live, churn_heartbeat_s=churn,
                  running_pods=args.running_pods)
    harness.print_bench(doc)
    if args.ablation:
        doc["ablation"] = e2e.ablation(cfg, doc, args, churn)
        harness.print_table("ablation (ratio = throughput / full configuration's)",
                            {r["variant"]: {k: v for k, v in r.items() if k != "variant"}
                             for r in doc["ablation"]})
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    harness.write_json(args.json, doc)
    with open(os.path.splitext(args.json)[0] + ".md", "w") as fh:
        fh.write(report.markdown(doc))
    if args.plot:
        for path in report.plot(doc, args.plot):
            print(f"wrote {path}")
    ok = doc["verify"]["ok"] and all(r["verify_ok"] for r in doc.get("ablation", []))
    return EXIT_OK if ok else EXIT_REJECTED
