"""Conflict-aware packing (config `packing`, shard/scheduler.py): shards whose profile packs
prefer the nodes of their own slice, so two shards do not pick the same fullest node."""
from __future__ import annotations

import zlib

import pytest

from builders import Cluster, make_config, node, pod
from common.config import ConfigError, validate

MOST = {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}}


def _slice(name: str, slices: int = 2) -> int:
    return zlib.crc32(name.encode()) % slices


def _fleet(n: int = 24):
    """Nodes of one size; each holds a different load (cpu and memory in step, so balanced
    allocation scores them alike), so MostAllocated ranks them all apart."""
    nodes = [node(f"n{i:02d}", cpu="16", memory="64Gi") for i in range(n)]
    load = [pod(f"load{i}", cpu=f"{500 * (i + 1)}m", memory=f"{2 * (i + 1)}Gi", node_name=f"n{i:02d}") for i in range(n)]
    return nodes, load


def _shards(packing: dict, strategy=MOST, count: int = 2):
    nodes, load = _fleet()
    cfg = make_config("all", plugin_config=strategy, packing=packing)
    return [Cluster(nodes, load, cfg=cfg, seed=7, slice_of=(i, count)) for i in range(count)]


def test_packing_shards_pick_the_fullest_node_of_their_own_slice():
    shards = _shards({})
    picks = [s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in shards]
    assert picks[0] != picks[1]
    for i, name in enumerate(picks):
        assert _slice(name) == i
        # the fullest node of its slice (more load on higher-numbered nodes)
        assert name == max(n for n in shards[i].table.names if _slice(n) == i)


def test_without_packing_both_shards_race_for_the_same_node():
    shards = _shards({"mode": "off"})
    picks = {s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in shards}
    assert picks == {"n23"}


def test_a_shard_whose_slice_has_no_room_takes_the_best_node_overall():
    shards = _shards({})
    own = [n for n in shards[0].table.names if _slice(n) == 0]
    # the pod fits only on nodes of shard 1's slice (the others are too small for it)
    big = pod("big", cpu="15", memory="1Gi", node_selector={"kubernetes.io/hostname": "n00"})
    assert _slice("n00") == 1 and "n00" not in own
    assert shards[0].schedule(big).node == "n00"


def test_tolerance_bounds_how_far_below_the_best_the_own_slice_may_be():
    strict = _shards({"tolerance": 0})
    picks = [s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in strict]
    assert picks == ["n23", "n23"]  # no node of shard 0's slice ties with the best


def test_spreading_profiles_are_left_alone_unless_packing_is_always():
    least = {"NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated"}}}
    auto = _shards({}, strategy=least)
    assert {s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in auto} == {"n00"}
    always = _shards({"mode": "always"}, strategy=least)
    picks = [s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in always]
    assert [_slice(n) for n in picks] == [0, 1]


def test_an_increasing_requested_to_capacity_shape_packs():
    shape = {"NodeResourcesFit": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]}}}}
    picks = [s.schedule(pod("p", cpu="1", memory="4Gi")).node for s in _shards({}, strategy=shape)]
    assert [_slice(n) for n in picks] == [0, 1]


def test_one_shard_is_one_slice():
    (only,) = _shards({}, count=1)
    assert only.schedule(pod("p", cpu="1", memory="4Gi")).node == "n23"


@pytest.mark.parametrize("field,value,words", [
    ("tolerance", 101, "packing.tolerance: must be <= 100"),
    ("tolerance", -1, "packing.tolerance: must be >= 0"),
    ("mode", "sometimes", "packing.mode: must be one of auto, always, off"),
])
def test_bad_packing_settings_name_the_field(field, value, words):
    with pytest.raises(ConfigError) as e:
        validate({"packing": {field: value}})
    assert words in str(e.value)
