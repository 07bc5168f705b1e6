"""Dispatch policy, without processes: most idle shard, pod groups, re-dispatch rules."""
from __future__ import annotations

import threading
import time

from common import config
from common.store.memory import MemoryStore
from common.model.objects import POD_GROUP_LABEL
from dispatcher.server import DISPATCH_EVERY_S, Dispatcher
from builders import Clock, pod, pod_group
from proto import shardsched_pb2 as pb


class FakeLink:
    """Stands in for a shard's Dispatch stream and records what was sent; `reported`: the
    shard's first report came (it is given pods only then)."""

    def __init__(self, id_: str, address: str | None = None, reported: bool = True):
        self.id = id_
        self.held: set[str] = set()
        self.alive = True
        self.sent: list[str] = []
        self.revoked: list[str] = []
        self.address = address or f"fake:{id_}"
        self.holding: set[str] = set()
        self.holding_at = 0.0
        self.adopted = reported

    @classmethod
    def dialled(cls, id_, address, inbox, security) -> "FakeLink":
        """The dispatcher's link_factory: a stream just opened, no report yet."""
        return cls(id_, address, reported=False)

    def send(self, pods, revoked):
        self.sent += [p.key for p in pods]
        self.revoked += list(revoked)

    def close(self):
        self.alive = False


def make_dispatcher(shards=("0", "1"), reported=True, clock=time.monotonic, **dispatcher_cfg):
    """`dispatcher_cfg`: the dispatcher section's fields, as the file writes them;
    `reported`: whether the shards' first reports came; `clock`: the dispatcher's."""
    cfg = config.validate({"dispatcher": dispatcher_cfg})
    d = Dispatcher(cfg, MemoryStore(), port=0, seed=1, link_factory=FakeLink.dialled, clock=clock)
    d.shards = {i: FakeLink(i, reported=reported) for i in shards}
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
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    assert len(d.shards["1"].sent) == 10 and not d.shards["0"].sent
    for i in range(10, 30):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    assert len(d.shards["0"].held) == len(d.shards["1"].held) == 20  # evened out


def test_a_pod_group_stays_on_one_shard():
    d = make_dispatcher(shards=("0", "1", "2"))
    for i in range(30):
        d.apply("ADDED", "Pod", pending(f"g{i}", group=f"job-{i % 3}"))
    d._dispatch()
    for link in d.shards.values():
        groups = {int(k.split("g")[1]) % 3 for k in link.sent}
        assert len(groups) <= 1
    assert sum(len(link.sent) for link in d.shards.values()) == 30


def test_a_pod_group_whose_shard_dies_goes_whole_to_one_other_shard():
    d = make_dispatcher(shards=("0", "1", "2"))
    for i in range(12):
        d.apply("ADDED", "Pod", pending(f"m{i}", group="job"))
    d._dispatch()
    (home,) = [link for link in d.shards.values() if link.sent]
    assert len(home.sent) == 12
    d.apply("MODIFIED", "Pod", bound("m0"))  # one was placed already: it stays
    d._shard_down(home)
    d._dispatch()
    receivers = [link for link in d.shards.values() if link is not home and link.sent]
    assert len(receivers) == 1 and sorted(receivers[0].sent) == sorted(f"ns/m{i}" for i in range(1, 12))


def test_a_groups_shard_is_forgotten_once_none_of_its_pods_is_pending():
    d = make_dispatcher()
    d.apply("ADDED", "Pod", pending("a", group="job"))
    d._dispatch()
    assert d.groups == {"ns/job": next(i for i, link in d.shards.items() if link.sent)}
    d.apply("MODIFIED", "Pod", dict(bound("a"), metadata={**bound("a")["metadata"],
                                                            "labels": {POD_GROUP_LABEL: "job"}}))
    assert d.groups == {} and not d.group_pending


