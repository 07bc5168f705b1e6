"""A shard's decisions to a binder that stopped answering or lost its partition are withdrawn
and decided again for the current holder, exactly once (issue 29, item 1)."""
from __future__ import annotations

import queue
import time
from types import SimpleNamespace

from builders import make_config
from common.scheduling.partition import PARTITION_ROLE
from common.store.memory import MemoryStore
from proto import shardsched_pb2 as pb
from shard.server import BinderClient


class FakeLink:
    def __init__(self, address: str):
        self.address, self.held, self.alive, self.sent = address, set(), True, []

    def send(self, message) -> None:
        self.sent.append(message)

    def close(self) -> None:
        self.alive = False


def client(store, timeout: float = 20) -> BinderClient:
    cfg = make_config(binders={"count": 1}, shards={"decisionTimeoutSeconds": timeout})
    c = BinderClient(store, "0", cfg, queue.SimpleQueue(), lambda name: None, security=None)
    links: dict = {}
    c._link = lambda address: links.setdefault(address, FakeLink(address))
    c.fake_links = links
    return c


def decide(c: BinderClient, key: str) -> None:
    entry = SimpleNamespace(pod=SimpleNamespace(key=key, uid="u", resource_version="1", volumes=[]))
    c.commit(entry, SimpleNamespace(node="n1", victims=[]), None)
    assert c.flush() == []


def test_a_decision_whose_partition_moved_is_withdrawn_once_and_the_old_answer_ignored():
    store = MemoryStore()
    assert store.acquire_lease(PARTITION_ROLE, "0", "a:1", 60)
    c = client(store)
    decide(c, "default/p")
    old = c.fake_links["a:1"]
    assert old.held == {"default/p"}
    store.drop_lease(PARTITION_ROLE, "0", "a:1")  # a's lease ran out; b took the partition
    assert store.acquire_lease(PARTITION_ROLE, "0", "b:1", 60)
    c.refresh_holders()
    (withdrawn,) = c.overdue()
    assert withdrawn.pod_key == "default/p" and withdrawn.reason.startswith("Withdrawn: from binder at a:1")
    assert c.overdue() == [], "withdrawn once"
    assert [o.pod_key for *_, o in c.settle([withdrawn])] == ["default/p"]  # the loop decides again
    decide(c, "default/p")
    assert c.fake_links["b:1"].held == {"default/p"}
    # a wakes and answers: that answer is not the new decision's
    assert c.settle([pb.Outcome(pod_key="default/p", bound=False, reason="NotPartitionHolder")], old) == []
    assert "default/p" in c.in_flight
    assert [o.bound for *_, o in c.settle([pb.Outcome(pod_key="default/p", bound=True)],
                                             c.fake_links["b:1"])] == [True]


def test_a_decision_no_binder_answers_is_withdrawn_after_its_deadline():
    store = MemoryStore()
    assert store.acquire_lease(PARTITION_ROLE, "0", "a:1", 60)
    c = client(store, timeout=1)
    decide(c, "default/p")
    assert c.overdue() == []
    at, link, p = c.sent["default/p"]
    c.sent["default/p"] = (at - 2, link, p)
    (withdrawn,) = c.overdue()
    assert "no answer within 1 s" in withdrawn.reason
    assert c.fake_links["a:1"].held == set()


def test_a_pod_the_binder_calls_bound_but_our_watch_shows_pending_is_retried_not_dropped():
    """After the store came back from an older snapshot, a binder whose watch has not noticed
    yet answers AlreadyBound for pods that are pending again: the shard used to drop them
    (left to the dispatcher's re-dispatch, each round redispatchAfterSeconds later)."""
    from builders import node, pod
    from shard.server import ShardServer

    store = MemoryStore()
    store.create(node("n1"))
    created = store.create(pod("p"))
    server = ShardServer(make_config(), store, 0)
    server.loop.start()
    meta = created["metadata"]
    server._take(pb.PodBatch(pods=[pb.PendingPod(key="default/p", uid=meta["uid"],
                                                 resource_version=meta["resourceVersion"])]))
    assert server.loop.schedule_next().scheduled
    server.binders.outgoing = {}  # (not sent: no binder here)
    server._outcomes([pb.Outcome(pod_key="default/p", node="n1", bound=False,
                                 reason="AlreadyBound: default/p is bound to n1")])
    assert server.counters["gone"] == 0 and "default/p" in server.loop.queue
    assert "default/p" in server._holding()


