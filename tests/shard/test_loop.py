"""The shard loop (shard/loop.py) end to end on the memory store: the scheduling context across
a failed attempt and a node event, and the nomination of a preemptor whose victims are still
terminating."""
from __future__ import annotations

from common.store.memory import MemoryStore
from builders import make_config, node, overflowing_pod, pod, running, too_wide_node


def test_scheduling_context_through_the_shard_loop():
    """End to end in one shard loop on the memory store: the queue remembers the generation
    of a pod's failed attempt, a node event requeues it, and the retry filters only the node
    that changed (the nine others are skipped) and binds the pod there."""
    from common.store.memory import MemoryStore
    from shard.loop import ShardLoop

    class Clock:
        now = 1000.0

        def __call__(self):
            return self.now

    clock = Clock()
    store = MemoryStore()
    for i in range(10):
        store.create(node(f"n{i}", cpu="1"))
    store.create(pod("big", cpu="2"))
    loop = ShardLoop(make_config("all"), store, clock=clock)
    loop.start()
    first = loop.schedule_next()
    assert not first.scheduled and first.evaluated == 10
    clock.now += 60
    assert loop.schedule_next() is None            # parked until a cluster event
    assert loop.queue._entries["default/big"].last_generation > 0
    store.delete("Node", "n4")
    store.create(node("n4", cpu="4"))              # the node comes back bigger
    loop.sync()
    retry = loop.schedule_next()
    assert retry is not None and retry.node == "n4"
    assert retry.skipped_by_context == 9 and retry.evaluated == 1


def test_shard_nominates_a_preemptor_whose_victims_are_terminating():
    from shard.loop import ShardLoop

    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(running("low", "n1", "2", 1))
    store.create(pod("high", "2", priority=100))
    sent = []

    class Recorder:  # a committer that keeps the decision, as the shard server's does
        def commit(self, entry, result, budgets):
            sent.append((entry, result))

    loop = ShardLoop(make_config(), store, committer=Recorder())
    loop.start()
    result = loop.schedule_next()
    assert result.node == "n1" and [v.key for v in result.victims] == ["default/low"]
    entry, result = sent[0]
    loop.finish_binding(entry, result, False, "VictimsTerminating: default/low")
    assert store.get("Pod", "default/high")["status"]["nominatedNodeName"] == "n1"
    loop.sync()
    assert "default/high" in loop.scheduler.nominated["n1"]


def test_a_pod_placed_elsewhere_wakes_a_spread_pod_it_unblocks():
    """A DoNotSchedule spread pod is unschedulable while its zone would be too far ahead;
    another scheduler's pod bound in the other zone raises the minimum, and the waiting pod is
    retried at once, not after unschedulableMaxSeconds (it used to wait the whole 300 s)."""
    from builders import Clock, spread, toleration
    from shard.loop import ShardLoop

    zone = "topology.kubernetes.io/zone"
    labels = {"app": "s"}
    clock = Clock(1000.0)
    store = MemoryStore()
    store.create(node("a1", labels={zone: "a"}))
    store.create(node("b1", taints=["dedicated=x:NoSchedule"], labels={zone: "b"}))
    store.create(running("s0", "a1", "100m", 0, labels=labels))
    store.create(pod("s1", cpu="100m", labels=labels, spread=[spread(1, zone, labels)]))
    loop = ShardLoop(make_config("all"), store, clock=clock)
    loop.start()
    assert not loop.schedule_next().scheduled
    assert loop.queue.lengths()["unschedulable"] == 1
    store.create(running("other", "b1", "100m", 0, labels=labels,
                         tolerations=[toleration("dedicated", "x", "NoSchedule")], scheduler="default-scheduler"))
    loop.sync()
    clock.now += 10  # past the backoff
    retry = loop.schedule_next()
    assert retry is not None and retry.node == "a1"


def _a_running_pod_and_a_parked_one():
    """A shard loop on node n1 (2 cpu) running default/web (1 cpu), and default/big (8 cpu)
    tried once and parked unschedulable; returns (store, loop)."""
    from builders import Clock
    from shard.loop import ShardLoop

    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(running("web", "n1", "1", 0))
    store.create(pod("big", cpu="8"))
    loop = ShardLoop(make_config("all"), store, clock=Clock(1000.0))
    loop.start()
    assert not loop.schedule_next().scheduled
    assert loop.queue.lengths()["unschedulable"] == 1
    return store, loop


