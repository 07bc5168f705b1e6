"""benchmarks/ready.py: a role's start-up over running pods, timed by phase. Behaviour only
(what it reports), never times."""
from __future__ import annotations

import os

from benchmarks import ready

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_each_role_lists_every_running_pod_and_reports_its_phases():
    out = ready.run(nodes=20, running_pods=150, roles=["fetch", "decode", "shard", "binder"], repeats=1,
                    trees=[HERE], timeout=300)
    assert out["fill"]["running_pods"] == 150
    by_role = {r["role"]: r for r in out["runs"]}
    assert by_role["fetch"]["pods"] == by_role["decode"]["pods"] == 150
    for role in ("shard", "binder"):
        r = by_role[role]
        assert r["pods"] == 150 and r["skipped"] == 0  # every pod kept: none refused, none lost
        assert r["ready_s"] >= r["list_s"] + r["settle_s"] > 0
    assert set(out["medians"]) == {f"{role} {HERE}" for role in ("fetch", "decode", "shard", "binder")}
