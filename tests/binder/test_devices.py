"""The binder as the authority on devices (DynamicResources' check and PreBind): each decision's
allocation found again against the binder's view plus its allocations in flight, written
(status.allocation and reservedFor) before the binding; never a device twice, whichever
shards decided."""
from __future__ import annotations

from builders import LiveBinder, claim_pod, decision, device_class, node, resource_claim, resource_slice
from builders import gpu
from common.store.memory import MemoryStore


def _store(*objs):
    store = MemoryStore()
    for o in (node("n1"), device_class(), resource_slice("n1", [gpu(0)]), *objs):
        store.create(o)
    return store


def test_one_device_two_shards_deciding_it_one_pod_gets_it_and_its_claim_is_written_first():
    store = _store(resource_claim("a"), resource_claim("b"), claim_pod("p", claims=["a"]),
                   claim_pod("q", claims=["b"]))
    b = LiveBinder(store)
    try:
        first = b.decide(decision("default/p", "n1"), shard="0")["default/p"]
        second = b.decide(decision("default/q", "n1"), shard="1")["default/q"]
    finally:
        b.close()
    assert first.bound
    assert not second.bound and second.reason == "DynamicResources: cannot allocate all claims"
    claim = store.get("ResourceClaim", "default/a")["status"]
    assert claim["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]
    assert claim["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "uid-default-p"}]
    assert "status" not in store.get("ResourceClaim", "default/b")


def test_decisions_of_one_batch_are_checked_against_each_others_allocations():
    store = _store(resource_claim("a"), resource_claim("b"), claim_pod("p", claims=["a"]),
                   claim_pod("q", claims=["b"]))
    b = LiveBinder(store)
    try:
        out = b.decide(decision("default/p", "n1"), decision("default/q", "n1"))
    finally:
        b.close()
    assert sorted(o.bound for o in out.values()) == [False, True]


def test_a_pod_whose_claim_is_missing_is_refused_with_kubes_message():
    store = _store(claim_pod("p", claims=["nope"]))
    b = LiveBinder(store)
    try:
        out = b.decide(decision("default/p", "n1"))["default/p"]
    finally:
        b.close()
    assert not out.bound and out.reason == 'DynamicResources: resourceclaim.resource.k8s.io "nope" not found'


def test_a_refused_reservation_gives_its_devices_back_and_a_bound_one_keeps_them():
    from binder.view import Reservation
    from builders import binder_view
    from common.scheduling.checks import Judged, first_failure
    from common.scheduling.checks import DEVICE_CHECKS

    view = binder_view(node("n1"), device_class(), resource_slice("n1", [gpu(0)]), resource_claim("a"),
                       resource_claim("b"), claim_pod("p", claims=["a"]), claim_pod("q", claims=["b"]))

    def judge(key):
        j = Judged(view, view.pending_pod(key), "n1")
        return j, first_failure(j, DEVICE_CHECKS)

    j, why = judge("default/p")
    assert why is None
    view.reserve(Reservation(j.pod, "n1", [], set(), 0, None, j.device_plan))
    assert judge("default/q")[1] == "DynamicResources: cannot allocate all claims"
    view.settle("default/p", "refused")
    j, why = judge("default/q")
    assert why is None
    view.reserve(Reservation(j.pod, "n1", [], set(), 0, None, j.device_plan))
    view.settle("default/q", "bound")  # the allocation stays held until the watch shows the claim written
    assert judge("default/p")[1] == "DynamicResources: cannot allocate all claims"