def test_heartbeats_and_status_updates_cost_no_cache_work():
    """A node's heartbeat (new condition times) and a bound pod's move to Running (phase,
    start time, IP) change nothing a cycle reads: the node keeps its generation (no snapshot
    clone, scheduling contexts stay valid) and no unschedulable pod is woken up. The pod's
    new start time still orders it among victims: removing it later finds it in the tree."""
    import copy

    store, loop = _a_running_pod_and_a_parked_one()
    info = loop.cache.nodes.get("n1")
    generation = info.generation

    beat = copy.deepcopy(store.get("Node", "n1"))
    beat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-23T10:00:00Z"}]
    store.update(beat)
    started = copy.deepcopy(store.get("Pod", "default/web"))
    started["status"].update(phase="Running", startTime="2026-11-23T09:00:00Z", podIP="10.1.2.3")
    store.update(started)
    loop.sync()
    info = loop.cache.nodes.get("n1")
    assert info.generation == generation
    assert loop.queue.lengths()["unschedulable"] == 1
    assert loop.pods["default/web"].phase == "Running"
    assert loop.pods["default/web"].start_time == 1795424400.0 and info.pods["default/web"].start_time == 1795424400.0

    store.delete("Pod", "default/web")
    loop.sync()
    info = loop.cache.nodes.get("n1")
    assert not info.pods and len(info.tree) == 0


def test_a_bound_pods_event_delivered_twice_changes_nothing():
    """A running pod keeps no resourceVersion, so an event of it applied a second time is
    not told apart by its version: it is a status-only update that keeps the pod as it
    is (the same object counted, the node's generation kept, no pod woken up)."""
    store, loop = _a_running_pod_and_a_parked_one()
    info = loop.cache.nodes.get("n1")
    generation, counted = info.generation, info.pods["default/web"]
    assert counted.resource_version == ""
    again = store.get("Pod", "default/web")
    loop.apply("MODIFIED", "Pod", again)
    loop.apply("MODIFIED", "Pod", again)
    info = loop.cache.nodes.get("n1")
    assert info.generation == generation and info.pods["default/web"] is counted
    assert loop.pods["default/web"] is counted and len(info.tree) == 1
    assert loop.queue.lengths()["unschedulable"] == 1


def _drain(loop) -> None:
    while loop.schedule_next() is not None:
        loop.sync()
    loop.sync()


def test_extended_resources_come_and_go_without_filling_the_slot_table():
    """Four rounds of 40 new extended resources each (160 in all, more than the table ever
    holds at once), every round created, scheduled, checked and deleted again, with a shard
    loop, a binder's view and `verify` all following the store: slots nobody holds any more
    are reclaimed, in the node table's columns, the splay trees and the accounting alike.
    The per-process table used to fill for good at 12 ("too many distinct resources")."""
    from binder.view import BinderView
    from common.runtime.informer import Informer
    from common.model.objects import CREATE_ORDER
    from common.model.resources import MAX_EXTENDED_RESOURCES, RESOURCES, vector_to_map
    from common.tools.verify import verify_store
    from shard.loop import ShardLoop

    rounds, per_round = 4, 40
    assert rounds * per_round > MAX_EXTENDED_RESOURCES
    store = MemoryStore()
    loop = ShardLoop(make_config(), store)
    loop.start()
    view = BinderView(["shardsched"])
    watch = Informer(store, CREATE_ORDER, view.apply, view.reset)
    watch.start()
    in_use_before = RESOURCES.in_use()
    for r in range(rounds):
        names = [f"example.com/round{r}-widget{i}" for i in range(per_round)]
        for n in range(8):  # five resources per node, two of each
            store.create(node(f"r{r}-n{n}", extra={name: "2" for name in names[5 * n:5 * n + 5]}))
        for i, name in enumerate(names):
            store.create(pod(f"r{r}-p{i}", extra={name: "1"}, priority=i % 3))
        loop.sync()
        _drain(loop)
        watch.sync()
        pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in store.list("Pod")[0]}
        assert pods == {f"r{r}-p{i}": f"r{r}-n{i // 5}" for i in range(per_round)}
        report = verify_store(store)
        assert report["ok"] and report["bound"] == per_round and report["unparsable"] == []
        for n in range(8):  # (no local keeps a node record: it would keep its slots too)
            assert {k: v for k, v in vector_to_map(view.nodes[f"r{r}-n{n}"].requested).items()
                    if k != "pods"} == {name: 1 for name in names[5 * n:5 * n + 5]}
        loop.scheduler.table.check()
        releasable = loop.scheduler.table.releasable(10)[loop.scheduler.table.row_of[f"r{r}-n0"]]
        assert {k: v for k, v in vector_to_map(releasable).items() if k != "pods"} == {
            name: 1 for name in names[:5]}
        for i in range(per_round):
            store.delete("Pod", f"default/r{r}-p{i}")
        for n in range(8):
            store.delete("Node", f"r{r}-n{n}")
        loop.sync()
        watch.sync()
        loop.scheduler.refresh()
    assert RESOURCES.in_use() == in_use_before, RESOURCES.names()


