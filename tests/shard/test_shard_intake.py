"""The shard's intake of store events (shard/intake.py): which pods a DRA event wakes, as kube
v1.37's DynamicResources queueing hints decide (a claim event concerns the pods that
reference the claim, unless it frees devices; a pod's own status naming its generated
claim lets it in)."""
from __future__ import annotations

import uuid

import pytest

from common.store.memory import MemoryStore
from builders import (Clock, after_status_write, allocation, claim_pod, device_class, forge_status_hint, gpu,
                      make_config, node, resource_claim, resource_slice, status_write)


def _loop(*docs):
    from shard.loop import ShardLoop
    from shard.store_committer import StoreCommitter

    store = MemoryStore()
    for d in docs:
        store.create(d)
    clock = Clock(1000.0)
    loop = ShardLoop(make_config(), store, committer=StoreCommitter(store), clock=clock)
    loop.start()
    return store, loop, clock


def _parked(loop) -> int:
    return loop.queue.lengths()["unschedulable"]


def _one_gpu_taken():
    """n1 with one GPU, held by the claim `theirs` of the bound pod q; p's claim `mine` waits."""
    return (node("n1"), device_class(), resource_slice("n1", devices=[gpu(0)]),
            resource_claim("theirs", allocation=allocation("n1", "gpu-0"), reserved_for=["q"]),
            claim_pod("q", claims=["theirs"], node_name="n1"), resource_claim("mine"),
            claim_pod("p", claims=["mine"]))


def test_a_claim_event_for_another_pods_claim_leaves_a_parked_pod_parked():
    """Seen failing before: every claim event moved every parked pod with claims back."""
    store, loop, _ = _loop(*_one_gpu_taken())
    first = loop.schedule_next()
    assert not first.scheduled and "cannot allocate all claims" in loop.messages["default/p"]
    assert _parked(loop) == 1
    store.create(resource_claim("unrelated"))
    loop.sync()
    assert _parked(loop) == 1
    other = store.get("ResourceClaim", "default/unrelated")
    other["status"] = {"reservedFor": [{"resource": "pods", "name": "x", "uid": "uid-default-x"}]}
    store.update_status(other)
    loop.sync()
    assert _parked(loop) == 1
    assert loop.schedule_next() is None