def test_the_dispatcher_keeps_pod_group_status_current():
    """Scheduling once minMember pods exist, Scheduled once they are bound, Running once they
    run; each write guarded by the group's resourceVersion (a write that lost a race is
    retried with the newer version the watch brings)."""
    store = MemoryStore()
    cfg = config.defaults()
    d = Dispatcher(cfg, store, port=0, seed=1)
    d.informer.start()
    store.create(pod_group("g", 2, ns="ns"))
    for name in ("a", "b"):
        store.create(pending(name, group="g"))

    def status():
        d.informer.sync()
        d.group_status._written_at = 0.0
        d.group_status.step()
        d.informer.sync()
        return store.get("PodGroup", "ns/g").get("status")

    assert status() == {"phase": "Scheduling", "scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}
    for name in ("a", "b"):
        store.bind(f"ns/{name}", "n1")  # the memory store plays kubelet: Running at once
    assert status() == {"phase": "Running", "scheduled": 2, "running": 2, "succeeded": 0, "failed": 0}
    group = store.get("PodGroup", "ns/g")
    group["metadata"]["annotations"] = {"note": "x"}
    store.update(group)  # the dispatcher's copy is stale now
    store.create(pending("c", group="g"))
    store.bind("ns/c", "n1")
    d.apply("ADDED", "Pod", store.get("Pod", "ns/c"))  # seen before the group's change
    d.group_status._written_at = 0.0
    assert d.group_status.step() == 0 and "ns/g" in d.group_status.dirty  # lost the race: kept for later
    assert status()["scheduled"] == 3 and store.get("PodGroup", "ns/g")["metadata"]["annotations"] == {"note": "x"}


def test_only_pods_for_this_scheduler_are_taken():
    d = make_dispatcher()
    d.apply("ADDED", "Pod", pending("mine"))
    d.apply("ADDED", "Pod", pending("theirs", scheduler="default-scheduler"))
    assert list(d.pending) == ["ns/mine"]
    d2 = make_dispatcher(alsoDefaultScheduler=True)
    d2.apply("ADDED", "Pod", pending("theirs", scheduler="default-scheduler"))
    assert list(d2.pending) == ["ns/theirs"]


def test_bound_and_deleted_pods_leave_and_deleted_ones_are_revoked():
    d = make_dispatcher(shards=("0",))
    d.apply("ADDED", "Pod", pending("a"))
    d.apply("ADDED", "Pod", pending("b"))
    d._dispatch()
    d.apply("MODIFIED", "Pod", bound("a"))
    d.apply("DELETED", "Pod", pending("b"))
    d._dispatch()
    assert not d.pending and not d.shards["0"].held
    assert d.shards["0"].revoked == ["ns/b"]


def test_a_lost_shard_and_returned_pods_are_redispatched():
    d = make_dispatcher()
    for i in range(10):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
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
    d.apply("ADDED", "Pod", pending("slow"))
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
    d.apply("ADDED", "Pod", pending("parked"))
    d.apply("ADDED", "Pod", pending("lost"))
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


def report(d, link, holding):
    """The shard's report on `link`, listing what it holds, through the dispatcher's inbox."""
    d.inbox.put(("shard", link, pb.ShardReport(holding=holding, holding_listed=True)))
    d._drain()


def test_a_new_leader_adopts_what_the_shards_hold_before_dispatching():
    """After a takeover (or a restart) the shards still hold the pods the previous leader
    gave them: a new leader waits for each shard's first report and leaves those pods where
    they are, instead of dispatching them a second time (two shards on one pod)."""
    d = make_dispatcher(reported=False)
    for i in range(6):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._lead()
    report(d, d.shards["0"], ["ns/p0", "ns/p1", "ns/gone"])
    assert d._adopting(), "shard 1 has not reported yet"
    report(d, d.shards["1"], ["ns/p2"])
    assert not d._adopting()
    d._dispatch()
    sent = d.shards["0"].sent + d.shards["1"].sent
    assert sorted(sent) == ["ns/p3", "ns/p4", "ns/p5"]
    assert {k: d.pending[k].shard for k in ("ns/p0", "ns/p1", "ns/p2")} == {"ns/p0": "0", "ns/p1": "0", "ns/p2": "1"}
    assert d.counters["adopted"] == 3
    report(d, d.shards["1"], ["ns/p3"])  # a later list adopts nothing: p3 went where it was sent
    assert d.pending["ns/p3"].shard in ("0", "1") and d.counters["adopted"] == 3


def test_a_leader_that_loses_its_lease_closes_its_streams_and_stands_by():
    d = make_dispatcher()
    for i in range(4):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._lead()
    for link in d.shards.values():
        report(d, link, [])
    assert not d._adopting()
    d._dispatch()
    links = list(d.shards.values())
    d._stand_by()
    assert not d.leading and not d.shards and all(not link.alive for link in links)
    assert all(p.shard is None for p in d.pending.values()) and len(d.unsent) == 4
    assert d.gauges()["leader"] == 0


def test_a_gated_pod_waits_in_the_dispatcher_and_goes_out_once_its_gates_are_removed():
    """A pod with scheduling gates is not handed to any shard; the update that removes its
    last gate dispatches it. (The dispatcher used to dispatch it at once and ignore later
    updates of a pod it tracked: a shard that dropped it left it pending for good.)"""
    d = make_dispatcher()
    gated = pending("g")
    gated["spec"]["schedulingGates"] = [{"name": "a"}, {"name": "b"}]
    gated["metadata"]["resourceVersion"] = "5"
    d.apply("ADDED", "Pod", gated)
    d._dispatch()
    assert not any(link.sent for link in d.shards.values())
    assert "ns/g" in d.pending
    gated["spec"]["schedulingGates"] = [{"name": "b"}]
    gated["metadata"]["resourceVersion"] = "6"
    d.apply("MODIFIED", "Pod", gated)
    d._dispatch()
    assert not any(link.sent for link in d.shards.values())
    gated["spec"]["schedulingGates"] = []
    gated["metadata"]["resourceVersion"] = "7"
    d.apply("MODIFIED", "Pod", gated)
    d._dispatch()
    assert [k for link in d.shards.values() for k in link.sent] == ["ns/g"]
    assert d.pending["ns/g"].rv == "7"  # the shard waits for its watch to show the ungated pod


def test_the_dispatchers_initial_list_passes_over_bound_pods_but_pod_group_members():
    """It needs pending pods only: a bound pod is never delivered to it (on Redis never even
    decoded), but for a pod group's bound members, which the PodGroup's status counts."""
    store = MemoryStore()
    store.create(pod_group("g", 2, ns="ns"))
    store.create(pending("waiting"))
    store.create(pending("running"))
    store.create(pending("member", group="g"))
    for name in ("running", "member"):
        store.bind(f"ns/{name}", "n1")
    d = Dispatcher(config.defaults(), store, port=0, seed=1)
    seen = []
    apply = d.informer.on_event
    d.informer.on_event = lambda type_, kind, obj: (seen.append((kind, obj["metadata"]["name"])), apply(type_, kind, obj))
    d.informer.start()
    assert sorted(name for kind, name in seen if kind == "Pod") == ["member", "waiting"]
    assert set(d.pending) == {"ns/waiting"}
    assert set(d.group_status.index.members["ns/g"]) == {"ns/member"}


def test_a_pool_goes_only_to_its_shards_and_moves_when_one_dies():
    """subClusters.shardsPerPool: a named pool's pods go to that many shards (the least
    loaded of them); the cluster-wide pool to every shard; a dead shard's pools move."""
    cfg = config.validate({"subClusters": {"label": "shardsched.io/pool", "shardsPerPool": 1}})
    d = Dispatcher(cfg, MemoryStore(), port=0, seed=1)
    d.shards = {i: FakeLink(i) for i in ("0", "1", "2")}
    for i in range(12):
        gpu = pending(f"gpu{i}")
        gpu["spec"]["nodeSelector"] = {"shardsched.io/pool": "gpu"}
        d.apply("ADDED", "Pod", gpu)
        d.apply("ADDED", "Pod", pending(f"cpu{i}"))
    d._dispatch()
    gpu_on = {link.id for link in d.shards.values() for k in link.sent if "gpu" in k}
    cpu_on = {link.id for link in d.shards.values() for k in link.sent if "cpu" in k}
    # the cluster-wide pool may go anywhere: to the least loaded, here the two without the gpu pool
    assert len(gpu_on) == 1 and cpu_on == {"0", "1", "2"} - gpu_on
    assert d.queues()["pool:gpu"] == 12 and d.queues()["pool:*"] == 12
    (first,) = gpu_on
    d._shard_down(d.shards[first])
    d._dispatch()
    moved = {link.id for link in d.shards.values() for k in link.sent if "gpu" in k}
    assert len(moved) == 1 and first not in moved


def test_the_dispatchers_watch_passes_over_bound_pods_it_does_not_hold(redis_url):
    """On Redis the events of bound pods that are neither pending here nor pod-group members
    are never decoded nor delivered (every pod brings two or three: bound, then Running);
    its own pending pods' bindings and a group member's are, and the watch moves past what
    it passed over."""
    import uuid
    from common.store.redis_store import RedisStore

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(pod_group("g", 2, ns="ns"))
    d = Dispatcher(config.defaults(), store, port=0, seed=1)
    seen = []
    apply = d.informer.on_event
    d.informer.on_event = lambda type_, kind, obj: (
        kind == "Pod" and seen.append((type_, obj["metadata"]["name"])), apply(type_, kind, obj))
    d.informer.start()
    store.create(pending("mine"))
    store.create(pending("member", group="g"))
    store.create(pending("theirs", scheduler="default-scheduler"))
    d.informer.sync()
    for name in ("mine", "member", "theirs"):
        store.bind(f"ns/{name}", "n1")
    d.informer.sync()
    for name in ("mine", "member", "theirs"):  # the kubelet's Running, on the whole document
        running = store.get("Pod", f"ns/{name}")
        running["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        store.update_status(running)
    store.delete("Pod", "ns/theirs")
    d.informer.sync()
    assert seen == [("ADDED", "mine"), ("ADDED", "member"), ("ADDED", "theirs"),
                    ("MODIFIED", "mine"), ("MODIFIED", "member"), ("MODIFIED", "member")]
    assert not d.pending and set(d.group_status.index.members["ns/g"]) == {"ns/member"}
    assert d.informer.rv == store.list("Pod")[1]  # the stream's head: nothing left to read again
    store.close()


def _first_of_two_shards_with_a_backlog() -> Dispatcher:
    """A leading dispatcher of shards.count 2 that knows shard 0 only (which holds nothing)
    and has 1,000 pods to hand out."""
    d = Dispatcher(config.validate({"shards": {"count": 2}}), MemoryStore(), port=0, seed=1)
    d.shards = {"0": FakeLink("0")}
    for i in range(1000):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._lead()
    d.adopt_until = 0.0  # (shard 0 said what it holds: nothing)
    return d


def test_a_backlog_is_not_all_given_to_the_first_shard_that_joins():
    """At start-up the first shard used to get the whole backlog in its first second (256
    pods a step), before the second had joined: that one then had almost nothing to do for
    the whole run. While fewer shards than `shards.count` have joined, shortly after a
    leader starts, each live shard gets at most its share; the rest waits for the others."""
    d = _first_of_two_shards_with_a_backlog()
    for _ in range(10):
        d._dispatch()
    assert len(d.shards["0"].sent) == 500
    d.shards["1"] = FakeLink("1")
    for _ in range(10):
        d._dispatch()
    assert len(d.shards["1"].sent) == 500 and not d.unsent


def test_after_the_start_the_live_shards_get_everything_whatever_shards_count_says():
    d = _first_of_two_shards_with_a_backlog()
    d.joining_until = 0.0  # the start is long past: shard 1 is not coming
    for _ in range(10):
        d._dispatch()
    assert len(d.shards["0"].sent) == 1000


def test_a_dispatcher_holding_pods_back_for_shards_yet_to_join_does_not_spin():
    """While the pods left wait for shards to join, a step waits for events as an idle one
    does, rather than going round at once with nothing to send (a core's worth of CPU on the
    two the whole stack starts on)."""
    cfg = config.validate({"shards": {"count": 2}})
    store = MemoryStore()
    store.put_lease("shard", "0", "fake:0", 60)
    d = Dispatcher(cfg, store, port=0, seed=1)
    d.shards = {"0": FakeLink("0")}
    for i in range(600):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._lead()
    d.adopt_until = 0.0
    waits = []
    d.informer.sync = lambda timeout=0.0, max_events=10000: waits.append(timeout) or 0
    for _ in range(4):
        d.step()
    assert len(d.shards["0"].sent) == 300
    assert waits[-1] > 0


def _leading_on_one_shard(clock=time.monotonic, **dispatcher_cfg):
    """A leader whose one shard has reported, its informer's syncs recorded (their timeouts
    in `waits`) instead of run, and the link's messages counted in `messages`."""
    store = MemoryStore()
    store.put_lease("shard", "0", "fake:0", 60)
    d = Dispatcher(config.validate({"dispatcher": dispatcher_cfg}), store, port=0, seed=1, clock=clock)
    link = d.shards["0"] = FakeLink("0")
    d._lead()
    d.adopt_until = d.joining_until = 0.0  # (no shard is awaited: the one there gets every pod)
    d.waits, d.messages, d.rests = [], [], []
    d.informer.sync = lambda timeout=0.0, max_events=10000: d.waits.append(timeout) or 0
    d.stop_event.wait = lambda timeout: d.rests.append(timeout) or False  # (no time passes)
    send = link.send
    link.send = lambda pods, revoked: d.messages.append(([p.key for p in pods], list(revoked))) or send(pods, revoked)
    return d


def test_pods_that_come_soon_after_a_message_go_together_in_the_next():
    """Seen failing before DISPATCH_EVERY_S (each step sent what it had, a pod or two a
    message at a paced rate): a pod after a quiet spell goes at once; those that come
    within DISPATCH_EVERY_S of that message wait, each step meanwhile resting until they are
    due and then reading what the watch brought in one poll that does not wait (not
    polling every watch linger, nor going round at once), and then go in one message.
    The dispatcher's clock moves a microsecond a look, so a busy machine's pause between two
    steps does not make the pods due."""
    import itertools

    ticks, start = itertools.count(), time.monotonic()  # a microsecond a look, however busy the machine
    d = _leading_on_one_shard(clock=lambda: start + next(ticks) * 1e-6)
    d.apply("ADDED", "Pod", pending("p0"))
    d.step()
    assert d.messages == [(["ns/p0"], [])] and not d.rests
    for i in (1, 2):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
        d.step()
        assert len(d.messages) == 1 and 0 < d.rests[-1] <= DISPATCH_EVERY_S and d.waits[-1] == 0.0
    d.dispatched_at -= DISPATCH_EVERY_S  # (the time has come)
    d.step()
    assert d.messages[1:] == [(["ns/p1", "ns/p2"], [])]
    assert d.shards["0"].held == {"ns/p0", "ns/p1", "ns/p2"}


def test_a_full_batch_and_a_revocation_go_without_waiting():
    d = _leading_on_one_shard(batchSize=10)
    d.apply("ADDED", "Pod", pending("p0"))
    d.step()
    for i in range(1, 11):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d.step()  # a batch for the one shard: no reason to wait
    assert [len(pods) for pods, _ in d.messages] == [1, 10]
    d.apply("DELETED", "Pod", pending("p1"))  # deleted while its shard holds it
    d.step()
    assert d.messages[2] == ([], ["ns/p1"])


def test_the_configured_watch_linger_paces_its_informer():
    """store.watchLingerSeconds reaches the dispatcher's watch (0 reads each event as it comes)."""
    cfg = config.validate({"store": {"watchLingerSeconds": 0.02}})
    assert Dispatcher(cfg, MemoryStore(), port=0, seed=1).informer.pace.linger_s == 0.02
    assert make_dispatcher().informer.pace.linger_s == config.defaults().store.watch_linger_seconds == 0.005


def test_while_shards_are_still_joining_at_start_the_dispatcher_looks_for_them_often():
    """The second shard of a starting stack used to wait up to half a second after its lease
    for the dispatcher's next look (0.1 s only while no shard at all was known), and the
    pods held back for it waited too. Until every shard of `shards.count` has joined (in the
    grace after a leader starts), it looks as often as while it knew none."""
    cfg = config.validate({"shards": {"count": 2}})
    store = MemoryStore()
    store.put_lease("shard", "0", "fake:0", 60)
    d = Dispatcher(cfg, store, port=0, seed=1)
    d._lead()
    d._membership()
    assert set(d.shards) == {"0"}
    store.put_lease("shard", "1", "fake:1", 60)
    d._membership_at = time.monotonic() - 0.2  # the last look was 0.2 s ago
    d._membership()
    assert set(d.shards) == {"0", "1"}
    for link in d.shards.values():
        link.close()


# --- a shard killed and restarted (issue 31: back and scheduling, nothing lost or doubled) ---

def _leading_over_leases(*ids) -> Dispatcher:
    """A leading dispatcher that found shards `ids` through their leases (which outlive this
    test) and had each one's first report."""
    store = MemoryStore()
    for i in ids:
        store.put_lease("shard", i, f"10.0.0.{i}:7000", 600)
    d = Dispatcher(config.validate({}), store, port=0, seed=1, link_factory=FakeLink.dialled)
    d._lead()
    d.joining_until = 0.0  # its start is long past: the live shards get every pod
    _membership(d)
    for link in list(d.shards.values()):
        report(d, link, [])
    return d


def _two_shards_holding(n: int) -> Dispatcher:
    """Shards 0 and 1 live, `n` pending pods p0.. dispatched between them."""
    d = _leading_over_leases("0", "1")
    for i in range(n):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    d._dispatch()
    return d


def _membership(d) -> None:
    """The dispatcher's look at the shards' leases, now (it looks every half second)."""
    d._membership_at = 0.0
    d._membership()


def _break(d, link) -> None:
    """The link's stream ends (the shard's process was killed: its socket closed)."""
    d.inbox.put(("shard", link, None))
    d._drain()


def _dialled_again(d, id_, old):
    """Membership rounds until the dispatcher opens a new stream to shard `id_` (it waits a
    moment after a break before it dials a live lease's address again)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _membership(d)
        link = d.shards.get(id_)
        if link is not None and link is not old:
            return link
        time.sleep(0.05)
    raise AssertionError(f"shard {id_} was never dialled again")


def test_a_shard_whose_stream_breaks_while_its_lease_lives_gets_no_pods_until_it_reports():
    """Killed with -9, a shard's lease lingers (up to shardTimeoutSeconds) naming an address
    nobody answers on. The broken stream is proof enough: its pods go to the live shards at
    once, and a stream dialled to that address again gets nothing until the shard reports on
    it. (The dispatcher used to dial the dead address every half second and, the new link
    holding nothing, send it the most pods each time, until the lease expired.)"""
    d = _two_shards_holding(20)
    dead = d.shards["0"]
    held = set(dead.held)
    assert held
    _break(d, dead)
    d._dispatch()
    assert held <= set(d.shards["1"].sent), "the dead shard's pods went to the live one at once"
    for i in range(20, 40):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    dialled = []
    for _ in range(3):
        again = _dialled_again(d, "0", dialled[-1] if dialled else dead)
        dialled.append(again)
        d._dispatch()
        assert not again.sent and not again.held
        _break(d, again)  # connection refused: the process is still listing
    d._dispatch()
    assert {p.shard for p in d.pending.values()} == {"1"} and not d.unsent
    assert all(link.address == dead.address for link in dialled)


def test_a_restarted_shard_gets_new_and_returned_pods_once_it_reports():
    """The process restarted in place (same id, same address: the lease looks unchanged)
    is dialled again, and once it reports (holding nothing) it takes its share of the pods
    that come, as least loaded; so does one back at another address."""
    for address in (None, "10.0.0.9:7001"):
        d = _two_shards_holding(10)
        dead = d.shards["0"]
        _break(d, dead)
        d._dispatch()
        assert len(d.shards["1"].held) == 10
        if address is not None:
            d.store.put_lease("shard", "0", address, 600)
        back = _dialled_again(d, "0", dead)
        assert back.address == (address or dead.address)
        report(d, back, [])
        for i in range(10, 20):
            d.apply("ADDED", "Pod", pending(f"p{i}"))
        d._dispatch()
        assert sorted(back.sent) == [f"ns/p{i}" for i in range(10, 20)]
        d._take_back(d.shards["1"], ["ns/p0"])  # a pod the other one gives back goes to it too
        d._dispatch()
        assert d.pending["ns/p0"].shard == "0"


def test_a_shard_back_with_pods_meanwhile_sent_elsewhere_is_told_to_drop_them():
    """A shard whose stream broke but whose process lived on (a network blip) still works on
    the pods it held, which went to another shard meanwhile: its first report on the new
    stream gets them revoked, so that one shard schedules each pod."""
    d = _two_shards_holding(10)
    blinked = d.shards["0"]
    held = sorted(blinked.held)
    _break(d, blinked)
    d._dispatch()
    back = _dialled_again(d, "0", blinked)
    report(d, back, held)
    d._dispatch()
    assert sorted(back.revoked) == held
    assert all(d.pending[k].shard == "1" for k in held)


def test_a_shard_back_takes_its_share_of_the_pods_the_other_held_meanwhile():
    """While shard 0 was away (killed, listing again) shard 1 took its pods and every new one,
    more than it schedules at once. Back, shard 0 takes its share of those (the ones sent last)
    as well as of the new ones, instead of idling beside a backlog."""
    d = _leading_over_leases("0", "1")
    dead = d.shards["0"]
    _break(d, dead)
    for i in range(1000):
        d.apply("ADDED", "Pod", pending(f"p{i}"))
    for _ in range(10):
        d._dispatch()
    first = d.shards["1"]
    assert len(first.held) == 1000
    back = _dialled_again(d, "0", dead)
    report(d, back, [])
    for _ in range(10):
        d._dispatch()
    assert len(back.held) == len(first.held) == 500
    assert sorted(first.revoked) == sorted(back.sent)
    assert {d.pending[k].shard for k in back.sent} == {"0"} and not d.unsent


def test_a_pod_created_and_bound_within_one_read_is_not_left_pending(redis_url):
    """Seen failing before: the store judges its skip on every entry of a read before any
    is applied, so a pod whose creation and binding came in one read (a standby, or a
    dispatcher behind) had its binding passed over ("not pending here" yet) and was then
    held pending for ever, to be dispatched again though bound."""
    import uuid
    from common.store.redis_store import RedisStore

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    d = Dispatcher(config.defaults(), store, port=0, seed=1)
    d.informer.start()
    store.create(pending("quick"))
    store.bind("ns/quick", "n1")
    store.create(pending("waiting"))
    d.informer.sync()
    assert set(d.pending) == {"ns/waiting"}
    assert d.informer.rv == store.list("Pod")[1]
    store.close()


def test_an_idle_dispatcher_waits_until_its_next_check_and_a_report_ends_the_wait():
    """With nothing to send a pass waits on the doorbell until the next look at the shards'
    leases (or the next check of the pods sent and unbound), not the busy poll; a shard's
    report rings it; pods waiting for a shard keep the busy poll."""
    from dispatcher.server import BUSY_WAIT_S, MEMBERSHIP_EVERY_S, OVERDUE_EVERY_S

    d = make_dispatcher(clock=Clock(1000.0))  # (a stall of the test cannot make a check due)
    assert d.event_driven
    d.leading = True
    d._membership_at = d._overdue_at = d.clock()
    assert BUSY_WAIT_S < d._wait_for() <= MEMBERSHIP_EVERY_S
    d.apply("ADDED", "Pod", pending("p"))
    assert d._wait_for() == BUSY_WAIT_S  # waiting for its message
    d._dispatch()
    d._overdue_at = d.clock() - OVERDUE_EVERY_S  # the check of the pods sent is due now
    assert d._wait_for() == 0.0
    d.doorbell.wait(0.0)
    report(d, d.shards["0"], ["ns/p"])
    assert d.doorbell.wait(0.0)


class SlowShardLeases(MemoryStore):
    """A store whose look-ups of the shards' leases hang while `hold` is set (an API server
    slow to answer a LIST, or frozen)."""

    def __init__(self):
        super().__init__()
        self.hold = threading.Event()
        self.release = threading.Event()
        self.looked = threading.Event()

    def list_leases(self, role: str) -> dict[str, str]:
        if role == "shard" and self.hold.is_set():
            self.looked.set()
            self.release.wait(120)
        return super().list_leases(role)


def test_a_slow_look_at_the_shards_leases_holds_no_dispatching_pass():
    """The look at the shards' leases every half second was a LIST in the dispatching pass:
    py-spy found the pass waiting in it for 20-58% of each second while a busy API server bound
    a backlog (2026-11-27). A run looks off the pass now (`membership_forever`), and hands
    each answer over through the inbox: here a look hangs, and a pod is dispatched meanwhile;
    then a shard's new lease is taken from the next answer."""
    store = SlowShardLeases()
    store.put_lease("shard", "0", "fake:0", 60)
    d = Dispatcher(config.validate({}), store, port=0, seed=1, link_factory=FakeLink.dialled)
    d.informer.start()
    d._lead()
    d.adopt_until = d.joining_until = 0.0
    looking = threading.Thread(target=d.membership_forever, daemon=True)
    try:
        looking.start()
        deadline = time.monotonic() + 60
        while "0" not in d.shards and time.monotonic() < deadline:
            d.step()
        report(d, d.shards["0"], [])
        store.hold.set()
        assert store.looked.wait(60)  # a look is under way, and hangs
        d.apply("ADDED", "Pod", pending("p0"))
        passes = threading.Thread(target=lambda: [d.step() for _ in range(3)], daemon=True)
        passes.start()
        passes.join(60)
        assert not passes.is_alive(), "a pass waited for the look at the leases"
        assert d.shards["0"].sent == ["ns/p0"]
        store.hold.clear()
        store.put_lease("shard", "1", "fake:1", 60)
        store.release.set()
        deadline = time.monotonic() + 60  # (its own minute, whatever the machine took before)
        while "1" not in d.shards and time.monotonic() < deadline:
            d.step()
        assert set(d.shards) == {"0", "1"}
    finally:
        store.release.set()
        d.stop_event.set()
        looking.join(60)