def test_bound_pods_summing_past_int64_on_one_node_do_not_break_cycles():
    """Each pod fits int64, their sum on one node does not: the node table saturates instead
    of raising OverflowError in every cycle, and the pending pod is judged normally."""
    from shard.loop import ShardLoop

    half = str(1 << 62)
    store = MemoryStore()
    store.create(node("n1", memory="8Ei"))
    store.create(node("n2"))
    for i in range(3):
        store.create(running(f"big{i}", "n1", "100m", 0, memory=half))
    store.create(pod("next", memory="1Gi", cpu="100m"))
    loop = ShardLoop(make_config(), store)
    loop.start()
    result = loop.schedule_next()
    assert result.node == "n2"
    loop.scheduler.table.check()


def test_objects_a_shard_cannot_count_are_skipped_and_logged(caplog):
    """What the watch delivers and the shard cannot count is logged once and left out; the
    shard goes on scheduling the rest."""
    import logging

    from common.model.resources import RESOURCES
    from shard.loop import ShardLoop

    store = MemoryStore()
    store.create(node("n1"))
    store.create(pod("ok", cpu="1"))
    loop = ShardLoop(make_config(), store)
    loop.start()
    in_use = RESOURCES.in_use()
    with caplog.at_level(logging.WARNING, logger="shard.intake"):
        loop.apply("ADDED", "Pod", overflowing_pod())
        loop.apply("ADDED", "Node", too_wide_node())
        loop.apply("MODIFIED", "Node", too_wide_node())
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "Pod default/huge: spec.containers[1].resources.requests.memory: the pod's total memory" in warnings[0]
    assert "Node wide: status.allocatable.example.com/many-" in warnings[1]
    assert "distinct extended resources in use at once" in warnings[1]
    assert RESOURCES.in_use() == in_use  # the slots the node's parse took were given back
    result = loop.schedule_next()
    assert result.node == "n1" and "wide" not in loop.scheduler.table.row_of
    assert loop.schedule_next() is None  # the unreadable pod is not queued


def test_storage_objects_follow_the_watch_and_a_relist():
    """Claims come and go with the store's events; after a relist (history trimmed past the
    loop's position) a claim deleted meanwhile is gone from the shard's view too."""
    from builders import pvc
    from shard.loop import ShardLoop

    store = MemoryStore(history=4)
    store.create(node("n1"))
    store.create(pvc("kept"))
    store.create(pvc("doomed"))
    loop = ShardLoop(make_config(), store)
    loop.start()
    assert set(loop.scheduler.volumes.claims) == {"default/kept", "default/doomed"}
    store.delete("PersistentVolumeClaim", "default/doomed")
    for i in range(10):  # more events than the store keeps
        store.create(pod(f"filler-{i}", node_name="n1"))
    loop.sync()
    assert set(loop.scheduler.volumes.claims) == {"default/kept"}


