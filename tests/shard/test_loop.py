"""The shard loop (shard/loop.py) end to end on the memory store: the scheduling context across
a failed attempt and a node event, and the nomination of a preemptor whose victims are still
terminating."""
from __future__ import annotations

from common.store.memory import MemoryStore
from builders import make_config, node, pod, running


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
    from common.provisioner import Provisioner
    from shard.loop import ShardLoop, StoreCommitter

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
