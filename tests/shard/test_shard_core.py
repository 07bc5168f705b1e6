"""Shard cache, snapshot and node table under random event sequences.

A model records which node names each operation touched since the snapshot's last update; an
incremental update must then equal a fresh full copy of the cache, clone exactly the touched
nodes that still exist, and leave a node table whose rows and columns agree with the snapshot.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from shard.generation_store import full_copy
from common.model.objects import parse_node, parse_pod
from shard.cache import ShardCache
from shard.node_info import NodeInfo
from shard.snapshot import Snapshot
import builders
from builders import Clock

NODES = [f"n{i}" for i in range(6)]
PODS = [f"p{i}" for i in range(10)]


def make_node(name: str, cpu: int, taint: bool = False, unschedulable: bool = False):
    zone = f"z{cpu % 3}"
    return parse_node(builders.node(name, str(cpu), "64Gi", labels={"zone": zone, "topology.kubernetes.io/zone": zone},
                                    taints=["dedicated=infra:NoSchedule"] if taint else (), unschedulable=unschedulable,
                                    images={f"img-{cpu % 2}": 1000}, hostname_label=False, capacity=False))


def make_pod(name: str, node: str | None, cpu_m: int, priority: int, port: int | None = None):
    return parse_pod(builders.pod(name, f"{cpu_m}m", "1Gi", node_name=node, priority=priority,
                                  ports=[{"containerPort": 80, "hostPort": port}] if port else (),
                                  labels={"app": name[-1]}, uid="uid-{name}", scheduler=None))


OPS = st.one_of(
    st.tuples(st.just("set_node"), st.sampled_from(NODES), st.integers(0, 64), st.booleans(),
              st.booleans()),
    st.tuples(st.just("remove_node"), st.sampled_from(NODES)),
    st.tuples(st.just("bind_pod"), st.sampled_from(PODS), st.sampled_from(NODES),
              st.integers(0, 4000), st.integers(-5, 5), st.sampled_from([None, 8080, 9090])),
    st.tuples(st.just("assume"), st.sampled_from(PODS), st.sampled_from(NODES),
              st.integers(0, 4000), st.integers(-5, 5)),
    st.tuples(st.just("remove_pod"), st.sampled_from(PODS)),
    st.tuples(st.just("forget"), st.sampled_from(PODS)),
    st.tuples(st.just("expire"), st.floats(0, 20)),
    st.tuples(st.just("update"), st.just(None)),
)


def apply(cache: ShardCache, clock: Clock, op: tuple) -> set[str]:
    """Run one operation; returns the node names whose NodeInfo it may have changed."""
    kind = op[0]
    if kind == "set_node":
        _, name, cpu, taint, unsched = op
        cache.set_node(make_node(name, cpu, taint, unsched))
        return {name}
    if kind == "remove_node":
        existed = op[1] in cache.nodes
        cache.remove_node(op[1])
        return {op[1]} if existed else set()
    if kind in ("bind_pod", "assume"):
        name, node = op[1], op[2]
        before = cache.pod_node.get(f"default/{name}")
        generation = cache.nodes.generation_of(node) if node in cache.nodes else None
        if kind == "bind_pod":
            cache.set_pod(make_pod(name, node, op[3], op[4], op[5]))
            if before == node and generation is not None and cache.nodes.generation_of(node) == generation:
                return set()  # the binding of the pod assumed there, counted as it was: swapped in
        else:
            cache.assume(make_pod(name, None, op[3], op[4]), node)
        return {node} | ({before} if before else set())
    if kind in ("remove_pod", "forget"):
        key = f"default/{op[1]}"
        before = cache.pod_node.get(key)
        if kind == "remove_pod":
            cache.remove_pod(key)
        else:
            cache.forget(key)
        return {before} if before and key not in cache.pod_node else set()
    if kind == "expire":
        clock.now += op[1]
        touched = {cache.pod_node[k] for k in cache.assumed
                   if cache.assumed[k] <= clock.now}
        cache.expire()
        return touched
    raise AssertionError(kind)


def assert_snapshot_matches(snapshot: Snapshot, cache: ShardCache) -> None:
    fresh = full_copy(cache.nodes, NodeInfo.clone)
    assert snapshot.raw.data.keys() == fresh.data.keys()
    for name, info in fresh.items():
        mine = snapshot.raw[name]
        assert mine.same_as(info), name
        assert mine is not cache.nodes[name]
    table = snapshot.table
    table.check()
    live = {name for name, info in fresh.items() if info.node is not None}
    assert sorted(table.names) == sorted(live)  # every node exactly once
    for name in live:
        assert table.infos[table.row_of[name]] is snapshot.raw[name]
    # Derived columns kept across updates: label codes and cached per-selector pod counts.
    table.label_column("zone")
    counts = table.pod_counts("app=1", lambda p: p.labels.get("app") == "1")
    for row, info in enumerate(table.infos):
        assert counts[row] == sum(p.labels.get("app") == "1" for p in info.pods.values())


def assert_cache_consistent(cache: ShardCache) -> None:
    """Each NodeInfo's aggregates equal a recomputation from its pods."""
    for name, info in cache.nodes.items():
        fresh = NodeInfo(name, info.node)
        for pod in info.pods.values():
            fresh.add_pod(pod)
        assert fresh.requested == info.requested
        assert fresh.nonzero == info.nonzero
        assert fresh.host_ports == info.host_ports
        assert sorted(info.tree.items()) == sorted(fresh.tree.items())
        assert info.generation == cache.nodes.generation_of(name)
    for key, name in cache.pod_node.items():
        assert key in cache.nodes[name].pods


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(OPS, max_size=60))
def test_incremental_snapshot_equals_full_copy(ops):
    clock = Clock()
    cache = ShardCache(assume_ttl=10.0, clock=clock)
    snapshot = Snapshot()
    touched: set[str] = set()
    for op in ops + [("update", None)]:
        if op[0] != "update":
            touched |= apply(cache, clock, op)
            assert_cache_consistent(cache)
            continue
        cloned = snapshot.update(cache)
        assert cloned == len([n for n in touched if n in cache.nodes])
        touched.clear()
        assert_snapshot_matches(snapshot, cache)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(OPS, max_size=60))
