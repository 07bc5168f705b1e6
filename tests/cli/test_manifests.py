"""Reading manifests (common/cli/manifests.py): the limits the API server puts on YAML, each
refusing only the document at fault while the documents beside it are read.

* Alias expansion, by go-yaml's rule (what sigs.k8s.io/yaml and so the API server use): once
  more than 100 nodes came from aliases and more than 1,000 were decoded, the share of nodes
  decoded through aliases may not pass 99% (falling to 10% between 400,000 and 4,000,000
  decoded nodes). A few hundred bytes of anchors otherwise expand to tens of megabytes.
* Nesting depth: at most MAX_NESTING_DEPTH levels of mappings and sequences (PyYAML's
  composer recurses per level: 20,000 levels were a RecursionError).
"""
from __future__ import annotations

import re

import pytest
import yaml

from builders import anchor_bomb as bomb
from builders import pod
from common.cli.errors import UsageError
from common.cli.manifests import read_documents
from common.model.limits import MAX_NESTING_DEPTH


def dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def write(tmp_path, text: str, name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_an_anchor_bomb_is_refused_naming_its_document_and_the_rest_is_read(tmp_path):
    text = dump(pod("before")) + "---\n" + bomb() + "---\n" + dump(pod("after"))
    path = write(tmp_path, text)
    docs, errors = read_documents(path)
    assert [d["metadata"]["name"] for d in docs] == ["before", "after"]
    (err,) = errors
    assert err.obj == f"{path}: document 2"
    assert "excessive aliasing" in err.message and re.search(r"at line \d+", err.message)


def test_anchors_used_as_kube_users_do_are_read(tmp_path):
    """Shared labels and resources through anchors, in a List of 300 pods: 900 of about
    8,000 decoded nodes come from aliases, far below go-yaml's bound."""
    items = "\n".join(
        f"- {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}, labels: *labels}}, "
        f"spec: {{containers: [{{name: c, image: x, resources: *res}}]}}}}" for i in range(300))
    text = ("apiVersion: v1\nkind: List\n"
            "defaults:\n  labels: &labels {app: web, tier: front}\n"
            "  res: &res {requests: {cpu: 100m}}\n"
            "items:\n" + items + "\n")
    docs, errors = read_documents(write(tmp_path, text))
    assert errors == []
    assert len(docs) == 300
    assert docs[299]["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert docs[0]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = write(tmp_path, dump(pod("ok")) + "---\n" + dump(pod("loop")).replace(
        "spec:\n", "spec:\n  x: &me [1, *me]\n", 1))
    docs, errors = read_documents(path)
    assert [d["metadata"]["name"] for d in docs] == ["ok"]
    (err,) = errors
    assert err.obj == f"{path}: document 2" and "contains itself" in err.message


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 20_000])
def test_deep_nesting_is_refused_without_recursion_errors(tmp_path, depth):
    deep = dump(pod("deep")).replace("spec:\n", "spec:\n  x: " + "[" * depth + "]" * depth + "\n", 1)
    path = write(tmp_path, dump(pod("a")) + "---\n" + deep + "---\n" + dump(pod("b")))
    docs, errors = read_documents(path)
    assert [d["metadata"]["name"] for d in docs] == ["a", "b"]
    (err,) = errors
    assert err.obj == f"{path}: document 2"
    assert f"exceeded max depth of {MAX_NESTING_DEPTH}" in err.message


def test_nesting_up_to_the_limit_is_read(tmp_path):
    # the pod mapping is level 1, spec 2, x 3: the lists fill the rest up to the limit
    lists = MAX_NESTING_DEPTH - 2
    text = dump(pod("deep")).replace("spec:\n", "spec:\n  x: " + "[" * lists + "]" * lists + "\n", 1)
    docs, errors = read_documents(write(tmp_path, text))
    assert errors == [] and docs[0]["metadata"]["name"] == "deep"


def test_unreadable_yaml_is_still_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="not valid YAML or JSON"):
        read_documents(write(tmp_path, "kind: Pod\n  metadata: [\n"))
