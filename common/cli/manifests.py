"""Reading Kubernetes manifests from a file, for `create -f` and `simulate`.

A file holds JSON, or YAML with one or more documents; a `kind: List` (or any *List with
items) contributes its items. Unreadable input raises UsageError (exit status 2).
"""
from __future__ import annotations

import sys

import orjson
import yaml

from .errors import UsageError


def read_documents(path: str) -> list:
    """The objects in `path` ('-' = stdin), in file order."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    out = []
    for doc in _parse_text(text, path):
        if isinstance(doc, dict) and str(doc.get("kind") or "").endswith("List") \
                and isinstance(doc.get("items"), list):
            out.extend(doc["items"])
        elif doc is not None:
            out.append(doc)
    return out


def _parse_text(text: str, path: str) -> list:
    """JSON first (PyYAML's YAML 1.1 misreads some valid JSON), then YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            doc = orjson.loads(text)
            return doc if isinstance(doc, list) else [doc]
        except orjson.JSONDecodeError:
            pass
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise UsageError(f"{path}: not valid YAML or JSON: {e}") from None
