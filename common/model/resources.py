"""Quantities and resource vectors.

Every resource amount the scheduler compares is an integer in a tuple (a "resource vector"):
cpu in millicores, memory and ephemeral-storage in bytes, pods as a count, then one slot per
extended resource (``nvidia.com/gpu``...). Tuples let the node table keep them as numpy
columns and let the splay trees add them without dictionaries on the hot path.

Extended resources get their slots from a process-wide ResourceTable as they appear, and give
them back once nothing uses them: a vector is only as long as its highest slot (the four base
slots always), missing slots are zero, and the arithmetic here pads. Whatever holds a vector
with extended slots also holds the SlotHold that came with it (parsed Pods and Nodes do), so
a slot is reused for another resource only after every vector that used it is gone.
"""
from __future__ import annotations

import collections
import heapq
import math
import re
import threading
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from operator import add, sub

CPU, MEMORY, EPHEMERAL, PODS = 0, 1, 2, 3
BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
BASE_WIDTH = len(BASE_RESOURCES)
_BASE_INDEX = {n: i for i, n in enumerate(BASE_RESOURCES)}
#: Extended resources one process tracks at once: each is a column of every shard's node
#: table (8 bytes x 3 columns x nodes), the one hard limit left.
MAX_EXTENDED_RESOURCES = 128
#: The largest amount a vector holds: the int64 columns of the node table.
INT64_MAX = (1 << 63) - 1

ZERO: tuple[int, ...] = (0,) * BASE_WIDTH

#: Kubernetes' quantity grammar (apimachinery resource.ParseQuantity): signed ASCII decimal,
#: then one of: an integer decimal exponent, a binary suffix, a decimal suffix (only lowercase k).
#: The client library's parser alone also takes "1K", "1_000", "1e3k" and non-ASCII digits.
#: Kubernetes caps quantities at 2^63-1 in magnitude; amounts also have to fit int64 columns.
_MAX_QUANTITY = Decimal(INT64_MAX)
_QUANTITY_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")


class TooManyResources(ValueError):
    """More distinct extended resources in use at once than the table may hold."""

    def __init__(self, name: str, limit: int):
        super().__init__(f"more than {limit} distinct extended resources in use at once "
                         f"(a column of every node table each), cannot add {name!r}")
        self.name = name


class SlotHold:
    """The extended slots of one vector, kept assigned while anything holds this object.

    Copies of an object share its hold; when the last holder goes, CPython drops the hold at
    once and `__del__` queues its slots for the table to take back. Queued, not handed back
    here, because `__del__` may run anywhere, even inside the table's own lock.
    """

    __slots__ = ("slots", "_released", "__weakref__")

    def __init__(self, slots: tuple, released: collections.deque):
        self.slots = slots
        self._released = released

    def __del__(self):
        self._released.append(self.slots)