def test_store_committer_binds_volumes_first_and_fails_when_nothing_provisions():
    """Where no binder runs, the StoreCommitter runs VolumeBinding's PreBind in place: it
    hands the claim to a provisioner for the chosen node; with none to act, the binding
    fails at once with kube's words (instead of after bindTimeoutSeconds) and the pod is
    retried, now only on that node; with one, the pod is bound."""
    from builders import Clock, claim_volume, pvc, storage_class
    from shard.provisioner import Provisioner
    from shard.loop import ShardLoop
    from shard.store_committer import StoreCommitter

    store = MemoryStore()
    for obj in (node("n1"), node("n2"), storage_class("wffc"), pvc("data", "wffc"),
                pod("db", cpu="100m", volumes=[claim_volume("data")])):
        store.create(obj)
    clock = Clock(1000.0)
    loop = ShardLoop(make_config(), store, committer=StoreCommitter(store), clock=clock)
    loop.start()
    first = loop.schedule_next()
    assert first.scheduled and not store.get("Pod", "default/db")["spec"].get("nodeName")
    assert loop.messages["default/db"] == "VolumeBinding: binding volumes: context deadline exceeded"
    claim = store.get("PersistentVolumeClaim", "default/data")
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == first.node
    Provisioner(store).settle()
    loop.sync()
    clock.now += 60  # past the backoff
    retry = loop.schedule_next()
    assert retry.node == first.node
    assert store.get("Pod", "default/db")["spec"]["nodeName"] == first.node


def test_a_binding_the_watch_never_shows_is_scheduled_again_after_the_assume_ttl():
    """The binder said bound, but the store's history never shows the binding (Redis came back
    from a snapshot older than it, and this shard's watch had not got that far, so it saw no
    gap to relist after). Once the assumption expires the pod, still ours and pending in the
    watch, is scheduled again, even with nothing else queued: the expiry used to run only
    when activeQ had a pod, and the pod was never retried (the dispatcher saw it held)."""
    from builders import Clock
    from shard.loop import ShardLoop

    clock = Clock(1000.0)
    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(pod("p", "1"))
    sent = []

    class Recorder:  # keeps the decision; the store never sees a binding
        def commit(self, entry, result, budgets):
            sent.append((entry, result))

    loop = ShardLoop(make_config(), store, committer=Recorder(), clock=clock)
    loop.start()
    assert loop.schedule_next().node == "n1"
    entry, result = sent.pop()
    loop.finish_binding(entry, result, True)
    loop.sync()
    assert loop.schedule_next() is None             # assumed bound: nothing to do
    clock.now += loop.cache.assume_ttl + 1
    loop.sync()
    again = loop.schedule_next()
    assert again is not None and again.pod.key == "default/p" and again.node == "n1"


def test_a_decision_in_flight_longer_than_the_assume_ttl_is_not_scheduled_again():
    """The assumption of a pod whose decision the binder has not answered yet expires (a slow
    binder, a busy machine): the pod is not scheduled a second time while that decision may
    still bind it (it was, once expiry ran on every sync; seen as more scheduling attempts
    than pods under load). Only a binding the binder confirmed and the watch never showed is
    tried again."""
    from builders import Clock
    from shard.loop import ShardLoop

    clock = Clock(1000.0)
    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(pod("p", "1"))

    class Slow:  # a committer whose decisions stay unanswered, as the server's BinderClient's
        def __init__(self):
            self.in_flight = {}

        def commit(self, entry, result, budgets):
            self.in_flight[entry.pod.key] = (entry, result)

    committer = Slow()
    loop = ShardLoop(make_config(), store, committer=committer, clock=clock)
    loop.start()
    assert loop.schedule_next().node == "n1"
    clock.now += loop.cache.assume_ttl + 1
    loop.sync()
    assert loop.schedule_next() is None
    entry, result = committer.in_flight.pop("default/p")
    loop.finish_binding(entry, result, True)   # answered at last: bound
    clock.now += loop.cache.assume_ttl + 1     # ... and the watch never shows it
    loop.sync()
    again = loop.schedule_next()
    assert again is not None and again.pod.key == "default/p"


