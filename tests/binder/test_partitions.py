"""Partition leases (binder/partitions.py): a binder holds its fair share, and a replica
that joins gets its own partition back even while decisions keep flowing."""
from __future__ import annotations

from binder.partitions import PartitionLeases
from common.store.memory import MemoryStore


def binder(store, index: int) -> PartitionLeases:
    store.put_lease("binder", str(index), f"binder-{index}", 30)
    leases = PartitionLeases(store, 2, index, ttl=30)
    leases.holder = f"binder-{index}"
    return leases


def test_a_lone_binder_holds_every_partition():
    store = MemoryStore()
    first = binder(store, 0)
    first.step(busy=lambda p: False)
    assert first.held_now() == [0, 1] and first.accepts(1)


def test_a_joining_replica_gets_its_partition_while_decisions_keep_flowing():
    """The first binder, alone, took both partitions. Once the second joins, the first takes
    no new decision for partition 1 at once, keeps committing those in flight, and lets the
    partition go as soon as none is left; it used to wait for a moment without any decision
    in flight, which a steady flow never gives, so the second binder stayed idle."""
    store = MemoryStore()
    first = binder(store, 0)
    first.step(busy=lambda p: False)
    second = binder(store, 1)
    second.step(busy=lambda p: False)
    assert second.held_now() == []
    first.step(busy=lambda p: True)
    assert not first.accepts(1) and first.holds(1) and first.accepts(0)
    first.step(busy=lambda p: False)
    assert first.held_now() == [0]
    second.step(busy=lambda p: False)
    assert second.held_now() == [1] and second.accepts(1)


def test_a_starting_binder_takes_its_own_partition_before_it_looks_at_the_others():
    """Every shard's first decisions wait for a holder: a starting binder asks for its own
    partition's lease first, without listing the binders and the partitions' leases before
    (two round trips more), and never one another live binder holds."""
    store = MemoryStore()
    first = binder(store, 1)

    def listed(role):
        raise AssertionError(f"listed the {role} leases before taking its own partition")
    store.list_leases = listed
    assert first.take_own() and first.held_now() == [1]
    del store.list_leases
    other = binder(store, 3)  # index 3 of 2 partitions: partition 1 is its own too
    assert not other.take_own() and other.held_now() == []
