"""A list's bound pods counted node by node at its end (PodAccounting.listing) leave the shard's
cache exactly as counting them one by one does: the same pods on the same nodes, requested
resources, scoring sums, host ports, affinity pods, splay-tree prefix sums and priorities, and
every node in the first snapshot; and whatever else happens while a list loads sees the pods
set aside as counted. Catching up after the list with each object's last event leaves what
applying every event leaves."""
from __future__ import annotations

import random
import uuid

import pytest

from common.model.objects import parse_node, parse_pod
from common.store.memory import MemoryStore
from common.store.redis_store import RedisStore
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


def _written_meanwhile(store) -> None:
    """What a busy cluster writes while a shard lists: pods created (another shard's, pending),
    bound and started; a listed pod deleted; one created and deleted; a PriorityClass made and
    then changed, with a pod naming it in between; on Redis, a poison pod."""
    for i in range(6):
        store.create(builders.pod(f"new-{i}", "100m", priority=0))
    for i in range(4):
        store.bind(f"default/new-{i}", f"n{i % 3}")
        running = store.get("Pod", f"default/new-{i}")
        running["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        store.update_status(running)
    store.delete("Pod", "default/r0")
    store.create(builders.pod("brief", "100m", priority=0))
    store.delete("Pod", "default/brief")
    store.create(builders.priority_class("late", 50))
    store.create(builders.pod("named", "100m", node_name="n2", spec={"priorityClassName": "late"}))
    late = store.get("PriorityClass", "late")
    late["description"] = "changed after a pod named it"
    store.update(late)
    if hasattr(store, "create_many_trusted"):  # past the store's checks: a record no writer should make
        poison = builders.pod("poison", "100m", node_name="n1", labels={"app": 3})
        poison["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        assert store.create_many_trusted("Pod", [poison]) == []


def _shard_state(loop) -> dict:
    nodes = {name: (sorted(info.pods), info.requested, info.tree.items()) for name, info in loop.cache.nodes.items()}
    return {"pods": {k: (p.node_name, p.priority, p.phase) for k, p in loop.pods.items()},
            "unowned": sorted(loop.intake.unowned), "counted": dict(loop.cache.pod_node), "nodes": nodes,
            "errors": sorted(loop.errors), "lowest": loop.cache.lowest_priority()}


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_catching_up_with_each_objects_last_event_leaves_what_every_event_leaves(kind, request):
    """A shard catching up after its list (ShardLoop.sync's `latest`: each object's last event
    only, kinds in list order, pods counted node by node) ends as one applying every event."""
    if kind == "memory":
        store = MemoryStore()
    else:
        store = RedisStore(request.getfixturevalue("redis_url"), prefix=f"test-{uuid.uuid4().hex[:12]}:")
    for doc in [builders.node(f"n{i}", "8", "32Gi") for i in range(3)]:
        store.create(doc)
    for i in range(9):
        store.create(builders.running(f"r{i}", f"n{i % 3}", "100m", priority=i % 2))
    every, latest = (ShardLoop(builders.make_config(), store, owner=DispatchedPods()) for _ in range(2))
    every.start()
    latest.start()
    _written_meanwhile(store)
    while every.sync(0.0):
        pass
    while latest.sync(0.0, latest=True):
        pass
    assert _shard_state(latest) == _shard_state(every)
    assert "default/named" in latest.cache.pod_node and latest.pods["default/named"].priority == 50
    assert "default/r0" not in latest.pods
    if kind == "redis":
        assert str(latest.errors["Pod default/poison"]).startswith(
            "Pod default/poison: metadata.labels.app: must be a string")
        assert latest.cache.counted("default/poison") is None
    assert latest.informer.rv == every.informer.rv
