"""What an object may be at all, before any kind's own rules: the API server's and etcd's
limits, and what JSON can carry.

Every store checks these before it writes (any client may write an object), and admission
before `create -f` or `simulate` takes one, so that no object can make every process that
watches it grow, or fail to serialise once it is stored:

* size: at most 1.5 MiB as JSON, etcd's default request limit (`--max-request-bytes`); the API
  server also refuses request bodies over 3 MiB, which an object under 1.5 MiB never is;
* nesting: at most MAX_NESTING_DEPTH levels of mappings and lists. The API server's decoders
  allow 10,000; orjson, which every store serialises with, stops at 254, and PyYAML's
  composer and dumper recurse per level under Python's recursion limit, so the bound here
  sits well below both;
* JSON values only: string keys, integers that fit 64 bits (the API's integer type), finite
  numbers, no binary data or sets. YAML can say all of these (`{1: a}`, `!!binary`, `.nan`,
  huge integers); JSON, and so every store, cannot.
"""
from __future__ import annotations

import math
from datetime import date

import orjson

from ..errors import ObjectError
from .objects import NAMESPACED
from .resources import INT64_MAX
from .selectors import Field

MAX_OBJECT_BYTES = 1536 * 1024
MAX_NESTING_DEPTH = 100
INT64_MIN = -INT64_MAX - 1


def describe(obj) -> str:
    """How errors name an object: "Pod default/web", "Node n1", "<object>" for a non-mapping."""
    if not isinstance(obj, dict):
        return "<object>"
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) and obj.get("kind") else "<no kind>"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    if kind in NAMESPACED:
        ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) and meta.get("namespace") else "default"
        return f"{kind} {ns}/{name}"
    return f"{kind} {name}"


def check_object(obj) -> None:
    """Raise ObjectError naming the object and the field when `obj` breaks a limit above.
    The object is named (`describe`) only when it is refused: every write passes here."""
    if not isinstance(obj, dict):
        raise ObjectError(describe(obj), "<root>", f"must be a mapping, got {type(obj).__name__}")
    if not _plain(obj):
        problem = _first_problem(obj, Field(describe(obj)))
        if problem is not None:
            raise problem
    try:
        size = len(orjson.dumps(obj))
    except orjson.JSONEncodeError as e:  # what the quick pass lets through: a lone surrogate
        who = describe(obj)
        raise _first_problem(obj, Field(who)) or ObjectError(who, "<root>", f"cannot be stored as JSON: {e}") from None
    if size > MAX_OBJECT_BYTES:
        raise ObjectError(describe(obj), "<root>",
                          f"the object is {size} bytes as JSON, more than the limit of {MAX_OBJECT_BYTES}")


def _plain(obj: dict) -> bool:
    """The quick pass every object takes: True when it holds nothing but JSON's own types
    within the limits. False sends it to `_first_problem`, which names what is wrong.

    Only mappings and lists go on the stack (with their depth); the leaves, most of a
    document (strings above all), are judged where their container is walked, since every
    write of every client passes here (a kubelet's status writes by the thousand)."""
    stack = [obj, 1]
    pop, push = stack.pop, stack.append
    while stack:
        depth = pop()
        value = pop()
        if depth > MAX_NESTING_DEPTH:
            return False
        depth += 1
        if value.__class__ is dict:
            for k in value:
                if k.__class__ is not str:
                    return False
            value = value.values()
        for v in value:
            cls = v.__class__
            if cls is str:
                continue
            if cls is dict or cls is list:
                push(v)
                push(depth)
            elif v is None or cls is bool:
                continue
            elif cls is int:
                if not INT64_MIN <= v <= INT64_MAX:
                    return False
            elif cls is float:
                if not math.isfinite(v):
                    return False
            else:
                return False
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _first_problem(obj: dict, root: Field) -> ObjectError | None:
    """The first value in document order that breaks a limit, as an error naming its field;
    None when there is none after all (subclasses of the plain types, dates)."""
    stack = [(obj, 1, root)]
    while stack:
        value, depth, f = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_NESTING_DEPTH:
                return f.error(f"nested more than {MAX_NESTING_DEPTH} levels deep")
            for k in value:
                if not isinstance(k, str):
                    return f.error(f"keys must be strings, got {type(k).__name__} {k!r}")
            stack.extend((v, depth + 1, f.at(k)) for k, v in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            if depth > MAX_NESTING_DEPTH:
                return f.error(f"nested more than {MAX_NESTING_DEPTH} levels deep")
            stack.extend((v, depth + 1, f.at(i)) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, str):
            if not _utf8(value):
                return f.error(f"{value!r} is not valid UTF-8 (it holds a lone surrogate)")
        elif isinstance(value, bool) or value is None or isinstance(value, date):
            continue
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                return f.error(f"integer {value} is outside the int64 range")
        elif isinstance(value, float):
            if not math.isfinite(value):
                return f.error(f"{value!r} is not a JSON number")
        elif isinstance(value, (bytes, bytearray)):
            return f.error("binary data (!!binary) cannot be stored; use a base64 string")
        else:
            return f.error(f"a {type(value).__name__} cannot be stored as JSON")
    return None
