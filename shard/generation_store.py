"""Generation stores: a cache that can tell any snapshot exactly what changed since it was taken.

The shard's cache is written by informer events while every scheduling cycle works on a
snapshot. Copying the whole cache per cycle would make each cycle cost O(cluster); instead the
cache (``ListStore``) stamps every write with a store-wide generation and keeps its entries in a
linked list ordered by that generation, newest first. A snapshot (``RawStore``) remembers the
generation it reflects, so bringing it up to date walks the list from the front and stops at
the first entry it has already seen: the cost is proportional to what changed.

Deletions have to reach snapshots too, so a delete leaves a tombstone in the list (it is a
write like any other). Tombstones are garbage-collected once they outnumber the live entries,
oldest first; a snapshot older than the oldest deletion still tracked cannot be updated
incrementally any more and is rebuilt in full instead, which is always correct and, because
collection only happens after that many deletes, rare.
"""
from __future__ import annotations

import copy
from collections import deque
from typing import Any, Callable, Hashable, Iterator


class _Tombstone:
    """Marks a deleted key in ``iter_newer_than``; a singleton so ``is`` comparisons work."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "TOMBSTONE"


TOMBSTONE: Any = _Tombstone()


class GenerationTooOld(LookupError):
    """The changes since the requested generation are no longer fully tracked."""


class _Entry:
    """One key in the ListStore's list; slotted because a cache holds one per object."""

    __slots__ = ("key", "value", "gen", "prev", "next")

    def __init__(self, key: Hashable, value: Any, gen: int) -> None:
        self.key = key
        self.value = value
        self.gen = gen
        self.prev: _Entry = self
        self.next: _Entry = self


class RawStore:
    """A snapshot: a plain dict plus the ListStore generation it reflects.

    A scheduling cycle records its assumptions (a pod assumed onto a node, a node updated
    with it) with ``set_local``/``delete_local``; the keys are remembered so the next update
    from the ListStore puts the authoritative values back without comparing the whole map.
    """

    __slots__ = ("data", "generation", "local_keys")

    def __init__(self) -> None:
        self.data: dict[Hashable, Any] = {}
        #: ListStore generation this snapshot reflects; 0 means "never updated".
        self.generation = 0
        #: Keys changed by ``set_local``/``delete_local`` since the last update.
        self.local_keys: set[Hashable] = set()

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __getitem__(self, key: Hashable) -> Any:
        return self.data[key]

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.data)

    def items(self):
        return self.data.items()

    def set_local(self, key: Hashable, value: Any) -> None:
        """Change the snapshot only; undone by the next ``ListStore.update_raw_store``."""
        self.data[key] = value
        self.local_keys.add(key)

    def delete_local(self, key: Hashable) -> None:
        """Remove from the snapshot only (KeyError if absent); undone by the next update."""
        del self.data[key]
        self.local_keys.add(key)


