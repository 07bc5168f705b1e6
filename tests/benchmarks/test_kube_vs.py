"""benchmarks/kube_vs.py: `--running-pods N` (the API server filled with bound pods that kwok
runs before any side starts), what the API server is asked per pod, bytecode before the sides.
Behaviour only, never timings."""
from __future__ import annotations

import importlib.util
import os
import sys

from benchmarks import kube_vs, running
from common.store.kube_store import KubeStore
from common.tools import fleet as fleet_mod

from builders import api_pod


def test_running_pods_are_written_bound_and_left_running_by_kwok(kube_cluster):
    """Their priorities too: the API server refuses a bare spec.priority (a PriorityClass of
    each level is created and named instead)."""
    store = KubeStore(str(kube_cluster.kubeconfig))
    nodes = fleet_mod.generate(4, "uniform", 0, prefix="fill")
    written = []
    try:
        for n in nodes:
            store.create(n)
        filled = kube_vs.fill_running(store, 30, nodes, seed=5, timeout=600)  # seed 5: priority 1000
        written = [p for p in store.list("Pod")[0] if p["metadata"]["namespace"].startswith("team-")]
        assert filled["running_pods"] == len(written) == 30
        assert {p["spec"]["nodeName"] for p in written} <= {n["metadata"]["name"] for n in nodes}
        assert all(p["status"]["phase"] == "Running" for p in written)
        # the API server takes a priority from a PriorityClass only
        assert {p["spec"]["priority"] for p in written} == {1000}
        assert {p["spec"]["priorityClassName"] for p in written} == {"running-1000"}
        assert {p["metadata"]["namespace"] for p in written} <= {f"team-{i}" for i in range(running.NAMESPACES)}
    finally:
        assert store.evict_many([(f"{p['metadata']['namespace']}/{p['metadata']['name']}", None)
                                 for p in written], respect_budgets=False) == [None] * len(written)
        for n in nodes:
            store.delete("Node", n["metadata"]["name"])
        store.close()


def test_bytecode_is_written_before_the_sides_start_even_when_python_would_not(tmp_path, monkeypatch):
    """With PYTHONDONTWRITEBYTECODE (the development machine's setting) no process writes
    bytecode, so each would compile every module at start; compile_bytecode writes it, and a
    module that does not compile is counted, not raised."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "__init__.py").write_text("")
    (tmp_path / "good" / "mod.py").write_text("X = 1\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "broken.py").write_text("def (:\n")
    assert kube_vs.compile_bytecode(tmp_path, ("good", "bad")) == 1
    for name in ("__init__.py", "mod.py"):
        assert os.path.exists(importlib.util.cache_from_source(str(tmp_path / "good" / name)))
    assert kube_vs.compile_bytecode(tmp_path, ("good",)) == 0


def test_the_api_servers_requests_are_counted_per_pod_by_verb_and_resource(kube_cluster):
    """What a side asked of the API server (`api_per_pod`): its own counters before and after."""
    store = KubeStore(str(kube_cluster.kubeconfig))
    node = fleet_mod.generate(1, "uniform", 0, prefix="count")[0]
    pods = [api_pod(f"counted-{i}", cpu="10m") for i in range(2)]
    try:
        store.create(node)
        for p in pods:
            store.create(p)
        before = kube_vs.api_counts(store)
        assert store.bind_many([(f"default/{p['metadata']['name']}", node["metadata"]["name"], None)
                                for p in pods]) == [None, None]
        grown = kube_vs.per_pod(before, kube_vs.api_counts(store), len(pods))
    finally:
        for p in pods:
            store.delete("Pod", f"default/{p['metadata']['name']}")
        store.delete("Node", node["metadata"]["name"])
        store.close()
    assert grown["POST pods/binding"] == 1.0
    assert list(grown) == sorted(grown, key=lambda k: -grown[k])


def test_the_next_side_waits_until_kwoks_writes_for_the_last_one_stop():
    """wait_quiet returns once the counts of kwok's writes have stood still for its quiet
    time, not while they still move (a side's pods run or deleted by kwok after the side)."""
    moving = iter(range(1, 9))
    calls = []

    def counts():
        calls.append(1)
        n = next(moving, 8)
        return {"PATCH pods/status": float(n), "DELETE pods": 2.0 * n, "POST pods/binding": float(len(calls))}
    kube_vs.wait_quiet(counts, quiet_s=0.05, tick=0.01, timeout=60)
    assert len(calls) >= 8 + 1  # every move seen, then at least one look at the still counts


def test_waiting_for_quiet_gives_up_after_its_timeout():
    ticks = iter(range(10 ** 6))
    waited = kube_vs.wait_quiet(lambda: {"DELETE pods": float(next(ticks))}, quiet_s=10, tick=0.01, timeout=0.1)
    assert 0.1 <= waited < 10