def test_a_deallocated_claim_wakes_the_pods_waiting_for_devices():
    """kube's preQueueingHint: a deallocation frees devices any pod may take."""
    store, loop, clock = _loop(*_one_gpu_taken())
    assert not loop.schedule_next().scheduled
    store.delete("Pod", "default/q")
    theirs = store.get("ResourceClaim", "default/theirs")
    theirs["status"] = {}
    store.update_status(theirs)
    loop.sync()
    assert _parked(loop) == 0
    clock.now += 60  # past the backoff
    retry = loop.schedule_next()
    assert retry is not None and retry.node == "n1"
    assert store.get("ResourceClaim", "default/mine")["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_an_allocated_claim_deleted_wakes_the_pods_waiting_for_devices():
    store, loop, _ = _loop(*_one_gpu_taken())
    assert not loop.schedule_next().scheduled
    store.delete("ResourceClaim", "default/theirs")
    loop.sync()
    assert _parked(loop) == 0


def test_a_reservation_dropped_wakes_the_pod_that_references_the_claim_only():
    """A claim allocated and reserved for as many pods as it may be keeps p off every node;
    its reservation dropped concerns p (it references the claim), not r (it does not)."""
    store, loop, clock = _loop(
        node("n1"), device_class(), resource_slice("n1", devices=[gpu(0), gpu(1)]),
        resource_claim("busy", allocation=allocation("n1", "gpu-0"), reserved_for=[f"q{i}" for i in range(256)]),
        claim_pod("p", claims=["busy"]),
        resource_claim("theirs", allocation=allocation("n1", "gpu-1"), reserved_for=["s"]),
        claim_pod("s", claims=["theirs"], node_name="n1"), resource_claim("rs"), claim_pod("r", claims=["rs"]))
    for _ in range(2):
        assert not loop.schedule_next().scheduled
    assert "resourceclaim in use" in loop.messages["default/p"]
    assert _parked(loop) == 2
    busy = store.get("ResourceClaim", "default/busy")
    busy["status"]["reservedFor"] = busy["status"]["reservedFor"][1:]
    store.update_status(busy)
    loop.sync()
    assert _parked(loop) == 1 and loop.queue.lengths()["backoff"] + loop.queue.lengths()["active"] == 1
    clock.now += 60
    retry = loop.schedule_next()
    assert retry is not None and retry.pod.key == "default/p" and retry.node == "n1"


def test_a_pod_held_back_for_its_generated_claim_is_let_in_whichever_comes_first():
    """The claim controller makes the claim, then names it in the pod's status; a watch per
    kind (kube://) may show the pod's status first. Either order lets the pod in, and a claim
    made for another pod does not."""
    tmpl = [("gpu", "one-gpu")]
    mine = resource_claim("p-gpu-abcde", owner_pod="p")
    store, loop, clock = _loop(node("n1"), device_class(), resource_slice("n1"), claim_pod("p", templates=tmpl),
                               claim_pod("o", templates=tmpl))
    assert loop.schedule_next() is None
    assert loop.gated["default/p"] == 'pod "default/p": ResourceClaim not created yet'
    pod = store.get("Pod", "default/p")
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]
    store.update_status(pod)  # the status first
    loop.sync()
    assert loop.gated["default/p"] == 'resourceclaim.resource.k8s.io "p-gpu-abcde" not found'
    store.create(resource_claim("o-gpu-fghij", owner_pod="o"))
    loop.sync()
    assert "default/p" in loop.gated and "default/o" in loop.gated
    store.create(mine)  # then its claim
    loop.sync()
    assert "default/p" not in loop.gated
    done = loop.schedule_next()
    assert done.scheduled and done.node == "n1"
    # the usual order: the claim, then the status naming it
    store.create(resource_claim("o-gpu-klmno", owner_pod="o"))
    loop.sync()
    assert "default/o" in loop.gated
    other = store.get("Pod", "default/o")
    other["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "o-gpu-klmno"}]
    store.update_status(other)
    loop.sync()
    assert "default/o" not in loop.gated
    assert loop.schedule_next().node == "n1"


def test_a_poison_pod_among_the_running_ones_listed_at_start_is_reported_and_the_rest_counted(
        redis_url, monkeypatch):
    """The initial list reads pages ahead and bound pods lean: a record no writer should have
    made (a label that is not a string, written past the store's checks) is still refused,
    naming the pod and the field, and every other pod of every page is counted."""
    import uuid

    import common.store.redis_store as redis_store
    from builders import pod
    from common.store.redis_store import RedisStore
    from shard.loop import ShardLoop

    monkeypatch.setattr(redis_store, "_LIST_PAGE", 2)
    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(node("n1", cpu="8"))
    docs = [pod(f"p{i}", "100m", labels={"app": "web"}, node_name="n1") for i in range(7)]
    docs[3]["metadata"]["labels"]["app"] = 3
    for d in docs:
        d["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    assert store.create_many_trusted("Pod", docs) == []
    loop = ShardLoop(make_config(), store)
    loop.start()
    assert str(loop.errors["Pod default/p3"]).startswith("Pod default/p3: metadata.labels.app: must be a string")
    assert loop.cache.counted("default/p3") is None
    assert [i for i in range(7) if loop.cache.counted(f"default/p{i}") is not None] == [0, 1, 2, 4, 5, 6]
    store.close()


@pytest.fixture
def running_on_redis(redis_url):
    """A shard following an embedded Redis whose n1 holds the bound pod a."""
    from builders import pod
    from common.store.redis_store import RedisStore
    from shard.loop import ShardLoop

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(node("n1", cpu="8"))
    store.create(pod("a", "1", node_name="n1", labels={"app": "web"}))
    loop = ShardLoop(make_config(), store)
    loop.start()
    assert loop.cache.counted("default/a") is not None
    yield store, loop
    store.close()


def test_a_status_only_write_of_a_counted_pod_is_applied_from_its_hint_undecoded(running_on_redis, redis_url):
    """Seen failing before: the shard decoded every pod event. The kubelet's Running write
    (startTime, IPs, conditions) changes only what the hint carries: the counted pod shows
    the start time a full parse would give, and an entry whose document would not even
    decode is applied from its hint alone (nothing decoded, nothing reported)."""
    from common.model.objects import parse_pod

    store, loop = running_on_redis
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z", podIP="10.0.0.7",
                  conditions=[{"type": "Ready", "status": "True"}])
    loop.sync()
    counted = loop.cache.counted("default/a")
    assert counted.start_time == parse_pod(store.get("Pod", "default/a")).start_time is not None
    assert counted.phase == "Running" and loop.pods["default/a"] is counted
    forge_status_hint(store, redis_url, "default/a", '["Running","2026-01-02T00:00:00Z",""]')
    loop.sync()
    assert store.skipped_records == 0 and not loop.errors
    assert loop.cache.counted("default/a").start_time > counted.start_time


@pytest.mark.parametrize("then", ["finished", "deleted", "relabelled"])
def test_what_follows_a_status_write_applied_from_its_hint_is_applied(running_on_redis, then):
    """The events after one applied from its hint still reach the shard: a terminal phase
    (no hint the shard takes: the pod leaves the node), a deletion, a label change written
    together with a status change (no hint at all: more than the status changed)."""
    store, loop = running_on_redis
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z")
    loop.sync()
    after_status_write(store, "default/a", then, terminal="Succeeded")
    loop.sync()
    counted = loop.cache.counted("default/a")
    if then == "relabelled":
        assert counted is not None and dict(counted.labels) == {"app": "db"}
    else:
        assert counted is None


def test_a_status_write_taken_from_its_hint_follows_the_events_read_with_it(running_on_redis):
    """Seen failing with the hint taken as the store read it (before the events read with it
    were applied): a label change and then a status-only write, read in one sync, leave the
    pod with both, the start time not lost under the label change's older status."""
    from common.model.objects import parse_pod

    store, loop = running_on_redis
    obj = store.get("Pod", "default/a")
    obj["metadata"]["labels"]["app"] = "db"
    store.update(obj)
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z")
    loop.sync()
    counted = loop.cache.counted("default/a")
    assert dict(counted.labels) == {"app": "db"}
    assert counted.start_time == parse_pod(store.get("Pod", "default/a")).start_time


def test_catching_up_over_a_status_hint_whose_document_does_not_decode(running_on_redis, redis_url):
    """Seen failing before (the merge of the catch-up and the status hint): a catch-up
    (`latest`) reads each event's object to find each object's last, and a hinted entry
    whose document does not decode raised out of the shard's sync. It is applied from its
    hint, as the follow loop applies it, and what follows it is applied too."""
    store, loop = running_on_redis
    forge_status_hint(store, redis_url, "default/a", '["Running","2026-01-02T00:00:00Z",""]')
    from builders import pod

    store.create(pod("b", "1", node_name="n1"))
    while loop.sync(0.0, latest=True):
        pass
    assert loop.cache.counted("default/a").phase == "Running"
    assert loop.cache.counted("default/b") is not None


@pytest.fixture
def dispatched_on_redis(redis_url):
    """A shard that owns what is dispatched to it (as the server's), following an embedded
    Redis with the node n1."""
    from common.store.redis_store import RedisStore
    from shard.intake import DispatchedPods
    from shard.loop import ShardLoop

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(node("n1", cpu="8"))
    loop = ShardLoop(make_config(), store, owner=DispatchedPods())
    loop.start()
    yield store, loop
    store.close()


def test_another_shards_pending_pod_is_decoded_only_when_dispatched_here(dispatched_on_redis, redis_url):
    """Seen failing before: the shard decoded every pod's creation, though most pending pods
    are another shard's and bound by it before any is dispatched here. A creation whose
    document would not decode is not even noticed until the pod is dispatched here (then
    it is reported, and the dispatch answered as for a pod the store does not hold); one
    that decodes is queued and scheduled as the watch showed it."""
    from builders import forge_pod_event, pod
    from common.model.objects import parse_pod

    store, loop = dispatched_on_redis
    forge_pod_event(store, redis_url, "default/bad", "ADDED", '{"kind":"Pod","metadata":{"name":"bad",}')
    created = store.create(pod("p", "1"))
    loop.sync()
    assert store.skipped_records == 0 and loop.informer.skipped == 0
    assert loop.take("default/bad", "", "") is False
    assert loop.informer.skipped == 1 and store.skipped_records == 0
    assert loop.take("default/p", created["metadata"]["uid"], created["metadata"]["resourceVersion"]) is True
    expected = parse_pod(store.get("Pod", "default/p"))
    assert loop.pods["default/p"].resource_version == expected.resource_version
    assert loop.pods["default/p"].requests == expected.requests
    result = loop.schedule_next()
    assert result.scheduled and result.node == "n1"


def test_another_shards_pending_pod_bound_by_it_is_counted_without_its_creation_read(dispatched_on_redis):
    """The other shard's binding brings the pod in full: counted on its node, and no longer
    waiting to be dispatched here."""
    from builders import pod

    store, loop = dispatched_on_redis
    store.create(pod("q", "2"))
    loop.sync()
    store.bind("default/q", "n1")
    loop.sync()
    assert loop.cache.counted("default/q").node_name == "n1"
    assert "default/q" not in loop.intake.unowned and loop.take("default/q", "", "") is True
    assert loop.schedule_next() is None


@pytest.mark.parametrize("shape", ["group member", "nominated"])
def test_a_pending_pod_another_shard_holds_is_read_at_once_when_it_concerns_this_one(dispatched_on_redis, shape):
    """A pod group's member (the group index counts its members) and a nominated pod (its
    room is kept from pods of lower priority) are read from their creation as before."""
    from builders import pod
    from common.model.podgroup import POD_GROUP_LABEL

    store, loop = dispatched_on_redis
    if shape == "group member":
        store.create(pod("m", "1", labels={POD_GROUP_LABEL: "g"}))
        loop.sync()
        assert loop.groups.group_of["default/m"] == "default/g"
    else:
        doc = pod("m", "1")
        doc["status"]["nominatedNodeName"] = "n1"
        store.create(doc)
        loop.sync()
        assert loop.pods["default/m"].nominated_node == "n1"


def _decided_on_redis(store):
    """A shard with the pod p dispatched to it and its decision (n1) sent, not yet bound."""
    from builders import pod
    from shard.intake import DispatchedPods
    from shard.loop import ShardLoop

    class Recorder:  # a committer that keeps the decision, as the shard server's does
        def commit(self, entry, result, budgets):
            return None

    loop = ShardLoop(make_config(), store, owner=DispatchedPods(), committer=Recorder())
    loop.start()
    created = store.create(pod("p", "1", labels={"app": "web"}))
    loop.sync()
    assert loop.take("default/p", created["metadata"]["uid"], created["metadata"]["resourceVersion"]) is True
    result = loop.schedule_next()
    assert result.node == "n1" and loop.cache.is_assumed("default/p")
    return loop


def test_the_binding_of_this_shards_own_decision_is_taken_from_its_patch(dispatched_on_redis, redis_url):
    """Seen failing before: the shard decoded its own decisions' bindings to read the node,
    phase and nominated node the binding's patch sets. A binding whose document would not
    decode (its uid readable) is taken from the patch alone: the pod counted on n1,
    Running, no longer assumed, nothing reported."""
    from builders import BINDING_PATCH, forge_pod_event

    store, _ = dispatched_on_redis
    loop = _decided_on_redis(store)
    forge_pod_event(store, redis_url, "default/p", "MODIFIED", '{"metadata":{"uid":"uid-default-p"},}', BINDING_PATCH)
    loop.sync()
    assert store.skipped_records == 0 and loop.informer.skipped == 0 and not loop.errors
    counted = loop.cache.counted("default/p")
    assert counted.node_name == "n1" and counted.phase == "Running" and not loop.cache.is_assumed("default/p")


def test_the_binding_of_this_shards_own_decision_shows_what_a_parse_would(dispatched_on_redis):
    """The store's own binding, taken from its patch: the counted pod as parsing the bound
    document gives it, but its version (a bound pod keeps none)."""
    from common.model.objects import parse_pod

    store, _ = dispatched_on_redis
    loop = _decided_on_redis(store)
    store.bind("default/p", "n1")
    loop.sync()
    counted, parsed = loop.cache.counted("default/p"), parse_pod(store.get("Pod", "default/p"))
    assert not loop.cache.is_assumed("default/p") and loop.pods["default/p"] is counted
    assert ((counted.node_name, counted.phase, counted.nominated_node or None, counted.labels, counted.requests, counted.uid)
            == (parsed.node_name, parsed.phase, parsed.nominated_node or None, parsed.labels, parsed.requests, parsed.uid))
