"""A list's bound pods counted node by node at its end (PodAccounting.listing) leave the shard's
cache exactly as counting them one by one does: the same pods on the same nodes, requested
resources, scoring sums, host ports, affinity pods, splay-tree prefix sums and priorities, and
every node in the first snapshot; and whatever else happens while a list loads sees the pods
set aside as counted."""
from __future__ import annotations

import random

from common.model.objects import parse_node, parse_pod
from common.store.memory import MemoryStore
from shard.cache import ShardCache
from shard.generation_store import full_copy
from shard.intake import DispatchedPods
from shard.loop import ShardLoop
from shard.node_info import NodeInfo
from shard.snapshot import Snapshot
import builders

PRIORITIES = (-5, 0, 100, 1000, 100000)


def _pods(seed: int, n: int = 300) -> list:
    """Bound pods of a few specs on a few nodes (one the cache never hears of), some with host
    ports, anti-affinity, an extended resource, or a terminal phase."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = rng.randrange(6)
        node = f"n{rng.randrange(8)}"
        kw: dict = {}
        if kind == 1:
            kw["ports"] = [{"containerPort": 80, "hostPort": 8000 + rng.randrange(3)}]
        elif kind == 2:
            kw["affinity"] = builders.pod_affinity(anti_required=[builders.pod_term({"app": "a"})])
        elif kind == 3:
            kw["extra"] = {"example.com/gpu": 1}
        elif kind == 4:
            kw["phase"] = "Succeeded"
        out.append(parse_pod(builders.pod(f"p{i}", f"{rng.choice((10, 250, 500))}m", "64Mi", node_name=node,
                                          priority=rng.choice(PRIORITIES), labels={"app": "a"}, **kw)))
    return out


def _cache() -> ShardCache:
    cache = ShardCache()
    for i in range(7):  # n7 is never set: its pods wait on a placeholder record
        cache.set_node(parse_node(builders.node(f"n{i}", "64", "256Gi", pods="500")))
    return cache


def _assert_same(bulk: ShardCache, one_by_one: ShardCache) -> None:
    assert bulk.pod_node == one_by_one.pod_node
    assert bulk.priorities == one_by_one.priorities
    assert bulk.lowest_priority() == one_by_one.lowest_priority()
    assert {n for n, _ in bulk.nodes.items()} == {n for n, _ in one_by_one.nodes.items()}
    for name, mine in bulk.nodes.items():
        theirs = one_by_one.nodes[name]
        assert (mine.node is None) == (theirs.node is None), name
        assert mine.pods.keys() == theirs.pods.keys(), name
        assert mine.requested == theirs.requested, name
        assert mine.nonzero == theirs.nonzero, name
        assert mine.host_ports == theirs.host_ports, name
        assert mine.affinity_pods.keys() == theirs.affinity_pods.keys(), name
        assert mine.tree.items() == theirs.tree.items(), name
        assert len(mine.tree) == len(theirs.tree) == len(mine.pods), name
        for p in (*PRIORITIES, 10**9):
            assert mine.tree.sum_below(p) == theirs.tree.sum_below(p), (name, p)
            assert mine.tree.count_below(p) == theirs.tree.count_below(p), (name, p)


def test_counting_a_list_at_its_end_equals_counting_each_pod():
    for seed in range(5):
        pods = _pods(seed)
        one_by_one, bulk = _cache(), _cache()
        for pod in pods:
            one_by_one.set_pod(pod)
        with bulk.listing():
            for pod in pods:
                bulk.set_pod(pod)
        _assert_same(bulk, one_by_one)


def test_the_first_snapshot_after_a_list_holds_every_node_as_counted():
    cache = _cache()
    before = cache.nodes.generation
    with cache.listing():
        for pod in _pods(1):
            cache.set_pod(pod)
    # one store per node with pods: one generation each, not one per pod
    assert cache.nodes.generation - before == 8
    snapshot = Snapshot()
    snapshot.update(cache)
    fresh = full_copy(cache.nodes, NodeInfo.clone)
    assert snapshot.raw.data.keys() == fresh.data.keys() == {f"n{i}" for i in range(8)}
    for name, info in fresh.items():
        assert snapshot.raw[name].same_as(info)
        assert info.generation > before


def test_what_happens_while_a_list_loads_sees_the_pods_set_aside():
    pods = [p for p in _pods(2) if p.phase == "Running"]
    first, moved, gone = pods[0], pods[1], pods[2]
    one_by_one, bulk = _cache(), _cache()
    elsewhere = parse_pod(builders.pod(moved.name, "100m", node_name="n0" if moved.node_name != "n0" else "n1",
                                       priority=7))
    for cache in (one_by_one, bulk):
        with cache.listing():
            for pod in pods:
                cache.set_pod(pod)
                if pod is first:
                    assert cache.counted(first.key) is first
            cache.remove_pod(gone.key)
            assert cache.counted(gone.key) is None
            cache.set_pod(elsewhere)  # the same pod again, on another node
            assert cache.counted(moved.key) is elsewhere
            cache.remove_node("n3")
    assert bulk.counted(gone.key) is None
    _assert_same(bulk, one_by_one)


def test_a_shards_initial_list_counts_every_bound_pod_on_its_node():
    docs = [builders.node(f"n{i}", "8", "32Gi") for i in range(3)]
    docs += [builders.running(f"r{i}", f"n{i % 3}", "100m", priority=i % 2) for i in range(30)]
    docs.append(builders.pod("waiting", "100m"))
    store = MemoryStore()
    for doc in docs:
        store.create(doc)
    loop = ShardLoop(builders.make_config(), store, owner=DispatchedPods())
    loop.start()
    for i in range(3):
        info = loop.cache.nodes[f"n{i}"]
        assert sorted(info.pods) == sorted(f"default/r{j}" for j in range(i, 30, 3))
        assert info.requested[0] == 1000  # ten pods of 100m
        assert len(info.tree) == 10 and info.tree.count_below(1) == len(range(i, 30, 3)[::2])
    assert loop.cache.counted("default/waiting") is None
    assert loop.cache.lowest_priority() == 0
