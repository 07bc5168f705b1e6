"""The fencing check (issue 29, item 1): a binder frozen between judging a decision and its
store call (SIGSTOP, a VM stall) wakes after its partition's lease ran out and another binder
took the partition over; it must commit nothing there."""
from __future__ import annotations

from builders import decision, make_config, node, pod
from binder.server import BinderServer, Stream
from common.store.memory import MemoryStore


def test_a_binder_whose_lease_ran_out_before_the_store_call_commits_nothing():
    store = MemoryStore()
    store.create(node("n1"))
    store.create(pod("p1"))
    binder = BinderServer(make_config(), store, 0, port=0, metrics_port=0)
    binder.informer.start()
    binder.partitions.holder = "test"
    binder.partitions.step(lambda p: False)
    stream = Stream("0")
    binder.receive([decision("default/p1", "n1")], stream)
    chunk = binder.commits.take(timeout=0)
    assert chunk
    # the commit starts while the lease is held; the binder freezes; it wakes without it
    answers = iter([True])
    binder.commits.holds = lambda p: next(answers, False)
    binder.commits._run(chunk)
    (outcome,) = stream.take().outcomes
    assert not outcome.bound and outcome.reason.startswith("NotPartitionHolder")
    assert not store.get("Pod", "default/p1")["spec"].get("nodeName")
    assert binder.counters["fenced"] == 1
    assert not binder.view.reserved
