"""The binder's commit pipeline (binder/commits.py): a preemptor bound only once its victims
are gone, and every reservation settled on every path, store failures included."""
from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings, strategies as st

from builders import LiveBinder, decision, make_config, node, pod, running
from binder.server import BinderServer, Stream
from common.errors import StoreUnavailable
from common.store.memory import MemoryStore
from common.tools.verify import verify_store

GONE = ("PodNotFound", "AlreadyBound", "UIDMismatch")


# --- victims that terminate gracefully (a real cluster's evictions) -------------------------------

class GracefulStore(MemoryStore):
    """Evictions mark the pod terminating instead of deleting it, as an API server does."""

    def evict_many(self, evictions, respect_budgets=True):
        out = []
        for key, _ in evictions:
            obj = self.get("Pod", key)
            if obj is None:
                out.append("PodNotFound")
                continue
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            self.delete("Pod", key)
            self.create(obj)
            out.append(None)
        return out


def test_preemptor_is_bound_only_once_its_victims_are_gone():
    """The binder evicts, sees the victim still terminating, and answers VictimsTerminating
    instead of binding; the shard then nominates the pod to the node. Once the victim is
    gone, the same decision binds."""
    store = GracefulStore()
    store.create(node("n1", cpu="2"))
    store.create(running("low", "n1", "2", 1))
    store.create(pod("high", "2", priority=100))
    binder = LiveBinder(store)
    try:
        d = decision("default/high", "n1", ["default/low"])
        outcome = binder.decide(d)["default/high"]
        assert not outcome.bound and outcome.reason == "VictimsTerminating: default/low"
        assert store.get("Pod", "default/low")["metadata"]["deletionTimestamp"]
        assert not store.get("Pod", "default/high")["spec"].get("nodeName")

        store.delete("Pod", "default/low")  # the node agent finished it
        binder.sync()
        d.ClearField("victims")
        outcome = binder.decide(d)["default/high"]
        assert outcome.bound and store.get("Pod", "default/high")["spec"]["nodeName"] == "n1"
    finally:
        binder.close()


# --- store failures between reserve and commit -----------------------------------------------

class FailingStore(MemoryStore):
    """Fails the `fail_call`-th bulk write (evictions and bindings counted together) after
    doing the first `done_first` items of it: a store that goes away mid-request."""

    def __init__(self, fail_call: int, done_first: int):
        super().__init__()
        self.calls = 0
        self.fail_call, self.done_first = fail_call, done_first

    def _maybe_fail(self, method, items, **kw):
        self.calls += 1
        if self.calls == self.fail_call:
            method(items[:self.done_first], **kw)
            raise StoreUnavailable("injected: the store went away")
        return method(items, **kw)

    def bind_many(self, bindings):
        return self._maybe_fail(super().bind_many, list(bindings))

    def evict_many(self, evictions, respect_budgets=True):
        return self._maybe_fail(super().evict_many, list(evictions), respect_budgets=respect_budgets)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.integers(0, 6), st.lists(st.booleans(), min_size=6, max_size=6))
def test_a_store_failure_leaves_no_reservation_and_drops_no_pod(fail_call, done_first, preempts):
    """Reserve six decisions (some preempting), fail one bulk write part-way, then: every
    reservation settled, no pod answered as gone while it is still pending, and once the
    watch shows what landed and the doubt expires, the binder counts exactly the store."""
    store = FailingStore(fail_call, done_first)
    for i in range(3):
        store.create(node(f"n{i}", cpu="2"))
        store.create(running(f"low{i}", f"n{i}", "1", 0))
    for i in range(6):
        store.create(pod(f"p{i}", cpu="1", priority=10))
    cfg = make_config(store={"requestTimeoutSeconds": 0.1})  # in doubt for 0.2 s
    binder = BinderServer(cfg, store, 0, port=0, metrics_port=0)
    binder.informer.start()
    binder.partitions.holder = "test"
    binder.partitions.step(lambda p: False)
    stream = Stream("0")
    decisions = [decision(f"default/p{i}", f"n{i % 3}", [f"default/low{i % 3}"] if preempts[i] else [])
                 for i in range(6)]
    binder.receive(decisions, stream)
    chunk = binder.commits.take(timeout=0)
    binder.commits._run(chunk)
    assert not binder.view.reserved and not binder.view.claimed
    stream.end()
    outcomes = {}
    while (batch := stream.take()) is not None:
        outcomes.update((o.pod_key, o) for o in batch.outcomes)
    assert set(outcomes) == {d.pod_key for d in decisions}
    for key, o in outcomes.items():
        stored = store.get("Pod", key)
        if o.reason.startswith(GONE):
            assert stored is None or stored["spec"].get("nodeName"), (key, o.reason)
        if o.bound:
            assert stored["spec"]["nodeName"] == o.node
    time.sleep(0.25)
    binder.informer.sync()
    with binder.lock:
        binder.view.expire()
    assert not binder.view.acc.assumed
    counted = {k: n for k, n in binder.view.acc.pod_node.items()}
    bound = {d["metadata"]["namespace"] + "/" + d["metadata"]["name"]: d["spec"]["nodeName"]
             for d in store.list("Pod")[0] if d["spec"].get("nodeName")}
    assert counted == bound
    assert verify_store(store)["ok"]
    binder.commits.shutdown()


