"""The DeviceState (common/scheduling/device_state.py): which devices are taken, as the
store's claims and this process's assumptions hold them, and the per-node free counts."""
from __future__ import annotations

from common.model.objects import parse_object
from common.scheduling.device_state import DeviceState
from common.scheduling.dra import allocated_devices
from builders import allocation, device_class, gpu, resource_claim, resource_slice


def _state():
    devices = DeviceState()
    devices.set(parse_object(device_class()))
    devices.set(parse_object(resource_slice("n1", devices=[gpu(0), gpu(1)])))
    return devices


def _free_on_n1(devices) -> int:
    request = parse_object(resource_claim("any")).requests[0]
    return devices.free_matching(devices.classes["gpu"], request, "default/any").free["n1"]


def test_a_reverted_assumption_leaves_a_device_another_claim_holds_taken():
    """Issue 26: our assumption and another claim's stored allocation name the same device
    (two shards chose it); reverting ours must not free it."""
    devices = _state()
    assert _free_on_n1(devices) == 2
    gpu0 = allocation("n1", "gpu-0")
    devices.assume(parse_object(resource_claim("mine")), gpu0)
    devices.set(parse_object(resource_claim("theirs", allocation=gpu0, reserved_for=["q"])))
    devices.revert("default/mine")
    assert set(allocated_devices(gpu0)) <= devices.allocated()
    assert _free_on_n1(devices) == 1
    devices.remove("ResourceClaim", "default/theirs")  # its pod ended: the device is free again
    assert not devices.allocated() and _free_on_n1(devices) == 2


def test_an_assumption_written_back_is_held_once_and_freed_by_deallocation():
    devices = _state()
    _free_on_n1(devices)  # the counts are kept from here on
    gpu1 = allocation("n1", "gpu-1")
    devices.assume(parse_object(resource_claim("c")), gpu1)
    devices.assume(parse_object(resource_claim("c")), gpu1)  # assumed again: still one holder
    devices.set(parse_object(resource_claim("c", allocation=gpu1, reserved_for=["p"])))
    assert devices.allocated() == set(allocated_devices(gpu1)) and _free_on_n1(devices) == 1
    devices.set(parse_object(resource_claim("c")))  # deallocated
    assert not devices.allocated() and _free_on_n1(devices) == 2


def test_a_device_two_claims_hold_counts_twice_on_its_node():
    """Another shard's claim was written with the device this process assumed for its own
    claim in flight: the binder, which allocates again in its own view, gives ours another
    device, so the node has two fewer free, not one (one fewer made the shard send pods to
    full nodes, refused by the binder: most of issue 26's extra conflicts)."""
    devices = _state()
    assert _free_on_n1(devices) == 2
    gpu0 = allocation("n1", "gpu-0")
    devices.assume(parse_object(resource_claim("mine")), gpu0)
    devices.set(parse_object(resource_claim("theirs", allocation=gpu0, reserved_for=["q"])))
    assert _free_on_n1(devices) == 0
    devices.revert("default/mine")
    assert _free_on_n1(devices) == 1


def test_counts_built_while_a_device_has_two_holders_count_both():
    devices = _state()
    gpu0 = allocation("n1", "gpu-0")
    devices.assume(parse_object(resource_claim("mine")), gpu0)
    devices.set(parse_object(resource_claim("theirs", allocation=gpu0, reserved_for=["q"])))
    assert _free_on_n1(devices) == 0  # (the counts are built now, from the holders)
