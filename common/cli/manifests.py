"""Reading Kubernetes manifests from a file, for `create -f` and `simulate`.

A file holds JSON, or YAML with one or more documents; a `kind: List` (or any *List with
items) contributes its items. Unreadable input raises UsageError (exit status 2).

YAML is read under the API server's limits, each refusing only the document at fault (an
ObjectError naming it; the other documents are read):
* alias expansion, by go-yaml's rule (sigs.k8s.io/yaml, which the API server decodes YAML
  with): once more than 100 nodes were decoded through aliases and more than 1,000 in all,
  the share decoded through aliases may not pass 99%, falling to 10% between 400,000 and
  4,000,000 decoded nodes. Without it a few hundred bytes of anchors expand to tens of
  megabytes wherever the object is serialised (PyYAML itself shares the aliased lists, so
  nothing is expanded while reading);
* nesting depth, at most common.model.limits.MAX_NESTING_DEPTH levels, checked before PyYAML's
  composer recurses into a level (20,000 levels were a RecursionError).
Limits on the objects themselves (size, JSON values) are admission's: common.model.limits.
"""
from __future__ import annotations

import sys

import orjson
import yaml

from ..errors import ObjectError
from ..model.limits import MAX_NESTING_DEPTH
from .errors import UsageError

#: go-yaml's bounds for its alias rule (decode.go: alias_ratio_range_low/high).
ALIAS_RATIO_RANGE = (400_000, 4_000_000)


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
    """JSON first (PyYAML's YAML 1.1 misreads some valid JSON), then YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            doc = orjson.loads(text)
            return (doc if isinstance(doc, list) else [doc]), []
        except orjson.JSONDecodeError:
            pass
    docs, refused = [], []
    loader = _LimitedLoader(text)
    try:
        while loader.check_node():
            try:
                docs.append(loader.get_data())
            except _Refused as e:
                refused.append(ObjectError(f"{path}: document {loader.documents}", "<root>",
                                           f"yaml: {e.reason} (at line {e.line})"))
                loader.skip_document()
    except yaml.YAMLError as e:
        raise UsageError(f"{path}: not valid YAML or JSON: {e}") from None
    finally:
        loader.dispose()
    return docs, refused


class _Refused(Exception):
    """A document breaks a limit; `line` is where (1-based)."""

    def __init__(self, reason: str, mark):
        super().__init__(reason)
        self.reason = reason
        self.line = mark.line + 1


def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's allowedAliasRatio: 99% for small documents, 10% for huge ones, linear between."""
    low, high = ALIAS_RATIO_RANGE
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting as it composes each document what go-yaml counts as it
    decodes one: nodes decoded, nodes decoded through aliases (an alias decodes its anchor's
    whole expanded subtree again), and the nesting depth."""

    def __init__(self, text: str):
        super().__init__(text)
        self.documents = 0
        self._start_document()

    def _start_document(self) -> None:
        self._depth = self._decoded = self._aliased = 0
        #: expanded node count of each anchor whose node is complete
        self._sizes: dict[str, int] = {}

    def compose_document(self):
        self.documents += 1
        self._start_document()
        return super().compose_document()

    def skip_document(self) -> None:
        """After a refusal: drop the rest of the document's events, so the next one reads."""
        while not self.check_event(yaml.DocumentEndEvent):
            self.get_event()
        self.get_event()
        self.anchors = {}

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            size = self._sizes.get(event.anchor)
            if size is None and event.anchor in self.anchors:
                raise _Refused(f"anchor {event.anchor!r} value contains itself", event.start_mark)
            if size is not None:  # (an undefined alias is PyYAML's own error)
                self._count(1 + size, size, event.start_mark)
            return super().compose_node(parent, index)
        nests = isinstance(event, yaml.CollectionStartEvent)
        if nests:
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise _Refused(f"exceeded max depth of {MAX_NESTING_DEPTH}", event.start_mark)
        before = self._decoded
        self._count(1, 0, event.start_mark)
        node = super().compose_node(parent, index)
        if nests:
            self._depth -= 1
        if event.anchor is not None:
            self._sizes[event.anchor] = self._decoded - before
        return node

    def _count(self, decoded: int, aliased: int, mark) -> None:
        """go-yaml's check, made after each node or whole alias: within one alias the share
        only rises and the allowance only falls, so its end is where it would fail first."""
        self._decoded += decoded
        self._aliased += aliased
        if (self._aliased > 100 and self._decoded > 1000
                and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)):
            raise _Refused("document contains excessive aliasing", mark)