class ListStore:
    """Hash map + generation-ordered doubly linked list; get/set/delete are O(1).

    ``min_tombstones`` is how many deletions are always kept for snapshots regardless of the
    live size; larger values make full rebuilds of lagging snapshots rarer.
    """

    __slots__ = ("_map", "_head", "_live", "_generation", "_tomb_log", "_oldest_tracked",
                 "_min_tombstones")

    def __init__(self, min_tombstones: int = 1024) -> None:
        self._map: dict[Hashable, _Entry] = {}
        # Sentinel of the circular list: _head.next is the newest entry, _head.prev the oldest.
        self._head = _Entry(None, None, 0)
        self._live = 0
        self._generation = 0
        # (generation, key) of every delete in generation order; entries whose key was set
        # again since are stale and skipped when collected. Its length also bounds them.
        self._tomb_log: deque[tuple[int, Hashable]] = deque()
        self._oldest_tracked = 0
        self._min_tombstones = min_tombstones

    @property
    def generation(self) -> int:
        """Generation of the latest write (0 before any)."""
        return self._generation

    @property
    def oldest_tracked_generation(self) -> int:
        """Changes after any generation >= this one are fully known (deletions included)."""
        return self._oldest_tracked

    def __len__(self) -> int:
        return self._live

    def __contains__(self, key: object) -> bool:
        entry = self._map.get(key)  # type: ignore[arg-type]
        return entry is not None and entry.value is not TOMBSTONE

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._map.get(key)
        if entry is None or entry.value is TOMBSTONE:
            return default
        return entry.value

    def __getitem__(self, key: Hashable) -> Any:
        entry = self._map.get(key)
        if entry is None or entry.value is TOMBSTONE:
            raise KeyError(key)
        return entry.value

    def generation_of(self, key: Hashable) -> int:
        """Generation of the last write to a live key, so callers can tell if it changed."""
        entry = self._map.get(key)
        if entry is None or entry.value is TOMBSTONE:
            raise KeyError(key)
        return entry.gen

    def items(self) -> Iterator[tuple[Hashable, Any]]:
        """Live (key, value) pairs, most recently written first."""
        head = self._head
        entry = head.next
        while entry is not head:
            if entry.value is not TOMBSTONE:
                yield entry.key, entry.value
            entry = entry.next

    def _push_front(self, entry: _Entry) -> None:
        head = self._head
        first = head.next
        entry.prev = head
        entry.next = first
        first.prev = entry
        head.next = entry

    @staticmethod
    def _unlink(entry: _Entry) -> None:
        entry.prev.next = entry.next
        entry.next.prev = entry.prev

    def set(self, key: Hashable, value: Any) -> int:
        """Store ``value`` under the next generation and move it to the front; returns it."""
        self._generation += 1
        gen = self._generation
        entry = self._map.get(key)
        if entry is None:
            entry = _Entry(key, value, gen)
            self._map[key] = entry
            self._live += 1
        else:
            if entry.value is TOMBSTONE:
                self._live += 1
            self._unlink(entry)
            entry.value = value
            entry.gen = gen
        self._push_front(entry)
        return gen

    def delete(self, key: Hashable) -> int:
        """Delete a live key (KeyError otherwise), leaving a tombstone; returns its generation."""
        entry = self._map.get(key)
        if entry is None or entry.value is TOMBSTONE:
            raise KeyError(key)
        self._generation += 1
        gen = self._generation
        self._unlink(entry)
        entry.value = TOMBSTONE
        entry.gen = gen
        self._push_front(entry)
        self._live -= 1
        self._tomb_log.append((gen, key))
        if len(self._tomb_log) > max(self._live, self._min_tombstones):
            self._collect_tombstones()
        return gen

    def _collect_tombstones(self) -> None:
        """Drop the older half of the deletion log; amortised O(1) per delete."""
        log = self._tomb_log
        for _ in range((len(log) + 1) // 2):
            gen, key = log.popleft()
            entry = self._map.get(key)
            # Generations are unique, so a matching one means this very tombstone.
            if entry is not None and entry.gen == gen:
                self._unlink(entry)
                del self._map[key]
            self._oldest_tracked = gen

    def iter_newer_than(self, gen: int) -> Iterator[tuple[Hashable, Any, int]]:
        """Yield (key, value or TOMBSTONE, generation) for writes after ``gen``, newest first.

        Raises GenerationTooOld if deletions after ``gen`` may already have been collected.
        """
        if gen < self._oldest_tracked:
            raise GenerationTooOld(gen)
        return self._walk_newer_than(gen)

    def _walk_newer_than(self, gen: int) -> Iterator[tuple[Hashable, Any, int]]:
        head = self._head
        entry = head.next
        while entry is not head and entry.gen > gen:
            yield entry.key, entry.value, entry.gen
            entry = entry.next

    def update_raw_store(self, raw: RawStore, clone: Callable[[Any], Any] = copy.copy,
                         changed: list | None = None) -> int:
        """Bring ``raw`` to this store's generation, undoing its local changes.

        Clones only values written after ``raw.generation`` plus the still-existing keys it
        changed locally; returns the number of clones. Snapshots that lag behind the tracked
        deletions are rebuilt in full (returning ``len(self)``). When ``changed`` is given,
        every key whose entry in ``raw`` was replaced, added or removed is appended to it (in a
        deterministic order, possibly more than once), so structures derived from the snapshot
        (the node table) can follow at the same cost.
        """
        if raw.generation > self._generation:
            raise ValueError(
                f"RawStore is at generation {raw.generation}, ahead of this ListStore "
                f"({self._generation}); it was updated from a different store")
        data = raw.data
        if raw.generation < self._oldest_tracked:
            if changed is not None:
                changed.extend(data)
                changed.extend(self._map)
            data.clear()
            for key, value in self.items():
                data[key] = clone(value)
            clones = self._live
        else:
            clones = 0
            since = raw.generation
            for key, value, _ in self._walk_newer_than(since):
                if changed is not None:
                    changed.append(key)
                if value is TOMBSTONE:
                    data.pop(key, None)
                else:
                    data[key] = clone(value)
                    clones += 1
            if changed is not None:
                changed.extend(raw.local_keys)
            for key in raw.local_keys:
                entry = self._map.get(key)
                if entry is None or entry.value is TOMBSTONE:
                    data.pop(key, None)
                elif entry.gen <= since:  # newer entries were re-cloned by the walk
                    data[key] = clone(entry.value)
                    clones += 1
        raw.generation = self._generation
        raw.local_keys.clear()
        return clones


def full_copy(store: ListStore, clone: Callable[[Any], Any] = copy.copy) -> RawStore:
    """The unoptimised baseline for benchmarks: clone every live value into a new snapshot."""
    raw = RawStore()
    for key, value in store.items():
        raw.data[key] = clone(value)
    raw.generation = store.generation
    return raw
