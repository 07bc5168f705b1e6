"""Dispatch policy, without processes: most idle shard, pod groups, re-dispatch rules."""
from __future__ import annotations

import time

from common import config
from common.store.memory import MemoryStore
from dispatcher.server import POD_GROUP_LABEL, Dispatcher
from builders import pod


class FakeLink:
    """Stands in for a shard's Dispatch stream and records what was sent."""

    def __init__(self, id_: str):
        self.id = id_
        self.held: set[str] = set()
        self.alive = True
        self.sent: list[str] = []
        self.revoked: list[str] = []
        self.address = f"fake:{id_}"
        self.holding: set[str] = set()
        self.holding_at = 0.0

    def send(self, pods, revoked):
        self.sent += [p.key for p in pods]
        self.revoked += list(revoked)

    def close(self):
        self.alive = False


def make_dispatcher(shards=("0", "1"), **dispatcher_cfg):
    cfg = config.defaults()
    cfg["dispatcher"].update(dispatcher_cfg)
    d = Dispatcher(cfg, MemoryStore(), port=0, seed=1)
    d.shards = {i: FakeLink(i) for i in shards}
    return d


def pending(name, group=None, scheduler="shardsched", uid=None):
    """An unbound pod in namespace "ns" as the dispatcher's watch delivers it; `group` its pod
    group label."""
    return pod(name, ns="ns", labels={POD_GROUP_LABEL: group} if group else None, images=("x",),
               scheduler=scheduler, uid=uid or "uid-{name}", status=False)


def bound(name, node="n1"):
    d = pending(name)
    d["spec"]["nodeName"] = node
    return d


def test_pods_go_to_the_least_loaded_shard():
    d = make_dispatcher()
    d.shards["0"].held = {f"ns/busy-{i}" for i in range(10)}
    for i in range(10):
        d._apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    assert len(d.shards["1"].sent) == 10 and not d.shards["0"].sent
    for i in range(10, 30):
        d._apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    assert len(d.shards["0"].held) == len(d.shards["1"].held) == 20  # evened out


def test_a_pod_group_stays_on_one_shard():
    d = make_dispatcher(shards=("0", "1", "2"))
    for i in range(30):
        d._apply("ADDED", "Pod", pending(f"g{i}", group=f"job-{i % 3}"))
    d._dispatch()
    for link in d.shards.values():
        groups = {int(k.split("g")[1]) % 3 for k in link.sent}
        assert len(groups) <= 1
    assert sum(len(link.sent) for link in d.shards.values()) == 30


def test_only_pods_for_this_scheduler_are_taken():
    d = make_dispatcher()
    d._apply("ADDED", "Pod", pending("mine"))
    d._apply("ADDED", "Pod", pending("theirs", scheduler="default-scheduler"))
    assert list(d.pending) == ["ns/mine"]
    d2 = make_dispatcher(alsoDefaultScheduler=True)
    d2._apply("ADDED", "Pod", pending("theirs", scheduler="default-scheduler"))
    assert list(d2.pending) == ["ns/theirs"]


def test_bound_and_deleted_pods_leave_and_deleted_ones_are_revoked():
    d = make_dispatcher(shards=("0",))
    d._apply("ADDED", "Pod", pending("a"))
    d._apply("ADDED", "Pod", pending("b"))
    d._dispatch()
    d._apply("MODIFIED", "Pod", bound("a"))
    d._apply("DELETED", "Pod", pending("b"))
    d._dispatch()
    assert not d.pending and not d.shards["0"].held
    assert d.shards["0"].revoked == ["ns/b"]


def test_a_lost_shard_and_returned_pods_are_redispatched():
    d = make_dispatcher()
    for i in range(10):
        d._apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    lost = d.shards["0"]
    held = set(lost.held)
    d._shard_down(lost)
    d._dispatch()
    assert held and held <= set(d.shards["1"].sent)
    link = d.shards["1"]
    d._take_back(link, ["ns/p0"])
    assert "ns/p0" in d.unsent
    d.shards["2"] = FakeLink("2")
    d.shards["2"].held = {f"ns/x{i}" for i in range(50)}  # busier, yet not the one that gave it back
    d._dispatch()
    assert d.pending["ns/p0"].shard == "2"


def test_pods_unbound_too_long_move_to_another_shard():
    d = make_dispatcher(redispatchAfterSeconds=1)
    d._apply("ADDED", "Pod", pending("slow"))
    d._dispatch()
    first = next(link for link in d.shards.values() if link.sent)
    d.pending["ns/slow"].sent_at -= 5  # as if sent five seconds ago
    d._overdue_at = 0.0
    d._overdue()
    d._dispatch()
    assert first.revoked == ["ns/slow"]
    assert d.pending["ns/slow"].shard not in (None, first.id)
    assert time.monotonic() - d.pending["ns/slow"].sent_at < 1


def test_a_pod_its_shard_still_works_on_stays_and_a_lost_one_comes_back():
    """With one shard: a pod the shard's last list says it holds (parked as unschedulable)
    keeps its shard and restarts its clock; a pod missing from the list was lost in the shard
    and is dispatched to it again (it used to be re-dispatched only with two shards)."""
    d = make_dispatcher(shards=("0",), redispatchAfterSeconds=1)
    d._apply("ADDED", "Pod", pending("parked"))
    d._apply("ADDED", "Pod", pending("lost"))
    d._dispatch()
    link = d.shards["0"]
    for key in ("ns/parked", "ns/lost"):
        d.pending[key].sent_at -= 5
    link.holding, link.holding_at = {"ns/parked"}, time.monotonic()
    d._overdue_at = 0.0
    d._overdue()
    d._dispatch()
    assert link.revoked == ["ns/lost"] and link.sent == ["ns/parked", "ns/lost", "ns/lost"]
    assert time.monotonic() - d.pending["ns/parked"].sent_at < 1


def test_a_gated_pod_waits_in_the_dispatcher_and_goes_out_once_its_gates_are_removed():
    """A pod with scheduling gates is not handed to any shard; the update that removes its
    last gate dispatches it. (The dispatcher used to dispatch it at once and ignore later
    updates of a pod it tracked: a shard that dropped it left it pending for good.)"""
    d = make_dispatcher()
    gated = pending("g")
    gated["spec"]["schedulingGates"] = [{"name": "a"}, {"name": "b"}]
    gated["metadata"]["resourceVersion"] = "5"
    d._apply("ADDED", "Pod", gated)
    d._dispatch()
    assert not any(link.sent for link in d.shards.values())
    assert "ns/g" in d.pending
    gated["spec"]["schedulingGates"] = [{"name": "b"}]
    gated["metadata"]["resourceVersion"] = "6"
    d._apply("MODIFIED", "Pod", gated)
    d._dispatch()
    assert not any(link.sent for link in d.shards.values())
    gated["spec"]["schedulingGates"] = []
    gated["metadata"]["resourceVersion"] = "7"
    d._apply("MODIFIED", "Pod", gated)
    d._dispatch()
    assert [k for link in d.shards.values() for k in link.sent] == ["ns/g"]
    assert d.pending["ns/g"].rv == "7"  # the shard waits for its watch to show the ungated pod
