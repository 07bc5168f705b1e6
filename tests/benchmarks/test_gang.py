"""`shardsched bench --workload gang`: the workload's groups, the figures over them, and one
small run of the whole stack (every group placed whole, none partial, verify ok)."""
from __future__ import annotations

from collections import Counter

from benchmarks import e2e, groups
from benchmarks.workloads import GROUP, gang
from builders import stack_config


def test_the_gang_workload_mixes_groups_of_8_to_64_with_as_many_single_pods():
    docs = gang(2000, seed=3, nodes=100)
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == 2000
    sizes = Counter(d["metadata"]["labels"][GROUP] for d in pods if GROUP in d["metadata"]["labels"])
    declared = {d["metadata"]["name"]: d["spec"]["minMember"] for d in docs if d["kind"] == "PodGroup"}
    assert sizes == Counter(declared)  # minMember = the group's size
    assert all(8 <= n <= 64 for n in list(sizes.values())[:-1]) and sizes["gang-0"] == sizes["gang-4"] == 64
    assert abs(sum(sizes.values()) - (2000 - sum(sizes.values()))) <= 64  # about half in groups
    seen = set()
    for d in docs:  # each PodGroup before its members
        if d["kind"] == "PodGroup":
            seen.add(d["metadata"]["name"])
        elif GROUP in d["metadata"]["labels"]:
            assert d["metadata"]["labels"][GROUP] in seen


def test_group_figures_count_placed_partial_and_time_from_the_last_member():
    docs = [{"kind": "PodGroup", "metadata": {"name": "a", "namespace": "b"}, "spec": {"minMember": 2}},
            {"kind": "PodGroup", "metadata": {"name": "c", "namespace": "b"}, "spec": {"minMember": 2}}]
    docs += [{"kind": "Pod", "metadata": {"name": f"{g}{i}", "namespace": "b", "labels": {GROUP: g}}}
             for g in "ac" for i in range(2)]
    created = {"b/a0": 0.0, "b/a1": 1.0, "b/c0": 0.0, "b/c1": 0.0}
    bound = {"b/a0": 2.0, "b/a1": 3.5, "b/c0": 1.0}  # c is left with one of two
    out = groups.figures(docs, created, bound)
    assert (out["groups"], out["placed"], out["partial"]) == (2, 1, 1)
    assert out["place_s"] == {"p50": 2.5, "p99": 2.5, "max": 2.5} and out["place_64_s"]["p50"] is None


def test_a_small_gang_bench_places_every_group_whole():
    doc = e2e.run(stack_config(), 200, "mixed", 1500, "gang", 0.0, 1, quiet=True)
    assert doc["pods"] == doc["scheduled"] == 1500 and doc["verify"]["ok"]
    g = doc["groups"]
    assert g["placed"] == g["groups"] and g["partial"] == 0 and g["groups_per_s"] > 0
    assert g["place_64_s"]["max"] is not None
