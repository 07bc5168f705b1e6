"""The binder and preemption: its checks on decisions with victims (binder/view.py), and a
preemptor bound only once its victims are gone, as an API server's graceful evictions leave
them terminating for a while (binder/server.py)."""
from __future__ import annotations

from common.objects import parse_object
from common.store.memory import MemoryStore
from builders import binder_view as binder_with
from builders import make_config, node, pdb, pod, running


def test_binder_refuses_gone_or_claimed_victims_and_broken_budgets():
    n1 = node("n1", cpu="2")
    v1, v2 = running("v1", "n1", "1", 1, labels={"app": "db"}), running("v2", "n1", "1", 1, labels={"app": "db"})
    preemptor = parse_object(pod("high", "2", priority=100))
    view = binder_with(n1, v1, v2)
    victims = [("default/v1", "uid-default-v1"), ("default/v2", "uid-default-v2")]
    assert view.check(preemptor, "n1", victims) is None
    assert view.check(preemptor, "n1", victims[:1]).startswith("Insufficient cpu")
    assert view.check(preemptor, "n1", [("default/gone", "")]) == "VictimGone: default/gone"
    assert view.check(preemptor, "n1", [("default/v1", "other-uid")]) == "VictimGone: default/v1"
    view.reserve(parse_object(pod("other", "1", priority=100)), "n1", victims[:1])
    assert view.check(preemptor, "n1", victims) == "VictimClaimed: default/v1"

    guarded = binder_with(n1, v1, v2, pdb("db", {"app": "db"}, max_unavailable=1))
    assert guarded.check(preemptor, "n1", victims).startswith("DisruptionBudget: evicting default/v2")
    one = parse_object(pod("one", "1", priority=100))
    assert guarded.check(one, "n1", victims[:1]) is None
    guarded.reserve(one, "n1", victims[:1])  # the budget's one disruption is now in flight
    two = parse_object(pod("two", "1", priority=100))
    assert guarded.check(two, "n1", victims[1:]).startswith("DisruptionBudget")


# --- victims that terminate gracefully (a real cluster's evictions) -------------------------------

class GracefulStore(MemoryStore):
    """Evictions mark the pod terminating instead of deleting it, as an API server does."""

    def evict_many(self, evictions):
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
    from binder.server import BinderServer
    from proto import shardsched_pb2 as pb
    import orjson

    store = GracefulStore()
    store.create(node("n1", cpu="2"))
    store.create(running("low", "n1", "2", 1))
    high = pod("high", "2", priority=100)
    store.create(high)
    binder = BinderServer(make_config(), store, 0, port=0, metrics_port=None)
    binder.informer.start()
    decision = pb.Decision(pod_key="default/high", pod_uid="uid-default-high", node="n1",
                           victims=[pb.Victim(key="default/low", uid="uid-default-low")],
                           pod_json=orjson.dumps(high))
    [outcome] = binder.decide(pb.DecisionBatch(decisions=[decision]))
    assert not outcome.bound and outcome.reason == "VictimsTerminating: default/low"
    assert store.get("Pod", "default/low")["metadata"]["deletionTimestamp"]
    assert not store.get("Pod", "default/high")["spec"].get("nodeName")

    store.delete("Pod", "default/low")  # the node agent finished it
    binder.informer.sync()
    decision.ClearField("victims")
    [outcome] = binder.decide(pb.DecisionBatch(decisions=[decision]))
    assert outcome.bound and store.get("Pod", "default/high")["spec"]["nodeName"] == "n1"
