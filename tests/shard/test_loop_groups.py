"""The property gang scheduling promises: no pod group is ever left partly bound, on random
clusters and through crashes. One shard loop on the memory store commits units with the
group commit protocol (common/scheduling/group_commit.py), which a crash may cut short at any failpoint;
the crashed process is replaced by a fresh loop, and the intent it left is resolved first, as
the next holder of the partition does. Shards also die on their own, between cycles, with
members waiting at Permit. At the end (and after every recovery): every group has none or
at least minMember of its pods placed, no intent is left, and `verify` holds."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from common.scheduling.group_commit import GroupCommit
from common.model.podgroup import INTENT_ANNOTATION
from common.store.memory import MemoryStore
from common.tools.verify import verify_store
from shard.loop import ShardLoop
from shard.store_committer import StoreCommitter
from builders import Clock, group_pod, make_config, node, pod, pod_group, running

POINTS = ("group-intent-written", "group-bound-part", "group-bound-all")


class Crash(Exception):
    """The process died here."""


class Crasher:
    """A failpoint hook that raises at the chosen hits: (point, nth time it is reached)."""

    def __init__(self, plan):
        self.plan = set(plan)
        self.hits: dict[str, int] = {}

    def __call__(self, point: str) -> None:
        n = self.hits[point] = self.hits.get(point, 0) + 1
        if (point, n) in self.plan:
            raise Crash(point)


def recover(store) -> None:
    """What the next holder of the partition does before anything else."""
    for g in store.list("PodGroup")[0]:
        if (g["metadata"].get("annotations") or {}).get(INTENT_ANNOTATION):
            GroupCommit(store, "next-holder").resolve(f"{g['metadata']['namespace']}/{g['metadata']['name']}")


def assert_whole(store) -> None:
    report = verify_store(store)
    assert report["ok"], report["violations"][:5]
    for g in store.list("PodGroup")[0]:
        assert not (g["metadata"].get("annotations") or {}).get(INTENT_ANNOTATION)


CLUSTER = st.fixed_dictionaries({
    "nodes": st.lists(st.integers(1, 6), min_size=1, max_size=6),
    "low": st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3)), max_size=6),  # (node, cpu) at priority 0
    "groups": st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(0, 2)),
                       min_size=1, max_size=4),  # (members, minMember, cpu, priority)
    "singles": st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2)), max_size=4),
    "crashes": st.lists(st.tuples(st.sampled_from(POINTS), st.integers(1, 3)), max_size=3),
    "shard_deaths": st.lists(st.integers(1, 30), max_size=2),  # cycles after which a shard dies
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CLUSTER, st.integers(0, 1000))
def test_no_group_is_ever_left_partly_bound(cluster, seed):
    store = MemoryStore()
    for i, cpu in enumerate(cluster["nodes"]):
        store.create(node(f"n{i}", cpu=str(cpu)))
    free = list(cluster["nodes"])
    for j, (at, cpu) in enumerate(cluster["low"]):
        if at < len(free) and cpu <= free[at]:  # running pods that fit: victims for preemptors
            free[at] -= cpu
            store.create(running(f"low-{j}", f"n{at}", str(cpu), 0))
    for g, (size, min_member, cpu, prio) in enumerate(cluster["groups"]):
        store.create(pod_group(f"g{g}", min(min_member, size), timeout=30))
        for i in range(size):
            store.create(group_pod(f"g{g}-{i}", f"g{g}", str(cpu), priority=prio))
    for s, (cpu, prio) in enumerate(cluster["singles"]):
        store.create(pod(f"s{s}", str(cpu), priority=prio))
    cfg = make_config(plugin_config={"Coscheduling": {"podGroupRejectPercentage": 0}})
    clock = Clock(1000.0)
    crasher = Crasher(cluster["crashes"])
    deaths = sorted(cluster["shard_deaths"])
    restarts = 0

    def fresh_loop():
        loop = ShardLoop(cfg, store, seed=seed + restarts, clock=clock, committer=StoreCommitter(store, crasher))
        loop.start()
        return loop

    loop = fresh_loop()
    cycles = 0
    for _ in range(40):  # passes; each moves the clock past timeouts and backoffs
        try:
            while loop.schedule_next() is not None:
                cycles += 1
                loop.release_waiting()
                if deaths and cycles >= deaths[0]:
                    deaths.pop(0)
                    raise Crash("shard")
            loop.release_waiting()
            loop.sync()
        except Crash:
            recover(store)
            assert_whole(store)
            restarts += 1
            loop = fresh_loop()
            continue
        clock.now += 61
        loop.release_waiting()
        loop.sync()
        loop.queue.move_all_to_active()
        if not loop.queue.has_active() and not loop.waiting.pods:
            break
    recover(store)  # (nothing left to do unless the last pass crashed)
    assert_whole(store)
