"""Leader election (common/runtime/leader_election.py) with client-go's rules, over the store's
exclusive leases: one leader at a time, takeover once the lease expires, a leader cut off
from the store stops before anyone may take over, release hands over at once, and nobody
removes a lease it does not hold."""
from __future__ import annotations

import time

import pytest

from builders import Clock
from common.config import ConfigError
from common.errors import StoreUnavailable
from common import config as config_mod
from common.runtime.leader_election import ELECTION_ROLE, LeaderElector
from common.store.memory import MemoryStore

NAME = "shardsched-dispatcher"


class CutOffStore(MemoryStore):
    """acquire_lease raises while `away`."""

    away = False

    def acquire_lease(self, role, id_, holder, ttl_s):
        if self.away:
            raise StoreUnavailable("the store is away")
        return super().acquire_lease(role, id_, holder, ttl_s)


def elector(store, identity, lease=0.4, renew=0.3, retry=0.05, clock=time.monotonic) -> LeaderElector:
    return LeaderElector(store, NAME, identity, lease, renew, retry, clock=clock)


def test_one_leader_and_a_standby_takes_over_once_the_lease_expires():
    # The store's leases expire by the real clock: a 2 s lease leaves a busy machine's sleeps
    # room, so the standby can only win once the leader stops renewing.
    store = MemoryStore()
    a, b = elector(store, "a:1", lease=2.0, renew=1.5), elector(store, "b:1", lease=2.0, renew=1.5)
    assert a.step() and not b.step()
    for _ in range(5):  # the leader renews; the standby keeps knocking in vain
        time.sleep(0.1)
        assert a.step() and not b.step()
    assert store.list_leases(ELECTION_ROLE) == {NAME: "a:1"}
    time.sleep(2.2)  # a stops renewing (killed): its lease expires
    assert b.step() and b.transitions == 1
    assert not a.step() and not a.leading(), "the old leader learns it lost at its next attempt"
    assert b.holder() == "b:1"


def test_a_leader_cut_off_from_the_store_stops_before_its_lease_can_expire():
    store, clock = CutOffStore(), Clock(0.0)
    a = elector(store, "a:1", lease=15, renew=10, retry=2, clock=clock)
    assert a.step()
    store.away = True
    clock.now = 9.0
    assert a.step() and a.error, "still within the renew deadline"
    clock.now = 10.01
    assert not a.step() and not a.leading()
    store.away = False
    assert a.step(), "its own lease: taken back at once"


def test_release_hands_over_at_once_and_never_drops_another_holders_lease():
    store, clock = MemoryStore(), Clock(0.0)
    a = elector(store, "a:1", lease=0.3, renew=0.2, clock=clock)
    # b's lease is long enough to outlive a busy machine's pause before the assertions below
    b, c = elector(store, "b:1", lease=5.0, renew=4.0), elector(store, "c:1", lease=0.3, renew=0.2)
    assert a.step()
    time.sleep(0.4)  # a's lease expires in the store, while a's own clock says it still leads
    assert a.leading() and b.step()
    a.release()
    assert store.list_leases(ELECTION_ROLE) == {NAME: "b:1"}, "a stale leader removed someone else's lease"
    b.release()
    assert c.step(), "released: no need to wait for the lease to expire"


@pytest.mark.parametrize("changes, path", [
    ({"renewDeadlineSeconds": 15}, "leaderElection.renewDeadlineSeconds"),
    ({"retryPeriodSeconds": 9}, "leaderElection.retryPeriodSeconds"),
    ({"resourceName": ""}, "leaderElection.resourceName"),
])
def test_durations_follow_client_gos_rules(changes, path):
    with pytest.raises(ConfigError) as e:
        config_mod.validate({"leaderElection": changes})
    assert e.value.path == path
    config_mod.validate({"leaderElection": {**changes, "leaderElect": False}})


def test_config_validate_and_the_dispatcher_refuse_bad_durations_alike(tmp_path):
    """`config validate` runs the check the dispatcher runs at start: a file it passes never
    makes the dispatcher exit, and one the dispatcher refuses it refuses with the same path."""
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "le.yaml"
    path.write_text("leaderElection: {leaseDurationSeconds: 5, renewDeadlineSeconds: 8}\n")
    shardsched = Path(sys.executable).with_name("shardsched")
    validate = subprocess.run([str(shardsched), "config", "validate", str(path)], capture_output=True, text=True)
    run = subprocess.run([sys.executable, "-m", "dispatcher", "--config", str(path), "--store", "memory://",
                          "--port", "0", "--metrics-port", "0"], capture_output=True, text=True, timeout=60)
    for done in (validate, run):
        assert done.returncode == 1
        assert "leaderElection.renewDeadlineSeconds: must be less than leaseDurationSeconds (5)" in done.stderr


def test_the_owner_is_told_when_leadership_begins():
    """`run`'s on_change: the dispatcher's loop, perhaps waiting, hears of it at once."""
    import threading

    store = MemoryStore()
    a = elector(store, "a")
    changed, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=a.run, args=(stop,), kwargs={"on_change": changed.set}, daemon=True)
    t.start()
    try:
        assert changed.wait(120) and a.leading()
    finally:
        stop.set()
        t.join(60)
