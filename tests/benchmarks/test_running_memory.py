"""benchmarks/running_memory.py: what a running pod costs a shard and a binder, by the line
that allocated it. Behaviour only (what it reports), never sizes."""
from __future__ import annotations

from benchmarks import running_memory
from common.tools import fleet as fleet_mod


def test_each_role_reports_its_bytes_per_running_pod_by_allocating_line():
    nodes = fleet_mod.generate(40, "mixed", 1)
    for role in ("shard", "binder"):
        out = running_memory.measure(role, nodes, 400, top=30)
        assert out["bytes_per_pod"] > 0
        where = [line for line, _, _ in out["by_line"]]
        assert any(w.startswith("model/objects.py:") for w in where), where  # the pods themselves
        assert any(w.startswith("scheduling/accounting.py:") for w in where), where  # counted on nodes