class ResourceTable:
    """Slots of extended resources: given out on first use, lowest free slot first (so
    vectors stay short), taken back when no SlotHold uses them any more."""

    def __init__(self, max_extended: int = MAX_EXTENDED_RESOURCES):
        self.max_extended = max_extended
        self._names: list[str | None] = list(BASE_RESOURCES)  # slot -> name, None when free
        self._index: dict[str, int] = dict(_BASE_INDEX)
        self._holds: list[int] = [1] * BASE_WIDTH             # slot -> live holds (+1 if pinned)
        self._pinned: set[str] = set(BASE_RESOURCES)
        self._free: list[int] = []                            # a heap of free slots
        self._released: collections.deque = collections.deque()
        self._lock = threading.Lock()

    @property
    def width(self) -> int:
        """One past the highest slot ever given out: no vector is longer."""
        return len(self._names)

    def name(self, i: int) -> str:
        return self._names[i]

    def vector(self, amounts: dict[str, int]) -> tuple[tuple[int, ...], SlotHold | None]:
        """The vector of {resource name: amount}, and the hold on its extended slots (None
        when it has none; zero amounts take no slot). Raises TooManyResources naming the
        resource that found the table full."""
        v = [0] * BASE_WIDTH
        extended: dict[str, int] = {}
        for name, amount in amounts.items():
            i = _BASE_INDEX.get(name)
            if i is not None:
                v[i] += amount
            elif amount:
                extended[name] = amount
        if not extended:
            return tuple(v), None
        slots = self._take(extended)
        v.extend([0] * (max(slots) + 1 - BASE_WIDTH))
        for i, amount in zip(slots, extended.values()):
            v[i] = amount
        return tuple(v), SlotHold(tuple(slots), self._released)

    def pin(self, name: str) -> int:
        """The slot of `name`, kept for the life of the process (resources named in the
        configuration, which plugins address by slot)."""
        with self._lock:
            if name in self._pinned:
                return self._index[name]
            self._take_back()
            i = self._acquire(name)
            self._pinned.add(name)
            return i

    def in_use(self) -> int:
        """Extended slots given out now (pinned ones included)."""
        with self._lock:
            self._take_back()
            return len(self._index) - BASE_WIDTH

    def names(self) -> list[str]:
        """Resources with a slot now, by slot."""
        with self._lock:
            self._take_back()
            return [n for n in self._names if n is not None]

    def _take(self, names) -> list[int]:
        with self._lock:
            self._take_back()  # here too, so the queue of dropped holds never piles up
            taken: list[int] = []
            try:
                for name in names:
                    taken.append(self._acquire(name))
            except TooManyResources:
                for i in taken:
                    self._let_go(i)
                raise
            return taken

    def _acquire(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = self._new_slot(name)
        self._holds[i] += 1
        return i

    def _new_slot(self, name: str) -> int:
        if self._free:
            i = heapq.heappop(self._free)
            self._names[i] = name
        elif self.width - BASE_WIDTH < self.max_extended:
            i = self.width
            self._names.append(name)
            self._holds.append(0)
        else:
            raise TooManyResources(name, self.max_extended)
        self._index[name] = i
        return i

    def _take_back(self) -> None:
        """Count down the holds dropped since the last call (the lock is held)."""
        released = self._released
        while released:
            for i in released.popleft():
                self._let_go(i)

    def _let_go(self, i: int) -> None:
        self._holds[i] -= 1
        if not self._holds[i]:
            del self._index[self._names[i]]
            self._names[i] = None
            heapq.heappush(self._free, i)


#: The table of this process.
RESOURCES = ResourceTable()


def resource_vector(amounts: dict[str, int]) -> tuple[tuple[int, ...], SlotHold | None]:
    """RESOURCES.vector: keep the hold wherever the vector is kept."""
    return RESOURCES.vector(amounts)


def resource_index(name: str) -> int:
    """The slot of a resource named in the configuration (pinned for good)."""
    i = _BASE_INDEX.get(name)
    return i if i is not None else RESOURCES.pin(name)


def resource_name(i: int) -> str:
    return RESOURCES.name(i)


#: The power of each suffix (apimachinery's): binary ones of 1024, decimal ones of 1000.
_BINARY_POWER = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_DECIMAL_POWER = {"n": -3, "u": -2, "m": -1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_1024, _1000 = Decimal(1024), Decimal(1000)


@lru_cache(maxsize=65536)
def _parse_text(text: str) -> Decimal:
    """The value of a quantity `_QUANTITY_RE` matched. (Written here rather than taken from
    the kubernetes package, whose import loads its whole client: a second of start-up for
    every process on a busy machine.)"""
    if text[-1] == "i":
        return Decimal(text[:-2]) * _1024 ** _BINARY_POWER[text[-2]]
    power = _DECIMAL_POWER.get(text[-1])
    if power is not None:
        return Decimal(text[:-1]) * _1000 ** power
    return Decimal(text)


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
    return max(-INT64_MAX, min(INT64_MAX, n))


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


def vector_to_map(v) -> dict[str, int]:
    return {RESOURCES.name(i): int(x) for i, x in enumerate(v) if x}


def _trimmed(v: list) -> tuple[int, ...]:
    """The canonical form: no zero slots past the last non-zero extended one."""
    while len(v) > BASE_WIDTH and not v[-1]:
        v.pop()
    return tuple(v)


def _combined(op, a, b) -> tuple[int, ...]:
    if len(a) == len(b):
        if len(a) == BASE_WIDTH:
            return tuple(map(op, a, b))
        return _trimmed(list(map(op, a, b)))
    n = max(len(a), len(b))
    return _trimmed(list(map(op, padded(a, n), padded(b, n))))


def padded(v, n: int) -> tuple[int, ...]:
    """`v` with zeros up to length `n` (a longer `v` stays as it is)."""
    return tuple(v) + (0,) * (n - len(v)) if len(v) < n else tuple(v)


def vadd(a, b) -> tuple[int, ...]:
    return _combined(add, a, b)


def vsum(vectors: list) -> tuple[int, ...]:
    """The sum of `vectors` (at least one), equal to vadd of each in turn, in one pass over
    their columns."""
    n = max(map(len, vectors))
    if n == BASE_WIDTH and len(vectors[0]) == n and all(len(v) == n for v in vectors):
        return tuple(map(sum, zip(*vectors)))
    return _trimmed(list(map(sum, zip(*(padded(v, n) for v in vectors)))))


def vsub(a, b) -> tuple[int, ...]:
    return _combined(sub, a, b)


def vmax(a, b) -> tuple[int, ...]:
    return _combined(max, a, b)


def fits(request, free) -> bool:
    """True when every requested amount is available (slots past the end of `free` hold 0)."""
    for r, f in zip(request, free):
        if r > f:
            return False
    return len(request) <= len(free) or not any(r > 0 for r in request[len(free):])


def shortfalls(request, free) -> list[int]:
    """The slots where `request` asks for more than `free` has."""
    n = len(free)
    return [i for i, r in enumerate(request) if r > (free[i] if i < n else 0)]


def format_amount(name: str, amount: int) -> str:
    """Human form of an integer amount, for messages and summaries."""
    if name == "cpu":
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if name in ("memory", "ephemeral-storage"):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount and amount % size == 0:
                return f"{amount // size}{unit}"
    return str(amount)