def test_a_refused_decision_wakes_the_pods_its_room_may_take():
    """A parked pod that did not fit only because of another pod's assumption is tried again
    once that decision is refused and its room freed (kube moves pods on the assigned pod's
    deletion); it used to wait for an update of its own status to send it round."""
    from shard.loop import ShardLoop

    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(pod("first", "2"))
    sent = []

    class Recorder:  # a committer that keeps the decision, as the shard server's does
        def commit(self, entry, result, budgets):
            sent.append((entry, result))

    loop = ShardLoop(make_config("all"), store, committer=Recorder())
    loop.start()
    assert loop.schedule_next().node == "n1"
    store.create(pod("second", "2"))
    loop.sync()
    assert not loop.schedule_next().scheduled  # n1 is taken by first's assumption
    entry, result = sent[0]
    loop.finish_binding(entry, result, False, "NodeResourcesFit: Insufficient cpu")
    assert loop.queue.lengths()["unschedulable"] == 0  # second was woken (into backoff or active)


def test_a_pod_waiting_for_devices_is_retried_when_its_claim_and_a_slice_appear():
    """kube's DynamicResources hints: a pod PreEnqueue held back for a missing claim is asked
    again when the claim is made; one no node had devices for is retried when a
    ResourceSlice appears, and then bound with its claim allocated first."""
    from builders import Clock, claim_pod, device_class, resource_claim, resource_slice
    from shard.loop import ShardLoop
    from shard.store_committer import StoreCommitter

    store = MemoryStore()
    for obj in (node("n1"), device_class(), claim_pod("p", claims=["c"])):
        store.create(obj)
    clock = Clock(1000.0)
    loop = ShardLoop(make_config(), store, committer=StoreCommitter(store), clock=clock)
    loop.start()
    assert loop.schedule_next() is None
    assert loop.gated["default/p"] == 'resourceclaim.resource.k8s.io "c" not found'
    store.create(resource_claim("c"))
    loop.sync()
    first = loop.schedule_next()
    assert not first.scheduled and "cannot allocate all claims" in loop.messages["default/p"]
    store.create(resource_slice("n1"))
    loop.sync()
    clock.now += 60  # past the backoff
    retry = loop.schedule_next()
    assert retry is not None and retry.node == "n1"
    assert store.get("Pod", "default/p")["spec"]["nodeName"] == "n1"
    assert store.get("ResourceClaim", "default/c")["status"]["reservedFor"][0]["name"] == "p"


def test_a_refused_device_decision_leaves_the_device_another_claim_holds_taken():
    """Issue 26: two shards took the same lowest free device; this shard's watch showed the
    other claim's allocation while its own decision was in flight, then the binder refused
    it. Unreserving its own in-flight allocation must not free the device the other claim
    holds: it did, so every retry chose that device again and was refused again, until a
    re-dispatch 30 s later."""
    from builders import Clock, allocation, claim_pod, device_class, gpu, resource_claim, resource_slice
    from shard.loop import ShardLoop
    from shard.plugins.dynamic_resources import planned_claims

    store = MemoryStore()
    for obj in (node("n1"), device_class(), resource_slice("n1", devices=[gpu(0), gpu(1)]),
                resource_claim("mine"), claim_pod("p", claims=["mine"])):
        store.create(obj)
    sent = []

    class Recorder:  # a committer that keeps the decision, as the shard server's does
        def commit(self, entry, result, budgets):
            sent.append((entry, result))

    def devices_of(result):
        _, planned = planned_claims(result.state, result.node)
        return [r["device"] for _, doc in planned for r in doc["devices"]["results"]]

    clock = Clock(1000.0)
    loop = ShardLoop(make_config(), store, committer=Recorder(), clock=clock)
    loop.start()
    first = loop.schedule_next()
    assert first.node == "n1" and devices_of(first) == ["gpu-0"]
    # another shard's pod was bound with gpu-0 first; our watch shows it before the refusal
    store.create(resource_claim("theirs", allocation=allocation("n1", "gpu-0"), reserved_for=["q"]))
    loop.sync()
    entry, result = sent[0]
    loop.finish_binding(entry, result, False, "DynamicResources: cannot allocate all claims")
    clock.now += 60  # past the backoff
    retry = loop.schedule_next()
    assert retry is not None and retry.node == "n1"
    assert devices_of(retry) == ["gpu-1"]


def test_the_configured_watch_linger_paces_the_shards_informer():
    """store.watchLingerSeconds reaches the shard's watch."""
    from shard.loop import ShardLoop

    loop = ShardLoop(make_config(store={"watchLingerSeconds": 0}), MemoryStore())
    assert loop.informer.pace.linger_s == 0