# --- events of what was committed ---------------------------------------------------------------

def test_a_binding_writes_scheduled_and_each_evicted_victim_preempted():
    """The binder, which saw the store accept them, writes kube-scheduler's Scheduled event
    for the bound pod and a Preempted event, related to the preemptor, on each victim."""
    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    low = store.create(running("low", "n1", "2", 1))
    high = store.create(pod("high", "2", priority=100))
    binder = LiveBinder(store)
    try:
        assert binder.decide(decision("default/high", "n1", ["default/low"]))["default/high"].bound
        deadline = time.monotonic() + 10
        while len(events := store.list_events()) < 2:
            assert time.monotonic() < deadline, events
            time.sleep(0.05)
    finally:
        binder.close()
    by_reason = {e["reason"]: e for e in events}
    scheduled, preempted = by_reason["Scheduled"], by_reason["Preempted"]
    assert scheduled["note"] == "Successfully assigned default/high to n1"
    assert scheduled["regarding"]["uid"] == high["metadata"]["uid"] and scheduled["action"] == "Binding"
    assert preempted["note"] == f"Preempted by pod {high['metadata']['uid']} on node n1"
    assert preempted["regarding"]["uid"] == low["metadata"]["uid"] and preempted["related"]["name"] == "high"
    assert preempted["action"] == "Preempting" and preempted["reportingInstance"] == "shardsched-binder-0"


def test_the_configured_watch_linger_paces_the_binders_informer():
    """store.watchLingerSeconds reaches the binder's watch."""
    binder = BinderServer(make_config(store={"watchLingerSeconds": 0.01}), MemoryStore(), 0, port=0, metrics_port=0)
    assert binder.informer.pace.linger_s == 0.01


# --- the commit workers -------------------------------------------------------------------------

def test_a_chunk_that_fails_after_its_store_call_is_reported_and_the_workers_go_on(caplog):
    """A failure past the store call (here: ending the reservations) is logged and counted,
    the chunk's partition is not left busy, and the next decisions are committed."""
    import threading

    store = MemoryStore()
    store.create(node("n1", cpu="4"))
    for name in ("p1", "p2"):
        store.create(pod(name, cpu="1"))
    binder = BinderServer(make_config(), store, 0, port=0, metrics_port=0)
    binder.informer.start()
    binder.partitions.holder = "test"
    binder.partitions.step(lambda p: False)
    settle, calls = binder.commits.settle, []

    def failing_once(settled):
        calls.append(settled)
        if len(calls) == 1:
            raise RuntimeError("injected: settling failed")
        settle(settled)

    binder.commits.settle = failing_once
    worker = threading.Thread(target=binder.feed_forever, daemon=True)
    worker.start()
    try:
        stream = Stream("0")
        binder.receive([decision("default/p1", "n1")], stream)
        deadline = time.monotonic() + 30
        while binder.counters["commit_errors"] < 1:
            assert time.monotonic() < deadline, "the failure was not reported"
            time.sleep(0.01)
        assert "injected: settling failed" in caplog.text
        assert not binder.commits.busy(binder.view.reserved["default/p1"].partition)
        binder.receive([decision("default/p2", "n1")], stream)
        (answer,) = stream.take().outcomes
        assert answer.pod_key == "default/p2" and answer.bound
        assert store.get("Pod", "default/p2")["spec"]["nodeName"] == "n1"
    finally:
        binder.stop_event.set()
        worker.join(30)
        binder.commits.shutdown()
