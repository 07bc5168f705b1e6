"""common.tools.fleet's DRA devices: what `shardsched fleet --gpus-per-node N` publishes."""
from __future__ import annotations

import pytest

from common.tools import fleet


def test_each_node_gets_its_own_pool_of_gpus_on_two_pcie_roots():
    nodes = fleet.generate(3, "uniform")
    slices = fleet.resource_slices(nodes, 8)
    assert [(s["spec"]["nodeName"], s["spec"]["pool"]["name"]) for s in slices] == [
        (f"kwok-node-{i}", f"kwok-node-{i}") for i in range(3)]
    assert {s["spec"]["driver"] for s in slices} == {fleet.GPU_DRIVER}
    assert all(s["spec"]["pool"]["resourceSliceCount"] == 1 for s in slices)
    devices = slices[0]["spec"]["devices"]
    assert [d["name"] for d in devices] == [f"gpu-{i}" for i in range(8)]
    assert [d["attributes"]["index"]["int"] for d in devices] == list(range(8))
    roots = [d["attributes"][fleet.PCIE_ROOT]["string"] for d in devices]
    assert roots[:4] == ["pci0000:00"] * 4 and roots[4:] == ["pci0000:01"] * 4
    assert all(d["capacity"]["memory"]["value"] == fleet.GPU_MEMORY for d in devices)
    # every slice holds its own devices (a YAML dump has no anchors to share them)
    assert slices[0]["spec"]["devices"] is not slices[1]["spec"]["devices"]


def test_the_device_class_selects_the_driver_and_comes_first():
    docs = fleet.gpu_fleet(fleet.generate(2, "uniform"), 2)
    assert [d["kind"] for d in docs] == ["DeviceClass", "ResourceSlice", "ResourceSlice"]
    assert docs[0]["metadata"]["name"] == fleet.GPU_CLASS
    assert docs[0]["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
    assert fleet.gpu_fleet(fleet.generate(2, "uniform"), 0) == []


@pytest.mark.parametrize("count", [-1, fleet.MAX_DEVICES_PER_SLICE + 1])
def test_a_count_out_of_range_is_refused_by_its_flag(count):
    with pytest.raises(ValueError, match="--gpus-per-node must be between 0 and 128"):
        fleet.resource_slices(fleet.generate(1, "uniform"), count)