def test_full_variant_agrees_with_incremental(ops):
    clock = Clock()
    cache = ShardCache(assume_ttl=10.0, clock=clock)
    incremental, full = Snapshot(), Snapshot(full=True)
    zoned, zoned_full = Snapshot(zone_order=True), Snapshot(full=True, zone_order=True)
    for op in ops + [("update", None)]:
        if op[0] != "update":
            apply(cache, clock, op)
            continue
        incremental.update(cache)
        assert full.update(cache) == len(cache.nodes)
        assert_snapshot_matches(full, cache)
        assert sorted(full.table.names) == sorted(incremental.table.names)
        for variant in (zoned, zoned_full):  # kube-scheduler's order, kept incrementally or rebuilt
            variant.update(cache)
            assert_snapshot_matches(variant, cache)
            assert variant.table.names == variant.zones.interleaved()


def test_unchanged_cache_clones_nothing():
    cache = ShardCache()
    for i, name in enumerate(NODES):
        cache.set_node(make_node(name, 8 + i))
    snapshot = Snapshot()
    assert snapshot.update(cache) == len(NODES)
    assert snapshot.update(cache) == 0
    cache.set_pod(make_pod("p0", "n2", 500, 0))
    assert snapshot.update(cache) == 1
    row = snapshot.table.row_of["n2"]
    assert snapshot.table.requested[row][0] == 500


def test_node_deleted_with_pods_leaves_the_table_until_its_pods_go():
    cache = ShardCache()
    cache.set_node(make_node("n0", 4))
    cache.set_pod(make_pod("p0", "n0", 100, 0))
    snapshot = Snapshot()
    snapshot.update(cache)
    cache.remove_node("n0")
    snapshot.update(cache)
    assert "n0" not in snapshot.table.row_of  # no node object: not schedulable
    assert "n0" in snapshot.raw              # the placeholder still carries the pod
    cache.remove_pod("default/p0")
    snapshot.update(cache)
    assert "n0" not in snapshot.raw


