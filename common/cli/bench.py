"""`shardsched bench`: the whole stack on an embedded Redis, measured (benchmarks/e2e.py),
with its JSON, Markdown and PNG reports."""
from __future__ import annotations

import os

from .. import config as config_mod
from .errors import EXIT_OK, EXIT_REJECTED


def cmd_bench(args) -> int:
    from benchmarks import e2e, harness, report

    if args.running_pods < 0:
        print("shardsched bench: --running-pods must be >= 0")
        return EXIT_REJECTED
    cfg = config_mod.load(args.config)
    cfg["shards"]["count"] = args.shards
    if args.binders is not None:
        cfg["binders"]["count"] = args.binders
    for section in ("shards", "binders"):
        cfg[section]["basePort"] = 0  # never collide with a running `shardsched up`
        cfg[section]["metricsBasePort"] = 0
    cfg["dispatcher"]["port"] = cfg["dispatcher"]["metricsPort"] = 0
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
