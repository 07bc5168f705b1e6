"""`shardsched fleet --gpus-per-node N` as a user runs it (the store's side: tests/test_kube_dra.py
and the embedded store's test below)."""
from __future__ import annotations

import orjson

from builders import run_cli as run




def test_gpus_per_node_adds_the_device_class_and_a_slice_per_node(capsys):
    code, out, err = run(capsys, "fleet", "--nodes", "3", "--gpus-per-node", "8", "-o", "json")
    assert code == 0, err
    items = orjson.loads(out)["items"]
    assert [d["kind"] for d in items] == ["Node"] * 3 + ["DeviceClass"] + ["ResourceSlice"] * 3
    assert [len(d["spec"]["devices"]) for d in items[4:]] == [8, 8, 8]


def test_a_bad_gpu_count_is_a_usage_error_naming_the_flag(capsys):
    code, _, err = run(capsys, "fleet", "--nodes", "1", "--gpus-per-node", "129", "-o", "yaml")
    assert code == 2 and "--gpus-per-node must be between 0 and 128, not 129" in err


def test_gpus_per_node_are_written_into_the_store_beside_the_nodes(capsys):
    from common.store import open_store
    from common.store.embedded import EmbeddedRedis
    from common.model.objects import parse_object

    with EmbeddedRedis() as server:
        code, out, err = run(capsys, "fleet", "--nodes", "4", "--gpus-per-node", "8", "--store", server.url)
        assert code == 0, err
        assert "devices: 8 per node from driver gpu.example.com in 4 ResourceSlices" in out
        store = open_store(server.url)
        try:
            slices = [parse_object(d) for d in store.list("ResourceSlice")[0]]
            classes = [parse_object(d) for d in store.list("DeviceClass")[0]]
        finally:
            store.close()
    assert sorted(s.node_name for s in slices) == [f"kwok-node-{i}" for i in range(4)]
    assert all(len(s.devices) == 8 and s.pool == s.node_name for s in slices)
    assert [c.name for c in classes] == ["gpu.example.com"]
