"""Reading Kubernetes manifests from a file, for `create -f` and `simulate`.

A file holds JSON, or YAML with one or more documents; a `kind: List` (or any *List with
items) contributes its items. Unreadable input raises UsageError (exit status 2).

YAML is read under the API server's limits (alias expansion, nesting depth: see
common/model/yaml_input.py, whose linear scan refuses a too deep document before PyYAML reads it),
each refusing only the document at fault (an ObjectError naming it; the other documents are
read).
Limits on the objects themselves (size, JSON values) are admission's: common.model.limits.
"""
from __future__ import annotations

import sys

from ..errors import ObjectError
from ..model.yaml_input import ALIAS_RATIO_RANGE, Unreadable, read_text  # noqa: F401 (re-exported)
from .errors import UsageError


def read_documents(path: str) -> tuple[list, list[ObjectError]]:
    """The objects in `path` ('-' = stdin), in file order, and the documents refused."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    out = []
    docs, refused = _parse_text(text, path)
    for doc in docs:
        if isinstance(doc, dict) and str(doc.get("kind") or "").endswith("List") \
                and isinstance(doc.get("items"), list):
            out.extend(doc["items"])
        elif doc is not None:
            out.append(doc)
    return out, refused


def _parse_text(text: str, path: str) -> tuple[list, list[ObjectError]]:
    try:
        docs, refused = read_text(text)
    except Unreadable as e:
        raise UsageError(f"{path}: not valid YAML or JSON: {e}") from None
    return docs, [ObjectError(f"{path}: document {n}", "<root>", f"yaml: {e.reason} (at line {e.line})")
                  for n, e in refused]
