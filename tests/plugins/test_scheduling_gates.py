"""SchedulingGates: a pod with spec.schedulingGates is not scheduled until its last gate is
removed (kube-scheduler's PreEnqueue plugin), through the plugin itself, the shard loop on the
memory store, and `simulate`. The stores' side (the SchedulingGated condition, bindings
refused) is in tests/common/store/test_store_contract.py; the dispatcher's in
tests/dispatcher/test_dispatcher.py."""
from __future__ import annotations

import pytest

from builders import Cluster, make_config, node, pod
from common.model.objects import parse_pod
from common.store.memory import MemoryStore
from shard.loop import ShardLoop

UNRESOLVABLE = "UnschedulableAndUnresolvable"


def gated(name: str, *gates: str, **kw) -> dict:
    return pod(name, spec={"schedulingGates": [{"name": g} for g in gates]}, **kw)


# kube-scheduler v1.37, schedulinggates/scheduling_gates_test.go TestPreEnqueue
@pytest.mark.parametrize("gates, want", [
    ((), None),
    (("foo", "bar"), (UNRESOLVABLE, "waiting for scheduling gates: [foo bar]")),
])
def test_pre_enqueue(gates, want):
    plugin = Cluster([node("n1")]).plugin("SchedulingGates")
    st = plugin.pre_enqueue(parse_pod(gated("p", *gates)))
    assert (None if st is None else (st.code, st.message())) == want


def test_a_gated_pod_waits_in_the_loop_and_is_scheduled_once_ungated():
    """It used to be bound at once on the embedded stores: nothing looked at the gates."""
    store = MemoryStore()
    store.create(node("n1"))
    store.create(gated("g", "example.com/wait", cpu="100m"))
    loop = ShardLoop(make_config(), store)
    loop.start()
    assert loop.schedule_next() is None  # never queued
    assert "default/g" in loop.gated and not store.get("Pod", "default/g")["spec"].get("nodeName")
    obj = store.get("Pod", "default/g")
    obj["spec"]["schedulingGates"] = []
    store.update(obj)
    loop.sync()
    result = loop.schedule_next()
    assert result is not None and result.node == "n1"
    assert store.get("Pod", "default/g")["spec"]["nodeName"] == "n1"
    assert "default/g" not in loop.gated


def test_a_gate_removed_while_others_remain_keeps_the_pod_gated():
    store = MemoryStore()
    store.create(node("n1"))
    store.create(gated("g", "a", "b"))
    loop = ShardLoop(make_config(), store)
    loop.start()
    obj = store.get("Pod", "default/g")
    obj["spec"]["schedulingGates"] = [{"name": "b"}]
    store.update(obj)
    loop.sync()
    assert loop.schedule_next() is None
    assert loop.gated["default/g"] == "waiting for scheduling gates: [b]"
