"""Leader election over the store's exclusive leases, with client-go's rules.

Replicas of a process that must act alone (the dispatcher) run an elector each. Every
`retryPeriod` (jittered while waiting, so standbys do not knock in step) each tries to
acquire the lease named `resourceName` with its identity: the store grants it when the lease
is free, expired, or already this holder's (`acquire_lease` is atomic against every other
caller, and on kube:// it is a coordination.k8s.io Lease updated under its resourceVersion).
The holder renews the same way. It counts as leading only while its last successful renewal
is less than `renewDeadline` old; since a standby can take the lease over only
`leaseDuration` after that renewal, and `renewDeadline < leaseDuration`, a leader cut off from
the store stops acting before anyone else may start. A renewal the store refuses (another
holder took the lease) ends leadership at once. On shutdown the leader releases the lease,
and only while it still holds it, so a standby takes over within one retry period instead of
waiting for the lease to expire.

On kube:// the lease is the Lease named `resourceName` itself, so RBAC can grant exactly that
name; on the other stores it is `shardsched:lease:leader-election:<resourceName>`.
"""
from __future__ import annotations

import logging
import random
import threading
import time

from ..config import ELECTION_JITTER as JITTER  # the durations' rules are checked with the config

log = logging.getLogger(__name__)

#: The store role of election leases; the lease's id is the configured resourceName.
ELECTION_ROLE = "leader-election"


class LeaderElector:
    def __init__(self, store, name: str, identity: str, lease_duration: float, renew_deadline: float,
                 retry_period: float, clock=time.monotonic, rng: random.Random | None = None):
        self.store = store
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.rng = rng or random.Random()
        self._renewed: float | None = None  # start of the last successful acquire or renewal
        #: Why the last attempt could not reach the store ("" when it did).
        self.error = ""
        self.transitions = 0  # times this elector became leader

    @classmethod
    def from_config(cls, cfg, store, identity: str) -> "LeaderElector":
        le = cfg.leader_election
        return cls(store, le.resource_name, identity, le.lease_duration_seconds,
                   le.renew_deadline_seconds, le.retry_period_seconds)

    def leading(self) -> bool:
        return self._renewed is not None and self.clock() - self._renewed < self.renew_deadline

    def step(self) -> bool:
        """One attempt to acquire or renew; returns whether this elector leads now."""
        start = self.clock()
        was = self.leading()
        try:
            held = self.store.acquire_lease(ELECTION_ROLE, self.name, self.identity, self.lease_duration)
        except Exception as e:  # the store is away: a leader keeps leading until its deadline
            if not self.error:
                log.warning("cannot reach lease %s: %s", self.name, e)
            self.error = str(e) or type(e).__name__
            held = None
        else:
            self.error = ""
        if held:
            self._renewed = start
            if not was:
                self.transitions += 1
                log.info("%s became the leader (lease %s)", self.identity, self.name)
        elif held is False and self._renewed is not None:
            self._renewed = None
            log.warning("%s lost lease %s to another holder", self.identity, self.name)
        elif self._renewed is not None and not self.leading():
            self._renewed = None
            log.warning("%s stopped leading: lease %s not renewed within %g s",
                        self.identity, self.name, self.renew_deadline)
        return self.leading()

    def run(self, stop: threading.Event, beat=lambda: None, on_change=lambda: None) -> None:
        """Attempt every retry period until `stop` (a standby's wait is jittered);
        `on_change()` after an attempt that began or ended leadership (the owner's loop may
        be waiting: it is told at once)."""
        leading = self.leading()
        while not stop.is_set():
            beat()
            was, leading = leading, self.step()
            if leading != was:
                on_change()
            wait = self.retry_period * (1 if leading else 1 + self.rng.random() * JITTER)
            stop.wait(wait)

    def release(self) -> None:
        """Give the lease up if we hold it (never someone else's: the store checks the holder)."""
        if self._renewed is None:
            return
        self._renewed = None
        try:
            self.store.drop_lease(ELECTION_ROLE, self.name, self.identity)
            log.info("%s released lease %s", self.identity, self.name)
        except Exception as e:  # it expires by itself
            log.warning("could not release lease %s (it expires by itself): %s", self.name, e)

    def holder(self) -> str | None:
        """The identity the store shows holding the lease now (None: nobody)."""
        return self.store.list_leases(ELECTION_ROLE).get(self.name)
