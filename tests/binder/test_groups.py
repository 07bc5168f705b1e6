"""The binder's side of gang scheduling (binder/groups.py): a unit judged as a whole and
bound all or nothing, the unit rule whatever a shard sends, victims that would break a placed
group refused, and the intents a crashed binder left resolved by the next holder of the
partition before it takes any decision there."""
from __future__ import annotations

import time

import pytest

from binder.server import BinderServer, Stream
from common.scheduling.group_commit import GroupCommit
from common.model.podgroup import INTENT_ANNOTATION
from common.store.memory import MemoryStore
from common.tools.verify import verify_store
from proto import shardsched_pb2 as pb
from builders import LiveBinder, decision, group_pod, make_config, node, pod, pod_group, running

ZONE = "topology.kubernetes.io/zone"


def binder_on(store, cfg=None) -> BinderServer:
    """A BinderServer on `store`, its view listed and every partition held; no gRPC."""
    binder = BinderServer(cfg or make_config(), store, 0, port=0, metrics_port=0)
    binder.informer.start()
    binder.partitions.holder = binder.group_commit.holder = "test"
    binder.partitions.step(lambda p: False)
    return binder


def unit(group: str, *decisions) -> pb.GroupDecision:
    return pb.GroupDecision(group=group, members=list(decisions))


def send(binder, decisions=(), units=()) -> dict:
    """Receive, commit what passed, return pod key -> Outcome."""
    stream = Stream("0")
    binder.receive(list(decisions), stream, list(units))
    chunk = binder.commits.take(timeout=0)
    if chunk:
        binder.commits._run(chunk)
    stream.end()
    out = {}
    while (batch := stream.take()) is not None:
        out.update((o.pod_key, o) for o in batch.outcomes)
    binder.informer.sync()
    return out


def bound(store) -> dict:
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in store.list("Pod")[0] if p["spec"].get("nodeName")}


def cluster(*objs) -> MemoryStore:
    store = MemoryStore()
    for o in objs:
        store.create(o)
    return store


def test_a_unit_that_fits_is_bound_as_one_and_its_intent_removed():
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 3),
                    *[group_pod(f"g-{i}", "g", "1") for i in range(3)])
    binder = binder_on(store)
    out = send(binder, units=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"),
                                   decision("default/g-2", "n2"))])
    assert all(o.bound for o in out.values()) and bound(store) == {"g-0": "n1", "g-1": "n1", "g-2": "n2"}
    assert INTENT_ANNOTATION not in (store.get("PodGroup", "default/g")["metadata"].get("annotations") or {})


def test_one_member_that_does_not_fit_refuses_the_unit_and_releases_every_reservation():
    """Three members on a node with room for two: each judged with the ones before it
    reserved, the third fails, all three are refused and nothing stays reserved; a unit
    that fits is bound afterwards."""
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 3),
                    *[group_pod(f"g-{i}", "g", "1") for i in range(3)])
    binder = binder_on(store)
    out = send(binder, units=[unit("default/g", *[decision(f"default/g-{i}", "n1") for i in range(3)])])
    assert out["default/g-2"].reason == "NodeResourcesFit: Insufficient cpu"
    assert [out[f"default/g-{i}"].reason for i in range(2)] == \
        ["GroupRefused: default/g-2: NodeResourcesFit: Insufficient cpu"] * 2
    assert not bound(store) and not binder.view.reserved and not binder.view.acc.assumed
    out = send(binder, units=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"),
                                   decision("default/g-2", "n2"))])
    assert len(bound(store)) == 3


@pytest.mark.parametrize("send_what, reason", [
    ("lone", "Coscheduling: pod group default/g has 0 member(s) bound; a unit of 1 does not make up its minMember 3"),
    ("short unit", "Coscheduling: pod group default/g has 0 member(s) bound; a unit of 2 does not make up its minMember 3"),
    ("missing group", "Coscheduling: PodGroup default/nowhere not found"),
    ("foreign member", "InvalidGroup: default/x is not in pod group default/g"),
])
def test_the_unit_rule_holds_whatever_a_shard_sends(send_what, reason):
    store = cluster(node("n1", cpu="8"), pod_group("g", 3), *[group_pod(f"g-{i}", "g", "1") for i in range(3)],
                    group_pod("lost", "nowhere", "1"), pod("x", "1"))
    binder = binder_on(store)
    if send_what == "lone":
        out = send(binder, [decision("default/g-0", "n1")])
    elif send_what == "short unit":
        out = send(binder, units=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"))])
    elif send_what == "missing group":
        out = send(binder, [decision("default/lost", "n1")])
    else:
        out = send(binder, units=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"),
                                       decision("default/x", "n1"))])
    refused = {o.reason.split(": ", 2)[-1] if o.reason.startswith("GroupRefused") else o.reason for o in out.values()}
    assert refused == {reason} and not bound(store) and not binder.view.reserved


