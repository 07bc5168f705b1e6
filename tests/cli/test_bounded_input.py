"""Hostile input depth (issue 29, item 4): a file nested 100,000 levels deep in 200 KB is
refused by a linear scan before PyYAML reads it (PyYAML's scanner is quadratic in the flow
depth: such a file ran for minutes in `create -f` and `simulate`, 10,000 levels for 21 s, and
`config validate` died of a RecursionError at 5,000), naming the document, while the other
documents of the file are read.

The time bound (1 s, for what takes about 10 ms here) holds under a 4x slowdown; the old code
took minutes.
"""
from __future__ import annotations

import time

import pytest
import yaml

from builders import pod
from common import config
from common.cli import main
from common.cli.manifests import read_documents
from common.cli.simulate import simulate
from common.model.limits import MAX_NESTING_DEPTH
from common.model.yaml_input import read_text, scan_documents

LEVELS = 100_000
BOUND_S = 1.0

SHAPES = {
    "flow lists": "[" * LEVELS + "]" * LEVELS + "\n",
    "flow mappings": "{a: " * (LEVELS // 2) + "1" + "}" * (LEVELS // 2) + "\n",
    "block sequences": "- " * LEVELS + "x\n",
    "a value of lists": "kind: Pod\nmetadata:\n  name: deep\nspec:\n  x: " + "[" * LEVELS + "]" * LEVELS + "\n",
}


def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def deep_file(tmp_path, deep: str) -> str:
    path = tmp_path / "deep.yaml"
    path.write_text(dump(pod("before")) + "---\n" + deep + "---\n" + dump(pod("after")))
    return str(path)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_deep_document_is_refused_at_once_naming_it_and_the_rest_is_read(tmp_path, shape):
    path = deep_file(tmp_path, SHAPES[shape])
    start = time.monotonic()
    docs, errors = read_documents(path)
    took = time.monotonic() - start
    assert took < BOUND_S, f"{took:.2f} s to refuse {LEVELS} levels"
    assert [d["metadata"]["name"] for d in docs] == ["before", "after"]
    (err,) = errors
    assert err.obj == f"{path}: document 2"
    assert f"exceeded max depth of {MAX_NESTING_DEPTH}" in err.message


def test_a_deep_json_file_is_refused_at_once(tmp_path):
    """A JSON text is one document (orjson refuses it past 1,024 levels; the scan then does)."""
    path = tmp_path / "deep.json"
    path.write_text('{"kind": "Pod", "metadata": {"name": "a"}, "x": ' + "[" * LEVELS + "]" * LEVELS + "}")
    start = time.monotonic()
    docs, errors = read_documents(str(path))
    assert time.monotonic() - start < BOUND_S
    assert docs == []
    (err,) = errors
    assert err.obj == f"{path}: document 1" and "exceeded max depth" in err.message


def test_a_json_lists_items_are_judged_one_by_one(tmp_path):
    path = tmp_path / "list.json"
    path.write_text('[{"kind": "Pod", "metadata": {"name": "a"}}, {"x": ' + "[" * 500 + "]" * 500 + "}]")
    docs, errors = read_documents(str(path))
    assert [d["metadata"]["name"] for d in docs] == ["a"]
    (err,) = errors
    assert err.obj == f"{path}: document 2" and "exceeded max depth" in err.message


def test_create_refuses_the_deep_document_and_creates_the_others(tmp_path, capsys):
    path = deep_file(tmp_path, SHAPES["flow lists"])
    start = time.monotonic()
    try:
        code = main(["create", "-f", path, "--store", "memory://"])
    except SystemExit as e:
        code = e.code
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    assert took < BOUND_S * 3, f"{took:.2f} s"  # the command's own start-up beside the read
    assert out.splitlines() == ["pod/before created", "pod/after created"]
    assert f"{path}: document 2" in err and "exceeded max depth" in err
    assert code != 0


def test_simulate_refuses_the_deep_document_and_schedules_the_others(tmp_path):
    path = deep_file(tmp_path, SHAPES["block sequences"])
    start = time.monotonic()
    doc, code = simulate([path], config.load(None), 0)
    assert time.monotonic() - start < BOUND_S * 3
    assert set(doc["pods"]) == {"default/before", "default/after"}
    assert doc["errors"][0]["object"] == f"{path}: document 2"
    assert "exceeded max depth" in doc["errors"][0]["message"]
    assert code == 1


@pytest.mark.parametrize("levels", [5_000, LEVELS])
def test_config_validate_refuses_a_deep_config_without_a_traceback(tmp_path, capsys, levels):
    path = tmp_path / "deep-config.yaml"
    path.write_text("threshold:\n  x: " + "[" * levels + "]" * levels + "\n")
    start = time.monotonic()
    try:
        code = main(["config", "validate", str(path)])
    except SystemExit as e:
        code = e.code
    assert time.monotonic() - start < BOUND_S
    _, err = capsys.readouterr()
    assert code == 1
    assert f"exceeded max depth of {MAX_NESTING_DEPTH} (at line 2)" in err and "Traceback" not in err


def test_every_process_config_loader_is_bounded(tmp_path):
    """config.load is what `python -m ROLE --config`, `up`, `bench` and `top` read with."""
    path = tmp_path / "c.yaml"
    path.write_text("threshold:\n  x:\n  " + "- " * LEVELS + "y\n")
    with pytest.raises(config.ConfigError, match="max depth"):
        config.load(str(path))


def test_a_config_alias_bomb_is_refused(tmp_path):
    from builders import anchor_bomb
    path = tmp_path / "bomb.yaml"
    path.write_text(anchor_bomb())
    with pytest.raises(config.ConfigError, match="excessive aliasing"):
        config.load(str(path))


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@pytest.mark.parametrize("text", [
    "a:\n  b:\n    c: [1, {d: [2]}]\n",
    "a: 'it''s [[[[ not a list'\nb: \"[[[[\\\" nor this\"\n",
    "a: |\n  [[[[[[\n  {{{{{{\nb: plain [[[[ text # [[[[\n# [[[[[[\n",
    "- - - - x\n",
    "- name: c\n  args: [\"[\", '{']\n  env:\n  - {name: a, value: \"}}}\"}\n",
    "k: &a !!str x\nm:\n  ? key\n  : [v]\n",
])
def test_the_scan_counts_the_depth_yaml_has(text):
    """The smallest limit the scan lets a document through is its depth, as PyYAML reads it."""
    depth = _depth(yaml.safe_load(text))
    assert scan_documents(text, limit=depth)[0][3] is None
    assert scan_documents(text, limit=depth - 1)[0][3] is not None
    docs, refused = read_text(text)
    assert refused == [] and docs == [yaml.safe_load(text)]


def test_the_scan_counts_what_the_composer_counts():
    ok = "spec:\n  x: " + "[" * (MAX_NESTING_DEPTH - 2) + "]" * (MAX_NESTING_DEPTH - 2) + "\n"
    over = "spec:\n  x: " + "[" * (MAX_NESTING_DEPTH - 1) + "]" * (MAX_NESTING_DEPTH - 1) + "\n"
    assert scan_documents(ok)[0][3] is None
    assert scan_documents(over)[0][3] is not None
    assert read_text(ok)[1] == []
