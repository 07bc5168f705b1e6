"""No stall without a death (issue 29): processes that restart on a new address, stop without
dying, or lose their parent, on a real redis-server with every process a child process.

Timing bounds are what the behaviour needs with room for a machine four times slower; each
test fails on the bug it guards (noted per test).
"""
from __future__ import annotations

import signal
import time

from builders import numbered_pod as pod
from test_runtime import assert_consistent, cluster_env, runtime_config, wait_bound  # noqa: F401

from common.runtime.identity import replica_identity
from common.runtime.leader_election import ELECTION_ROLE


def test_a_restarted_leader_takes_its_lease_back_at_once(cluster_env):  # noqa: F811
    """kill -9 of the leading dispatcher on `port: 0`, restarted at once: it comes back on a
    new port, yet it is the same replica and takes its lease back without waiting for it to
    expire. With the address as its identity it waited the whole leaseDurationSeconds (30 s
    here): the pods created after the restart were not bound within it."""
    url, store, start = cluster_env
    lease_s = 30
    cfg = runtime_config(leaderElection={"leaseDurationSeconds": lease_s, "renewDeadlineSeconds": 20,
                                         "retryPeriodSeconds": 2})
    assert cfg.dispatcher.port == 0
    cluster = start(cfg)
    name = cfg.leader_election.resource_name
    identity = replica_identity(cfg.leader_election.identity, "dispatcher", "0")
    assert not store.create_many([pod(i) for i in range(200)])
    wait_bound(store, 200)
    before = store.list_leases("dispatcher")["0"]
    assert store.list_leases(ELECTION_ROLE) == {name: identity}

    cluster.kill("dispatcher", 0)
    killed = time.monotonic()
    cluster.start_one("dispatcher", 0)
    assert not store.create_many([pod(i) for i in range(200, 500)])
    wait_bound(store, 500, timeout=lease_s - 5)
    took = time.monotonic() - killed
    after = store.list_leases("dispatcher")["0"]
    print(f"dispatcher killed and restarted ({before} -> {after}): 300 new pods bound {took:.2f} s "
          f"after the kill (leaseDurationSeconds {lease_s})")
    assert after != before, "port 0: the restarted process listens elsewhere"
    assert store.list_leases(ELECTION_ROLE) == {name: identity}
    assert_consistent(store)


FROZEN_BOUND_S = 30  # every pod bound within this while the peer stays frozen (4x slower machine)


def _freeze_during_flow(cluster, store, role: str, index: int, total: int = 1000) -> float:
    """SIGSTOP one process once pods flow, create the rest, and wait (the process still
    frozen) until every pod is bound; returns how long that took after the freeze."""
    frozen = []

    def freeze(bound):
        cluster.procs[(role, index)].send_signal(signal.SIGSTOP)
        frozen.append(time.monotonic())

    try:
        store.create_many([pod(i) for i in range(500)])
        deadline = time.monotonic() + 60
        while not sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName")):
            assert time.monotonic() < deadline, "nothing was bound"
            time.sleep(0.05)
        freeze(None)
        store.create_many([pod(i) for i in range(500, total)])
        wait_bound(store, total, timeout=FROZEN_BOUND_S)
        return time.monotonic() - frozen[0]
    finally:
        if frozen:
            cluster.procs[(role, index)].send_signal(signal.SIGCONT)


def test_a_frozen_binder_stalls_no_pod(cluster_env):  # noqa: F811
    """SIGSTOP of one binder of two while pods flow: its stream ends (keepalive), the other
    binder takes its partitions when their leases expire, the shards withdraw what they had
    sent to it and decide it again for the new holder: every pod is bound while it stays
    frozen, each exactly once, and once it wakes it commits nothing (its leases are gone:
    the fencing check before each commit). Pods used to wait for as long as it was frozen."""
    url, store, start = cluster_env
    cluster = start(runtime_config(shards=2, binders=2))
    took = _freeze_during_flow(cluster, store, "binder", 0)
    time.sleep(2.0)  # binder 0 wakes: give it time to (not) commit what it held
    binders = store.list_leases("binder")
    bound = {id_: cluster.status("binder", a).counters for id_, a in binders.items()}
    print(f"binder 0 frozen: all 1000 pods bound {took:.2f} s after the freeze; bindings per binder: "
          f"{ {i: c['bound'] for i, c in bound.items()} }, fenced off by binder 0: {bound['0']['fenced']}")
    assert sum(c["bound"] for c in bound.values()) == 1000, "a pod bound twice, or one unbound"
    assert_consistent(store)


def test_a_frozen_shard_stalls_no_pod(cluster_env):  # noqa: F811
    """SIGSTOP of one shard of two while pods flow: the dispatcher's stream to it ends
    (keepalive) and its pods go to the other shard: every pod bound while it stays frozen,
    exactly once."""
    url, store, start = cluster_env
    cluster = start(runtime_config(shards=2, binders=1))
    took = _freeze_during_flow(cluster, store, "shard", 0)
    time.sleep(2.0)  # shard 0 wakes and sends what it had decided: the binder refuses it
    binder = cluster.status("binder", store.list_leases("binder")["0"])
    print(f"shard 0 frozen: all 1000 pods bound {took:.2f} s after the freeze; "
          f"bindings: {binder.counters['bound']}")
    assert binder.counters["bound"] == 1000, "a pod bound twice, or one unbound"
    assert_consistent(store)


def test_sighup_neither_stops_nor_restarts_a_process(cluster_env):  # noqa: F811
    """SIGHUP (a closed terminal, or an operator expecting a reload) used to kill a process
    by Python's default, and `up` then restarted it. It is logged and the process carries on
    with the configuration it has (it reloads none); SIGTERM still stops it cleanly."""
    url, store, start = cluster_env
    cluster = start()
    cluster.wait_ready()
    shard = cluster.procs[("shard", 0)]
    shard.send_signal(signal.SIGHUP)
    log_path = cluster.log_path("shard", 0)
    deadline = time.monotonic() + 60
    while "SIGHUP" not in open(log_path).read():
        assert shard.poll() is None, f"shard 0 exited on SIGHUP with {shard.returncode}"
        assert time.monotonic() < deadline, "shard 0 never logged the SIGHUP"
        time.sleep(0.1)
    assert not store.create_many([pod(i) for i in range(100)])
    wait_bound(store, 100)
    assert shard.poll() is None
    shard.send_signal(signal.SIGTERM)
    assert shard.wait(timeout=60) == 0
