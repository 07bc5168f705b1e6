"""The structured allocator (common/scheduling/dra.py): classes' and requests' CEL selectors,
counts and modes, devices given once, admin access, firstAvailable, matchAttribute, pools."""
from __future__ import annotations

import pytest

from common.model.objects import parse_object
from common.scheduling.dra import AllocatorError, CelCache, Inventory, allocate, allocated_devices, node_pinned, score
from builders import (GPU_DRIVER, allocation, device_class, device_request, gpu, resource_claim, resource_slice)

CACHE = CelCache()


def _run(claims, slices=None, classes=None, node="n1", allocated=()):
    slices = [parse_object(s) for s in (slices if slices is not None else [resource_slice("n1")])]
    classes = {c.name: c for c in (parse_object(c) for c in (classes or [device_class("gpu")]))}
    claims = [parse_object(c) for c in claims]
    return allocate(claims, node, {}, Inventory(slices), classes, set(allocated), CACHE)


def _devices(result):
    return [[r["device"] for r in a["devices"]["results"]] for a in result]


def test_one_device_on_the_node_first_in_slice_order_pinned_to_the_node():
    got = _run([resource_claim("c")])
    assert _devices(got) == [["gpu-0"]]
    assert got[0]["devices"]["results"][0] == {"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}
    assert node_pinned(got[0]) == "n1"
    assert _run([resource_claim("c")], node="n2") is None  # the slice is n1's


def test_allocated_devices_are_not_given_again_nor_twice_to_one_pod():
    assert _devices(_run([resource_claim("c")], allocated=[(GPU_DRIVER, "n1", "gpu-0")])) == [["gpu-1"]]
    assert _devices(_run([resource_claim("a"), resource_claim("b")])) == [["gpu-0"], ["gpu-1"]]
    assert _run([resource_claim("a"), resource_claim("b"), resource_claim("c")]) is None


def test_class_and_request_selectors_in_cel():
    slices = [resource_slice("n1", [gpu(0, model="T4"), gpu(1, model="A100"), gpu(2, model="A100")])]
    a100 = 'device.attributes["gpu.example.com"].model == "A100"'
    assert _devices(_run([resource_claim("c")], slices, [device_class("gpu", selectors=[a100])])) == [["gpu-1"]]
    big = 'device.attributes["gpu.example.com"].index >= 2'
    assert _devices(_run([resource_claim("c", device_request(selectors=[big]))], slices)) == [["gpu-2"]]
    assert _run([resource_claim("c")], slices, [device_class("gpu", driver="other.example.com")]) is None


def test_exact_count_and_all():
    slices = [resource_slice("n1", [gpu(i) for i in range(4)])]
    assert _devices(_run([resource_claim("c", device_request(count=3))], slices)) == [["gpu-0", "gpu-1", "gpu-2"]]
    assert _run([resource_claim("c", device_request(count=5))], slices) is None
    assert _devices(_run([resource_claim("c", device_request(mode="All"))], slices)) == [[f"gpu-{i}" for i in range(4)]]
    # All needs every matching device free
    assert _run([resource_claim("c", device_request(mode="All"))], slices, allocated=[(GPU_DRIVER, "n1", "gpu-3")]) is None


def test_match_attribute_backtracks_to_devices_that_share_the_value():
    # pci0: gpu-0..3; gpu-1..3 taken -> the pair must come from pci1 (gpu-4, gpu-5)
    slices = [resource_slice("n1", [gpu(i) for i in range(8)])]
    claim = resource_claim("c", device_request(count=2), match=[("resource.kubernetes.io/pcieRoot", None)])
    taken = [(GPU_DRIVER, "n1", f"gpu-{i}") for i in (1, 2, 3)]
    assert _devices(_run([claim], slices, allocated=taken)) == [["gpu-4", "gpu-5"]]
    two = resource_claim("c", device_request("a"), device_request("b"), match=[("gpu.example.com/model", ["a", "b"])])
    mixed = [resource_slice("n1", [gpu(0, model="T4"), gpu(1, model="A100"), gpu(2, model="T4")])]
    assert _devices(_run([two], mixed)) == [["gpu-0", "gpu-2"]]
    missing = resource_claim("c", device_request(count=2), match=[("gpu.example.com/nothing", None)])
    assert _run([missing], slices) is None


def test_admin_access_takes_allocated_devices_and_holds_none():
    got = _run([resource_claim("c", device_request(admin=True))], allocated=[(GPU_DRIVER, "n1", "gpu-0")])
    assert got[0]["devices"]["results"][0]["adminAccess"] is True
    assert allocated_devices(got[0]) == []


def test_first_available_takes_the_first_alternative_that_fits_and_scores_it():
    slices = [resource_slice("n1", [gpu(0)])]
    claim = resource_claim("c", device_request("g", first_available=[("two", "gpu", 2), ("one", "gpu", 1)]))
    got = _run([claim], slices)
    assert [r["request"] for r in got[0]["devices"]["results"]] == ["g/one"]
    assert score([parse_object(claim)], got) == 7
    assert score([parse_object(claim)], _run([claim], [resource_slice("n1")])) == 8


def test_only_complete_pools_of_the_newest_generation():
    half = resource_slice("n1", [gpu(0)], name="a", count=2, generation=1)
    assert _run([resource_claim("c")], [half]) is None
    old = resource_slice("n1", [gpu(5)], name="old", generation=0)
    assert _run([resource_claim("c")], [half, old]) is None
    other = resource_slice("n1", [gpu(1)], name="b", count=2, generation=1)
    assert _devices(_run([resource_claim("c")], [half, other])) == [["gpu-0"]]


def test_slices_for_all_nodes_or_selected_nodes():
    anywhere = resource_slice("net", [gpu(0)], pool="net", allNodes=True)
    got = _run([resource_claim("c")], [anywhere], node="n9")
    assert _devices(got) == [["gpu-0"]] and "nodeSelector" not in got[0]


def test_bad_expressions_and_missing_classes_are_errors_naming_the_claim():
    with pytest.raises(AllocatorError) as e:
        _run([resource_claim("c", device_request(selectors=['device.attributes["gpu.example.com"].nope == 1']))])
    assert str(e.value) == "claim default/c: selector #0: CEL runtime error: no such key: nope"
    with pytest.raises(AllocatorError, match="^class broken: selector #1: CEL runtime error: no such key: x$"):
        _run([resource_claim("c", device_request(cls="broken"))],
             classes=[device_class("broken", selectors=['device.attributes["gpu.example.com"].x'])])
    with pytest.raises(AllocatorError, match="compilation failed"):
        _run([resource_claim("c", device_request(selectors=["device.("]))])
    with pytest.raises(AllocatorError, match="request gpu: device class none does not exist"):
        _run([resource_claim("c", device_request(cls="none"))])


def test_an_existing_allocation_document_names_its_devices():
    assert allocated_devices(allocation("n1", "gpu-3")) == [(GPU_DRIVER, "n1", "gpu-3")]
