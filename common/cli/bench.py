"""`shardsched bench`: the whole stack on an embedded Redis, measured (benchmarks/e2e.py),
with its JSON, Markdown and PNG reports."""
from __future__ import annotations

import argparse
import os

from .. import config as config_mod
from ..tools.fleet import PROFILES
from .errors import EXIT_OK, EXIT_REJECTED, EXIT_USAGE


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
                        "unschedulable, daemonset, spread, gang, cpu-pool, gpu-backlog, gpu-saturated, dra, "
                        "dra-single (each measured against extended-gpu or extended-gpu-single in the same "
                        "run), extended-gpu, extended-gpu-single")
    b.add_argument("--shards", type=int, default=2)
    b.add_argument("--binders", type=int)
    b.add_argument("--rate", type=float, default=0.0, help="pods created per second (0 = as fast as possible)")
    b.add_argument("--running-pods", type=int, default=0, metavar="N",
                   help="fill the fleet with N bound, Running pods (Deployments' pods of many shapes, "
                        "benchmarks/running.py) before the processes start and the clock runs, and "
                        "report each process's memory per running pod")
    b.add_argument("--kill-shard-at", type=_positive_float, metavar="SECONDS",
                   help="kill shard 0 with -9 this many seconds after the clock starts and start it "
                        "again at once; the report's kill: {shard, at_s, killed, ready_s, scheduling_s} "
                        "times its return (from the kill) and verify checks nothing was lost or doubled")
    b.add_argument("--keep-logs", metavar="DIR",
                   help="write each process's log to DIR/<role>-<id>.log and keep them (default: a "
                        "temporary directory, removed at the end)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--config", help="configuration file (default: built-in defaults)")
    b.add_argument("--json", default="bench.json",
                   help="write the report here (default bench.json), and a Markdown summary beside it")
    b.add_argument("--ablation", action="store_true",
                   help="also run the workload with each optimisation switched off in turn")
    b.add_argument("--variant-seconds", type=float, default=180.0,
                   help="with --ablation: longest run of one variant (default 180)")
    b.add_argument("--quality", nargs="?", type=_percent, const=1.0, metavar="PERCENT",
                   help="grade the placement of PERCENT of the cycles (default 1) off the clock: every "
                        "feasible node scored for the pod, the chosen node's regret reported (JSON "
                        "quality: sampled, regret_pct_mean, regret_pct_p99, optimal_share); with a packing "
                        "profile and several shards, also the nodes used by one shard on the same run")
    b.add_argument("--sweep", metavar="KEY=V1,V2,...",
                   help="run the workload once per value of one config key (e.g. threshold.mode=adaptive,kube,all; "
                        "shards.count=1,2,4), graded as with --quality, and print the figures side by side "
                        "(with --plot, DIR/sweep.png: throughput against regret)")
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


def _percent(text: str) -> float:
    value = float(text)
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage in (0, 100], not {text}")
    return value


def cmd_bench(args) -> int:
    from benchmarks import e2e, harness, report, sweep
    from benchmarks.workloads import BASELINES

    if args.running_pods < 0:
        print("shardsched bench: --running-pods must be >= 0")
        return EXIT_REJECTED
    try:
        swept = sweep.parse(args.sweep) if args.sweep else None
    except sweep.SweepError as e:
        print(f"shardsched bench: {e}")
        return EXIT_USAGE
    cfg = config_mod.load(args.config)
    binders = {} if args.binders is None else {"count": args.binders}
    free = {"base_port": 0, "metrics_base_port": None}  # never collide with a running `shardsched up`
    graded = {"quality_sample_percent": args.quality or 1.0} if args.quality or swept else {}
    cfg = cfg.replace(shards={"count": args.shards, **free, **graded}, binders={**binders, **free},
                      dispatcher={"port": 0, "metrics_port": None})
    churn = args.heartbeat_s if args.churn else None  # the period, or no background writes
    if swept:
        return _sweep(cfg, args, swept, churn)

    def measure(c, workload=args.workload):
        return e2e.run(c, args.nodes, args.profile, args.pods, workload, args.rate, args.seed,
                       quiet=args.quiet, live=args.live, churn_heartbeat_s=churn,
                       running_pods=args.running_pods, kill_shard_at=args.kill_shard_at,
                       log_dir=args.keep_logs)

    try:
        doc = measure(cfg)
        if args.workload in BASELINES:
            doc["baseline"] = e2e.against(doc, measure(cfg, BASELINES[args.workload]))
    except e2e.Rejected as e:
        print(f"shardsched bench: --workload {args.workload}: {e}")
        return EXIT_REJECTED
    if args.quality and doc["packing"] and cfg.shards.count > 1:
        # packing's yardstick: how many nodes one scheduler fills with the same pods
        alone = measure(cfg.replace(shards={"count": 1}))
        doc["quality"]["nodes_used_one_shard"] = alone["nodes_used"]
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
    ok = (doc["verify"]["ok"] and all(r["verify_ok"] for r in doc.get("ablation", []))
          and doc.get("baseline", {}).get("verify_ok", True))
    return EXIT_OK if ok else EXIT_REJECTED


def _sweep(cfg, args, swept, churn) -> int:
    """One graded run per value of the swept key; the table, the JSON (`sweep` rows) and
    with --plot the chart of throughput against regret."""
    from benchmarks import e2e, harness, sweep

    key, values = swept
    try:
        variants = [(v, sweep.with_value(cfg, key, v)) for v in values]
    except config_mod.ConfigError as e:
        print(f"shardsched bench: --sweep: {e}")
        return EXIT_REJECTED
    rows = []
    for value, variant in variants:
        doc = e2e.run(variant, args.nodes, args.profile, args.pods, args.workload, args.rate, args.seed,
                      quiet=args.quiet, churn_heartbeat_s=churn, running_pods=args.running_pods)
        rows.append(sweep.row(value, doc))
    harness.print_table(f"--sweep {key}: {args.workload}, {args.pods} pods on {args.nodes} {args.profile} nodes",
                        {str(r["value"]): {k: v for k, v in r.items() if k != "value"} for r in rows})
    out = {"sweep": {"key": key, "workload": args.workload, "nodes": args.nodes, "pods": args.pods,
                     "quality_sample_percent": cfg.shards.quality_sample_percent, "rows": rows}}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    harness.write_json(args.json, out)
    with open(os.path.splitext(args.json)[0] + ".md", "w") as fh:
        fh.write(sweep.markdown(key, rows))
    if args.plot:
        print(f"wrote {sweep.plot(key, rows, args.plot)}")
    return EXIT_OK if all(r["verify_ok"] for r in rows) else EXIT_REJECTED
