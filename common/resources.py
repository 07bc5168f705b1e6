"""Quantities and resource vectors.

Every resource amount the scheduler compares is an integer in a fixed-width tuple (a
"resource vector"): cpu in millicores, memory and ephemeral-storage in bytes, pods as a count,
then one slot per extended resource (``nvidia.com/gpu``...) in order of first appearance.
Fixed-width tuples let the node table keep them as numpy columns and let the splay trees add
them without dictionaries on the hot path.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kubernetes.utils import parse_quantity as _k8s_parse_quantity

CPU, MEMORY, EPHEMERAL, PODS = 0, 1, 2, 3
BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
#: Width of every resource vector; the slots past the four base resources hold extended ones.
NUM_SLOTS = 16

_names: list[str] = list(BASE_RESOURCES)
_index: dict[str, int] = {n: i for i, n in enumerate(_names)}

ZERO: tuple[int, ...] = (0,) * NUM_SLOTS

#: Kubernetes' quantity grammar (apimachinery resource.ParseQuantity): signed ASCII decimal,
#: then one of: an integer decimal exponent, a binary suffix, a decimal suffix (only lowercase k).
#: The client library's parser alone also takes "1K", "1_000", "1e3k" and non-ASCII digits.
#: Kubernetes caps quantities at 2^63-1 in magnitude; amounts also have to fit int64 columns.
_INT64_MAX = (1 << 63) - 1
_MAX_QUANTITY = Decimal(_INT64_MAX)
_QUANTITY_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


class TooManyResources(ValueError):
    """More distinct extended resources than the vector has slots for."""


def resource_index(name: str) -> int:
    """Slot of a resource name, registering extended resources on first sight."""
    i = _index.get(name)
    if i is None:
        if len(_names) >= NUM_SLOTS:
            raise TooManyResources(
                f"too many distinct resources (at most {NUM_SLOTS - len(BASE_RESOURCES)} "
                f"extended resources are supported), cannot add {name!r}")
        i = len(_names)
        _names.append(name)
        _index[name] = i
    return i


def resource_name(i: int) -> str:
    return _names[i]


def known_resources() -> list[str]:
    return list(_names)


@lru_cache(maxsize=65536)
def _parse_text(text: str) -> Decimal:
    return _k8s_parse_quantity(text)


def parse_quantity(value) -> Decimal:
    """Parse a Kubernetes quantity ("100m", "1Gi", 2, "1e3") with the official rules.

    Raises ValueError with a short reason; callers wrap it into an ObjectError naming the field.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"invalid quantity {value!r}")
    if isinstance(value, (int, float)):
        value = repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid quantity {value!r}")
    text = value.strip()
    if not _QUANTITY_RE.fullmatch(text):
        raise ValueError(f"invalid quantity {value!r}")
    try:
        q = _parse_text(text)
    except (ValueError, InvalidOperation, TypeError):
        raise ValueError(f"invalid quantity {value!r}") from None
    if not q.is_finite():
        raise ValueError(f"invalid quantity {value!r}")
    if q.copy_abs() > _MAX_QUANTITY:  # "1e999999" would otherwise hang or overflow in quantity_to_int
        q = _MAX_QUANTITY.copy_sign(q)
    return q


def quantity_to_int(name: str, q: Decimal) -> int:
    """Integer amount in the resource's unit: millicores for cpu, rounded up like Kubernetes."""
    n = int(math.ceil(q * 1000)) if name == "cpu" else int(math.ceil(q))
    return max(-_INT64_MAX, min(_INT64_MAX, n))


@lru_cache(maxsize=65536, typed=True)
def _amount(name: str, value) -> tuple[int, bool]:
    q = parse_quantity(value)
    return quantity_to_int(name, q), q < 0


def parse_amount(name: str, value) -> tuple[int, bool]:
    """`value` as an integer amount of resource `name`, and whether the quantity is negative.

    Memoised by (name, value): a cluster's pods repeat a handful of request values, and the
    Decimal arithmetic was a large share of parsing a pod. Raises ValueError like
    parse_quantity; unhashable values (a list where a quantity belongs) skip the memo.
    """
    try:
        return _amount(name, value)
    except TypeError:
        q = parse_quantity(value)
        return quantity_to_int(name, q), q < 0


def vector_from_map(amounts: dict[str, int]) -> tuple[int, ...]:
    """Dense vector from {resource name: integer amount}."""
    v = [0] * NUM_SLOTS
    for name, amount in amounts.items():
        v[resource_index(name)] += amount
    return tuple(v)


def vector_to_map(v) -> dict[str, int]:
    return {_names[i]: int(x) for i, x in enumerate(v) if x and i < len(_names)}


def vadd(a, b) -> tuple[int, ...]:
    return tuple([x + y for x, y in zip(a, b)])


def vsub(a, b) -> tuple[int, ...]:
    return tuple([x - y for x, y in zip(a, b)])


def vmax(a, b) -> tuple[int, ...]:
    return tuple([x if x >= y else y for x, y in zip(a, b)])


def fits(request, free) -> bool:
    """True when every requested amount is available."""
    for r, f in zip(request, free):
        if r > f:
            return False
    return True


def format_amount(name: str, amount: int) -> str:
    """Human form of an integer amount, for messages and summaries."""
    if name == "cpu":
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if name in ("memory", "ephemeral-storage"):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount and amount % size == 0:
                return f"{amount // size}{unit}"
    return str(amount)