def test_a_decision_waiting_for_its_volumes_is_given_the_binding_timeout_too():
    """The binder answers a pod whose claims it binds only once they are bound (VolumeBinding's
    PreBind, up to bindTimeoutSeconds): such a decision is not withdrawn after
    decisionTimeoutSeconds alone (it used to be, and sent again every 20 s while it waited)."""
    store = MemoryStore()
    assert store.acquire_lease(PARTITION_ROLE, "0", "a:1", 60)
    cfg = make_config(binders={"count": 1}, shards={"decisionTimeoutSeconds": 1},
                      plugin_config={"VolumeBinding": {"bindTimeoutSeconds": 30}})
    c = BinderClient(store, "0", cfg, queue.SimpleQueue(), lambda name: None, security=None)
    links: dict = {}
    c._link = lambda address: links.setdefault(address, FakeLink(address))
    volumes = [SimpleNamespace(claim="data")]
    for key, vols in (("default/claims", volumes), ("default/plain", [])):
        pod = SimpleNamespace(key=key, uid="u", resource_version="1", volumes=vols, scheduler_name="shardsched")
        c.commit(SimpleNamespace(pod=pod), SimpleNamespace(node="n1", victims=[]), None)
    assert c.flush() == []
    for key in ("default/claims", "default/plain"):
        at, link, p = c.sent[key]
        c.sent[key] = (at - 2, link, p)
    (withdrawn,) = c.overdue()
    assert withdrawn.pod_key == "default/plain" and "no answer within 1 s" in withdrawn.reason
    at, link, p = c.sent["default/claims"]
    c.sent["default/claims"] = (at - 30, link, p)
    (withdrawn,) = c.overdue()
    assert withdrawn.pod_key == "default/claims" and "no answer within 31 s" in withdrawn.reason


def test_conflicts_are_counted_by_kind():
    """Every refused decision counts as a conflict; those withdrawn for want of an answer and
    those the binder calls AlreadyBound are counted apart too, so a benchmark can tell the
    placements the binder's checks refused from an overloaded binder's slowness."""
    from builders import node, pod
    from shard.server import ShardServer

    store = MemoryStore()
    store.create(node("n1"))
    server = ShardServer(make_config(), store, 0)
    server.loop.start()
    reasons = ["Withdrawn: from binder at a:1: no answer within 20 s",
               "AlreadyBound: default/p2 is bound to n1", "NodeResourcesFit: Insufficient cpu"]
    for i, reason in enumerate(reasons):
        created = store.create(pod(f"p{i}"))
        meta = created["metadata"]
        server._take(pb.PodBatch(pods=[pb.PendingPod(key=f"default/p{i}", uid=meta["uid"],
                                                     resource_version=meta["resourceVersion"])]))
        server.loop.sync()
        assert server.loop.schedule_next().scheduled
        server.binders.outgoing = {}  # (not sent: no binder here)
        server._outcomes([pb.Outcome(pod_key=f"default/p{i}", node="n1", bound=False, reason=reason)])
    c = server.counters
    assert (c["conflicts"], c["conflicts_withdrawn"], c["conflicts_already_bound"]) == (3, 1, 1)


def test_a_decision_made_before_any_binder_holds_its_partition_waits_for_one_and_is_not_lost():
    """At start-up the shards list faster than the binder, and cycle before it holds its
    partition: their first decisions used to fail at once as BinderUnavailable (each pod then
    backed off, a second or more). They now stay assumed and go to the holder once there is one."""
    store = MemoryStore()
    c = client(store)
    decide(c, "default/p")
    assert "default/p" in c.in_flight and c.fake_links == {}
    assert c.flush() == [], "still waiting, nothing refused"
    assert store.acquire_lease(PARTITION_ROLE, "0", "a:1", 60)
    c.refresh_holders()
    assert c.flush() == []
    assert c.fake_links["a:1"].held == {"default/p"}
    assert [o.bound for *_, o in c.settle([pb.Outcome(pod_key="default/p", bound=True)],
                                             c.fake_links["a:1"])] == [True]


def test_a_decision_no_binder_takes_within_the_decision_timeout_is_refused():
    store = MemoryStore()
    c = client(store, timeout=1)
    decide(c, "default/p")
    c.unheld_since[0] -= 2  # no binder for longer than decisionTimeoutSeconds
    (refused,) = c.flush()
    assert refused.pod_key == "default/p" and refused.reason.startswith("BinderUnavailable: partition 0")
    assert c.outgoing == {} and c.unheld_since == {}


def test_a_look_up_begun_before_the_holders_in_use_or_before_a_loss_was_said_is_dropped():
    """The periodic look-up runs off the scheduling thread (ShardServer.holders_forever) and
    its answer is applied later: one begun before the look-up in use, or before a binder said
    it lost its partition, is older news and must not bring a gone holder back."""
    store = MemoryStore()
    assert store.acquire_lease(PARTITION_ROLE, "0", "a:1", 60)
    c = client(store)
    begun = time.monotonic()                      # a look-up starts, sees a:1, answers late
    store.drop_lease(PARTITION_ROLE, "0")
    assert store.acquire_lease(PARTITION_ROLE, "0", "b:1", 60)
    c.refresh_holders()
    c.use_holders({"0": "a:1"}, begun)
    assert c.holders == {0: "b:1"}
    begun = time.monotonic()                      # another starts, sees b:1 ...
    c.forget_holders()                            # ... and b says it lost the partition
    c.use_holders({"0": "b:1"}, begun)
    assert c.holders == {}
    c.use_holders({"0": "c:1"}, time.monotonic())
    assert c.holders == {0: "c:1"}
