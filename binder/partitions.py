"""Which partitions this binder commits for: held through one lease each.

Every binder replica tries to hold its fair share of the `binders.count` partitions,
ceil(partitions / live binders): first the partition of its own index (so `up`'s binder i
holds partition i), then any partition whose lease is free or expired, unless the binder of
that index is alive (it will take its own). A binder that holds more than its share (a
replica joined) stops taking new decisions for the extra ones at once (`accepts`; shards
then look the holders up again) and lets them go as soon as their commits in flight are
done: under a steady flow of decisions there is never a moment without any, so waiting for
one would keep the new replica idle. A dead binder stops renewing; its partitions are free
after `binders.leaseDurationSeconds` and the survivors take them.

`holds(p)` is what the commit path asks before every commit: true only while the lease was
renewed recently enough that it cannot have expired yet, so a binder cut off from the store
stops committing before anyone else may take over.
"""
from __future__ import annotations

import logging
import math
import time

from common.scheduling.partition import PARTITION_ROLE

log = logging.getLogger(__name__)


class PartitionLeases:
    def __init__(self, store, partitions: int, preferred: int, ttl: float, clock=time.monotonic,
                 on_acquire=None):
        """`on_acquire(p)`, when given, runs once this binder holds the lease of a partition
        it did not hold, before it counts as held (the binder resolves what a previous holder
        left half done there: binder/groups.py); if it raises, the partition is not taken."""
        self.store = store
        self.partitions = partitions
        self.preferred = preferred % partitions
        self.ttl = ttl
        self.clock = clock
        self.holder = ""  # the binder's address, set once it listens
        self.on_acquire = on_acquire
        #: partition -> when our hold on it certainly ends (clock seconds)
        self.held: dict[int, float] = {}
        #: held partitions beyond our share: no new decisions, released once drained
        self.draining: set[int] = set()

    def holds(self, partition: int) -> bool:
        return self.held.get(partition, 0.0) > self.clock()

    def accepts(self, partition: int) -> bool:
        """Whether a new decision for `partition` may be taken."""
        return partition not in self.draining and self.holds(partition)

    def held_now(self) -> list[int]:
        now = self.clock()
        return sorted(p for p, until in self.held.items() if until > now)

    def _acquire(self, p: int) -> bool:
        start = self.clock()
        if self.store.acquire_lease(PARTITION_ROLE, str(p), self.holder, self.ttl):
            # Counted from before the request: the store's clock started no earlier. A margin
            # of a quarter TTL leaves room for a renewal that is late.
            if p not in self.held:
                if self.on_acquire is not None:
                    resolved = self.on_acquire(p)
                    if resolved:
                        log.info("partition %d: resolved %d group commit(s) a previous holder left", p, resolved)
                    if self.clock() >= start + self.ttl * 0.75:
                        return False  # that took too long to be sure of the lease: renew first
                log.info("holding partition %d", p)
            self.held[p] = start + self.ttl * 0.75
            return True
        if p in self.held:
            log.warning("lost partition %d to another binder", p)
            del self.held[p]
        return False

    def take_own(self) -> bool:
        """At start: try for the partition of this binder's index at once, before the first
        `step`'s look at the other binders and leases (two more round trips while every
        shard's decisions wait for a holder). `step` would take it first anyway."""
        return self._acquire(self.preferred)

    def step(self, busy) -> None:
        """Renew, take a fair share, give back extras (`busy(p)`: decisions of p in flight)."""
        for p in list(self.held):
            self._acquire(p)
        binders = self.store.list_leases("binder")
        share = math.ceil(self.partitions / max(1, len(binders)))
        if len(self.held) < share:
            holders = self.store.list_leases(PARTITION_ROLE)
            order = [self.preferred] + [p for p in range(self.partitions) if p != self.preferred]
            for p in order:
                if len(self.held) >= share:
                    break
                if p in self.held or str(p) in holders:
                    continue
                if p != self.preferred and binders.get(str(p), self.holder) != self.holder:
                    continue  # binder p is alive: its own partition is its to take
                self._acquire(p)
        by_preference = sorted(self.held, key=lambda p: p == self.preferred)
        self.draining = set(by_preference[:max(0, len(self.held) - share)])
        for p in [p for p in self.draining if not busy(p)]:
            self.release(p)

    def release(self, p: int) -> None:
        self.held.pop(p, None)
        self.draining.discard(p)
        try:
            self.store.drop_lease(PARTITION_ROLE, str(p), self.holder)
            log.info("released partition %d", p)
        except Exception as e:  # it expires by itself
            log.warning("could not release partition %d: %s", p, e)

    def release_all(self) -> None:
        for p in list(self.held):
            self.release(p)