def test_assumption_expires_after_ttl_and_confirmation_stops_expiry():
    clock = Clock()
    cache = ShardCache(assume_ttl=5.0, clock=clock)
    cache.set_node(make_node("n0", 4))
    cache.assume(make_pod("a", None, 100, 0), "n0")
    cache.assume(make_pod("b", None, 100, 0), "n0")
    cache.set_pod(make_pod("b", "n0", 100, 0))  # b's binding seen through the watch
    clock.now = 5.0
    assert cache.expire() == ["default/a"]
    assert list(cache.nodes["n0"].pods) == ["default/b"]
    assert not cache.is_assumed("default/b")


def test_confirmed_binding_keeps_the_node_generation_and_a_changed_pod_is_recounted():
    """The watch's version of our own binding (a bound copy of the assumed pod) is swapped
    in without marking the node changed; a bound version that counts differently (new
    labels) is placed anew, and the node's generation moves."""
    cache = ShardCache()
    cache.set_node(make_node("n0", 4))
    pending = make_pod("a", None, 100, 0)
    cache.assume(pending, "n0")
    generation = cache.nodes.generation_of("n0")
    bound = pending.bound_copy({"spec": {"nodeName": "n0"}, "status": {"phase": "Running"},
                                "metadata": {"resourceVersion": "7"}})
    cache.set_pod(bound)
    assert cache.nodes.generation_of("n0") == generation
    assert cache.nodes["n0"].pods["default/a"] is bound
    assert not cache.is_assumed("default/a")
    assert cache.nodes["n0"].requested[0] == 100

    other = make_pod("b", None, 100, 0)
    cache.assume(other, "n0")
    generation = cache.nodes.generation_of("n0")
    relabelled = make_pod("b", "n0", 100, 0)
    relabelled.labels = {"app": "changed"}
    cache.set_pod(relabelled)
    assert cache.nodes.generation_of("n0") > generation
    assert cache.nodes["n0"].pods["default/b"] is relabelled
    assert cache.nodes["n0"].requested[0] == 200


def test_zone_tree_interleaves_zones_and_reordered_table_stays_consistent():
    from shard.zone_tree import ZoneTree, zone_of

    cache = ShardCache()
    zones = {"n0": "a", "n1": "a", "n2": "a", "n3": "b", "n4": "c", "n5": "b"}
    tree = ZoneTree()
    for i, (name, zone) in enumerate(zones.items()):
        node = make_node(name, 4 + i)
        node.labels = {**node.labels, "topology.kubernetes.io/zone": zone}
        cache.set_node(node)
        tree.add(name, zone_of(node))
    cache.set_pod(make_pod("p0", "n3", 100, 0))
    snapshot = Snapshot()
    snapshot.update(cache)
    table = snapshot.table
    table.label_column("zone")
    table.pod_counts("all", lambda p: True)
    assert tree.interleaved() == ["n0", "n3", "n4", "n1", "n5", "n2"]
    tree.remove("n3")
    assert tree.interleaved() == ["n0", "n5", "n4", "n1", "n2"]
    table.reorder(["n0", "n3", "n4", "n1", "n5", "n2"])
    table.check()
    assert table.names[1] == "n3" and table.requested[1][0] == 100
    assert list(table.pod_counts("all", lambda p: True)) == [0, 1, 0, 0, 0, 0]


def test_the_shard_keeps_no_document_of_a_bound_pod_and_shares_equal_labels():
    """Every running pod is counted on its node without its JSON; a status-only update of it
    (a kubelet's new IP) allocates nothing: the kept pod stays as it is."""
    from common.store.memory import MemoryStore
    from common import config
    from shard.loop import ShardLoop
    from builders import node, pod
    store = MemoryStore()
    store.create(node("n1"))
    for name in ("a", "b"):
        store.create(pod(name, "100m", labels={"app": "web"}, node_name="n1"))
    loop = ShardLoop(config.defaults(), store)
    loop.start()
    a, b = loop.cache.nodes["n1"].pods["default/a"], loop.cache.nodes["n1"].pods["default/b"]
    assert a.raw is None and b.raw is None and loop.pods["default/a"] is a
    assert a.labels is b.labels
    update = store.get("Pod", "default/a")
    update["status"]["podIP"] = "10.0.0.7"
    store.update_status(update)
    loop.sync()
    assert loop.cache.nodes["n1"].pods["default/a"] is a and loop.pods["default/a"] is a