def test_a_member_after_the_quorum_is_bound_alone():
    store = cluster(node("n1", cpu="8"), pod_group("g", 2), *[group_pod(f"g-{i}", "g", "1") for i in range(3)])
    binder = binder_on(store)
    send(binder, units=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"))])
    assert send(binder, [decision("default/g-2", "n1")])["default/g-2"].bound


def test_a_unit_across_binder_partitions_is_refused():
    cfg = make_config(binders={"count": 2})
    store = cluster(node("a1", cpu="4", labels={ZONE: "a"}), node("d1", cpu="4", labels={ZONE: "d"}),
                    pod_group("g", 2), *[group_pod(f"g-{i}", "g", "1") for i in range(2)])
    binder = binder_on(store, cfg)
    assert len(binder.partitions.held_now()) == 2
    out = send(binder, units=[unit("default/g", decision("default/g-0", "a1"), decision("default/g-1", "d1"))])
    assert out["default/g-1"].reason.startswith("InvalidGroup: default/g-1 is in partition")
    assert not bound(store)


def test_victims_that_would_break_a_placed_group_are_refused():
    labels = {"scheduling.x-k8s.io/pod-group": "v"}
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("v", 2),
                    running("v-0", "n1", "2", 0, labels=labels), running("v-1", "n2", "2", 0, labels=labels),
                    pod("high", "2", priority=10))
    binder = binder_on(store)
    out = send(binder, [decision("default/high", "n1", ["default/v-0"])])
    assert out["default/high"].reason == ("InvalidVictim: evicting 1 pod(s) of pod group default/v would leave "
                                          "fewer than its minMember 2 placed")
    assert store.get("Pod", "default/v-0") is not None


# --- intents a crash left ------------------------------------------------------------------

class Crash(Exception):
    pass


def crashed_commit(store, point: str = "group-bound-part", holder: str = "dead-binder") -> None:
    """A binder that died at `point` of its commit of g-0..g-2 on n1, n1, n2."""
    def die(p):
        if p == point:
            raise Crash(p)

    with pytest.raises(Crash):
        GroupCommit(store, holder, die).commit(
            "default/g", [(f"default/g-{i}", f"uid-default-g-{i}", n) for i, n in enumerate(("n1", "n1", "n2"))])


def test_the_next_holder_of_the_partition_rolls_a_cut_short_commit_forward_first():
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 3),
                    *[group_pod(f"g-{i}", "g", "1") for i in range(3)], pod("other", "1"))
    crashed_commit(store)
    assert bound(store) == {"g-0": "n1"}
    binder = binder_on(store)  # takes partition 0: resolves first
    assert bound(store) == {"g-0": "n1", "g-1": "n1", "g-2": "n2"}
    assert INTENT_ANNOTATION not in (store.get("PodGroup", "default/g")["metadata"].get("annotations") or {})
    binder.informer.sync()
    out = send(binder, [decision("default/other", "n1")])  # n1 is full: the roll forward counts
    assert out["default/other"].reason == "NodeResourcesFit: Insufficient cpu"
    assert verify_store(store)["ok"]


def test_a_roll_forward_that_no_longer_fits_is_rolled_back():
    """While no binder held the partition, another scheduler filled n2: g-2 would overcommit
    it, so the next holder deletes g-0 (bound by the intent) instead of finishing."""
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 3),
                    *[group_pod(f"g-{i}", "g", "1") for i in range(3)])
    crashed_commit(store)
    store.create(running("squatter", "n2", "2", 0, scheduler="default-scheduler"))
    binder_on(store)
    assert bound(store) == {"squatter": "n2"} and store.get("Pod", "default/g-0") is None
    assert verify_store(store)["ok"]


def test_an_orphaned_intent_of_a_held_partition_is_resolved_by_the_sweep():
    """A commit whose store calls failed half way leaves its intent while the binder keeps
    the partition: once it has stayed longer than the grace time and no commit of the binder
    carries it, the sweep resolves it."""
    store = cluster(node("n1", cpu="2"), node("n2", cpu="2"), pod_group("g", 3),
                    *[group_pod(f"g-{i}", "g", "1") for i in range(3)])
    binder = binder_on(store, make_config(store={"requestTimeoutSeconds": 0.1}))  # grace 0.3 s
    crashed_commit(store, holder="test")
    binder.informer.sync()
    held = binder.partitions.held_now()
    assert binder.recovery.sweep(held) == 0, "seen for the first time: within its grace"
    time.sleep(0.35)
    assert binder.recovery.sweep(held) == 1
    assert len(bound(store)) == 3


def test_group_decisions_over_the_wire():
    """A shard's GroupDecision on the Decide stream: all bound, one outcome each."""
    store = cluster(node("n1", cpu="4"), pod_group("g", 2), *[group_pod(f"g-{i}", "g", "1") for i in range(2)])
    binder = LiveBinder(store)
    try:
        binder.sync()
        out = binder.decide(groups=[unit("default/g", decision("default/g-0", "n1"), decision("default/g-1", "n1"))])
        assert set(out) == {"default/g-0", "default/g-1"} and all(o.bound for o in out.values())
    finally:
        binder.close()
