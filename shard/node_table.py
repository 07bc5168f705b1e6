"""Nodes in dense rows with numpy columns, kept in step with the snapshot.

Rows live in a list with a name->row map; deleting a node moves the last row into the hole,
so add, update and delete are O(1) and nothing is ever rebuilt. After some churn the row
order is effectively random, so any window of rows is a fair sample of zones and shapes: a
search may start at a random row and stop early without favouring one zone.

The numpy columns (allocatable, requested, free, taint bitmask, unschedulable flag,
generation, and label columns created on first use) are in the same row order and are
rewritten only for rows that change, so vectorised filters cost one numpy pass. The resource
columns are as wide as the process's resource table (common.model.resources): they widen when an
extended resource takes a new slot, and a slot given back is reused, column and all, by the
next new resource. Sums over a node's pods that pass int64 (each pod's own request fits) are
held at the int64 maximum: the node is full either way.
"""
from __future__ import annotations

import zlib

import numpy as np

from common.model.resources import BASE_WIDTH, INT64_MAX, RESOURCES, padded
from common.scheduling.predicates import untolerated_taint
from common.scheduling.term_groups import TermIndex

OVERFLOW_BIT = np.uint64(1 << 63)
MAX_TAINT_BITS = 63


def gather(column: np.ndarray, rows) -> np.ndarray:
    """column[rows] for a slice of rows (a view) or an index array. ndarray.take is about three
    times cheaper than fancy indexing on the hundred-row arrays of a cycle, where the cost of
    numpy calls, not the arithmetic, is what a cycle spends its time on."""
    return column[rows] if isinstance(rows, slice) else column.take(rows, 0)


def column_index(cols) -> slice | np.ndarray:
    """An index for columns `cols`: a slice (a view, no copy) when they are consecutive."""
    cols = [int(c) for c in cols]
    if cols and cols == list(range(cols[0], cols[0] + len(cols))):
        return slice(cols[0], cols[0] + len(cols))
    return np.array(cols, dtype=np.int64)


class TaintBits:
    """Interns (key, value, effect) of taints with the given effects into bit positions.

    Taints past the 63rd distinct one share the overflow bit, which marks rows whose taints
    must be checked node by node.
    """

    def __init__(self, effects: tuple):
        self.effects = effects
        self.bit_of: dict[tuple, int] = {}
        self.taints: list = []
        #: Some row was given the overflow bit (until then, no row needs a node-by-node look).
        self.overflowed = False

    def mask(self, taints) -> int:
        m = 0
        for t in taints:
            if t.effect not in self.effects:
                continue
            k = (t.key, t.value, t.effect)
            bit = self.bit_of.get(k)
            if bit is None:
                if len(self.taints) >= MAX_TAINT_BITS:
                    m |= 1 << 63
                    self.overflowed = True
                    continue
                bit = self.bit_of[k] = len(self.taints)
                self.taints.append(t)
            m |= 1 << bit
        return m

    def tolerated_mask(self, tolerations) -> int:
        """Bits of the known taints that `tolerations` tolerate (never the overflow bit)."""
        m = 0
        for bit, t in enumerate(self.taints):
            for tol in tolerations:
                if tol.tolerates(t):
                    m |= 1 << bit
                    break
        return m


class NodeTable:
    def __init__(self, capacity: int = 1024):
        self.names: list[str] = []
        self.infos: list = []
        self.row_of: dict[str, int] = {}
        self.taint_bits = TaintBits(("NoSchedule", "NoExecute"))
        self.prefer_bits = TaintBits(("PreferNoSchedule",))
        self.image_nodes: dict[str, int] = {}  # image name -> number of nodes that have it
        #: The (anti-)affinity terms of the rows' pods, grouped (InterPodAffinity reads them
        #: instead of walking every pod with terms); `_indexed` holds, per node, the pods
        #: whose terms are in it, so a row write adds and removes only what changed.
        self.terms = TermIndex()
        self._indexed: dict[str, dict] = {}
        self._cap = 0
        #: Resource columns (slots of common.model.resources) in alloc, requested, free, releasable.
        self.width = BASE_WIDTH
        self.alloc = self.requested = self.free = self.nonzero = None
        #: cpu and memory allocatable again, contiguous: what the resource scores read for
        #: every scored row (a gather of two columns out of `alloc` is a strided copy, and
        #: arithmetic on its strided view several times slower on a cycle's hundred rows).
        self.base_alloc = None
        #: How many rows have no cpu or no memory allocatable: while none has, the scores
        #: need not look for them (each such look was a numpy reduction per plugin a cycle).
        self.base_gaps = 0
        self.taints = self.prefer_taints = self.unschedulable = self.generation = None
        #: crc32 of each row's node name: stable across processes, so every shard agrees on
        #: the slice a node belongs to (conflict-aware packing, shard/scheduler.py).
        self.name_hash = None
        self._labels: dict[str, tuple[np.ndarray, dict]] = {}
        self._counts: dict = {}  # cache key -> RowCache (pod counts, releasable resources)
        self._sparse: dict = {}  # cache key -> SparseCounts (pod counts pushed out of _counts)
        self._sparse_entries = 0
        self._grow(max(capacity, 16))

    def __len__(self) -> int:
        return len(self.names)

    def _grow(self, cap: int) -> None:
        def grown(old, shape, dtype):
            new = np.zeros(shape, dtype=dtype)
            if old is not None:
                new[: len(old)] = old
            return new

        self.alloc = grown(self.alloc, (cap, self.width), np.int64)
        self.requested = grown(self.requested, (cap, self.width), np.int64)
        self.free = grown(self.free, (cap, self.width), np.int64)
        self.nonzero = grown(self.nonzero, (cap, 2), np.int64)
        self.base_alloc = grown(self.base_alloc, (cap, 2), np.int64)
        self.taints = grown(self.taints, cap, np.uint64)
        self.prefer_taints = grown(self.prefer_taints, cap, np.uint64)
        self.unschedulable = grown(self.unschedulable, cap, np.bool_)
        self.generation = grown(self.generation, cap, np.int64)
        self.name_hash = grown(self.name_hash, cap, np.int64)
        for key, (codes, values) in list(self._labels.items()):
            self._labels[key] = (grown(codes, cap, np.int32), values)
        for pc in self._counts.values():
            pc.values = grown(pc.values, (cap,) + pc.values.shape[1:], np.int64)
            pc.counted_at = grown(pc.counted_at, cap, np.int64)
        self._cap = cap

    def fit_width(self, width: int | None = None) -> None:
        """Widen the resource columns to `width` (default: the resource table's), so that
        every slot a vector or a plugin may name is a column. Rare: once per new slot."""
        width = RESOURCES.width if width is None else width
        if width <= self.width:
            return
        for attr in ("alloc", "requested", "free"):
            old = getattr(self, attr)
            new = np.zeros((self._cap, width), dtype=np.int64)
            new[:, : self.width] = old
            setattr(self, attr, new)
        self._counts = {k: pc for k, pc in self._counts.items() if pc.values.ndim == 1}  # releasable
        self.width = width

    def _row(self, v) -> tuple:
        """A vector as a row of the resource columns: padded, held within int64."""
        if len(v) > self.width:
            self.fit_width(len(v))
        v = padded(v, self.width)
        if max(v) > INT64_MAX:
            v = tuple(min(x, INT64_MAX) for x in v)
        return v

    def upsert(self, info) -> int:
        """Add or rewrite the row of `info` (a NodeInfo with a node); returns its row.

        Most changes are pods coming and going, so the node's own columns (allocatable,
        taints, labels, images) are rewritten only when the Node object itself changed.
        """
        row = self.row_of.get(info.name)
        new = row is None
        if new:
            row = len(self.names)
            if row == self._cap:
                self._grow(self._cap * 2)
            self.names.append(info.name)
            self.infos.append(info)
            self.row_of[info.name] = row
            self.name_hash[row] = zlib.crc32(info.name.encode())
            node_changed = True
        else:
            old = self.infos[row].node
            node_changed = old is not info.node
            if node_changed:
                self._count_images(old, -1)
            self.infos[row] = info
        if node_changed:
            self._count_images(info.node, 1)
            self._write_node(row, info.node, new)
        self._write_pods(row, info)
        return row

    def remove(self, name: str) -> None:
        """Swap-delete: the last row moves into the hole."""
        row = self.row_of.pop(name)
        self._count_images(self.infos[row].node, -1)
        self.base_gaps -= self._has_base_gap(row)
        self._index_terms(name, {})
        last = len(self.names) - 1
        if row != last:
            moved = self.names[last]
            self.names[row] = moved
            self.infos[row] = self.infos[last]
            self.row_of[moved] = row
            for col in (self.alloc, self.requested, self.free, self.nonzero, self.base_alloc, self.taints,
                        self.prefer_taints, self.unschedulable, self.generation, self.name_hash):
                col[row] = col[last]
            for codes, _ in self._labels.values():
                codes[row] = codes[last]
            for pc in self._counts.values():
                pc.values[row] = pc.values[last]
                pc.counted_at[row] = pc.counted_at[last]
        self.names.pop()
        self.infos.pop()

    def reorder(self, names: list[str]) -> None:
        """Put the rows in the order of `names` (every current node, once each).

        Only the zone-interleaved variant (kube-scheduler's ordering, for benchmarks and
        ablations) needs this: after any add or delete it moves every row.
        """
        order = np.fromiter((self.row_of[n] for n in names), dtype=np.int64, count=len(names))
        n = len(order)
        for attr in ("alloc", "requested", "free", "nonzero", "base_alloc", "taints", "prefer_taints",
                     "unschedulable", "generation", "name_hash"):
            col = getattr(self, attr)
            col[:n] = col[order]
        for codes, _ in self._labels.values():
            codes[:n] = codes[order]
        for pc in self._counts.values():
            pc.values[:n] = pc.values[order]
            pc.counted_at[:n] = pc.counted_at[order]
        self.infos = [self.infos[r] for r in order]
        self.names = list(names)
        self.row_of = {name: row for row, name in enumerate(names)}

    def _write_node(self, row: int, node, new: bool) -> None:
        if not new:
            self.base_gaps -= self._has_base_gap(row)
        self.alloc[row] = self._row(node.allocatable)
        self.base_alloc[row] = self.alloc[row, :2]
        self.base_gaps += self._has_base_gap(row)
        self.taints[row] = self.taint_bits.mask(node.taints)
        self.prefer_taints[row] = self.prefer_bits.mask(node.taints)
        self.unschedulable[row] = node.unschedulable
        for key, (codes, values) in self._labels.items():
            codes[row] = _code(values, node.labels.get(key))

    def _has_base_gap(self, row: int) -> bool:
        cpu, memory = self.base_alloc[row]
        return cpu <= 0 or memory <= 0

    def _write_pods(self, row: int, info) -> None:
        """The row's pod columns. Free is allocatable less requested, both as the row holds
        them (held within int64), in one numpy call: padding the node's allocatable again and
        subtracting in Python was a third of the cost of a row write, paid by every cycle
        (the assumed pod's node, and the other shards' binds, change rows)."""
        self.requested[row] = self._row(info.requested)
        np.subtract(self.alloc[row], self.requested[row], out=self.free[row])
        nonzero = info.nonzero
        self.nonzero[row] = nonzero if max(nonzero) <= INT64_MAX else [min(x, INT64_MAX) for x in nonzero]
        self.generation[row] = info.generation
        if info.affinity_pods or info.name in self._indexed:
            self._index_terms(info.name, info.affinity_pods)

    def _index_terms(self, name: str, pods: dict) -> None:
        """Bring the term index to `pods` (key -> pod with terms) on node `name`."""
        old = self._indexed.pop(name, None) or {}
        terms = self.terms
        for key, pod in old.items():
            if pods.get(key) is not pod:
                terms.remove_pod(pod, name)
        for key, pod in pods.items():
            if old.get(key) is not pod:
                terms.add_pod(pod, name)
        if pods:
            self._indexed[name] = dict(pods)

    def _count_images(self, node, delta: int) -> None:
        for image in node.images:
            left = self.image_nodes.get(image, 0) + delta
            if left:
                self.image_nodes[image] = left
            else:
                del self.image_nodes[image]

    def tolerating(self, tolerations, tolerated: np.uint64, rows) -> np.ndarray:
        """Per row of `rows` (a slice or index array), whether `tolerations` tolerate every
        NoSchedule and NoExecute taint of the node; `tolerated` is
        taint_bits.tolerated_mask(tolerations), computed once per pod by the caller. One
        pass over the taint bits: only rows whose taints overflowed the 63 bits are looked
        at node by node, so a pod's cost does not grow with the tainted nodes."""
        bits = gather(self.taints, rows)
        ok = (bits & ~tolerated) == 0
        if not self.taint_bits.overflowed:
            return ok
        overflow = np.flatnonzero((bits & OVERFLOW_BIT) != 0)
        for i in overflow:
            row = rows.start + i if isinstance(rows, slice) else rows[i]
            ok[i] = untolerated_taint(self.infos[row].node.taints, tolerations) is None
        return ok

    def label_column(self, key: str) -> tuple[np.ndarray, dict]:
        """int32 codes of label `key` per row (0 = absent) and the value->code map.

        Built on first use with one pass over the rows, then maintained by every row write.
        """
        entry = self._labels.get(key)
        if entry is None:
            values: dict[str, int] = {}
            codes = np.zeros(self._cap, dtype=np.int32)
            for row, info in enumerate(self.infos):
                codes[row] = _code(values, info.node.labels.get(key))
            entry = self._labels[key] = (codes, values)
        return entry

    def pod_counts(self, key, predicate) -> np.ndarray:
        """Per row, how many of the node's pods satisfy `predicate` (a view over the rows).

        Cached under `key` (a hashable description of the predicate, e.g. namespaces plus
        label selector), so a workload's spread or affinity costs one pass the first time and
        then only what changed. The MAX_CACHED_SELECTORS most recently used keys hold a dense
        column; a key pushed out keeps its nonzero counts by node name (SparseCounts, within
        MAX_SPARSE_ENTRIES over all keys), so pods of many workloads in turn do not each pay
        a pass over every pod of the cluster: coming back costs the nodes changed since.
        """
        def count(info):
            return sum(1 for p in info.pods.values() if predicate(p))

        if key not in self._counts:
            sparse = self._sparse.pop(key, None)
            if sparse is not None:
                self._sparse_entries -= sparse.size
                self._from_sparse(key, sparse, count)
        return self._per_row(key, (), count)

    def _from_sparse(self, key, sparse: "SparseCounts", count) -> None:
        """Make `key` a dense column again from its sparse counts, brought up to date."""
        n = len(self.names)
        counts = sparse.counts
        infos, names = self.infos, self.names
        for row in np.flatnonzero(self.generation[:n] > sparse.as_of):
            c = count(infos[row])
            if c:
                counts[names[row]] = c
            else:
                counts.pop(names[row], None)
        pc = self._new_row_cache(key, ())
        row_of = self.row_of
        live = [(row_of[name], c) for name, c in counts.items() if name in row_of]
        if live:
            rows, values = zip(*live)
            pc.values[np.array(rows, dtype=np.int64)] = values
        pc.counted_at[:n] = self.generation[:n]

    def _to_sparse(self, key, pc: "RowCache") -> None:
        """Keep the nonzero counts of a dense pod-count column pushed out of the cache. Rows
        counted before their last change are left to be recounted: the counts stand as of the
        generation just below the oldest such row's."""
        n = len(self.names)
        values, counted_at, generation = pc.values[:n], pc.counted_at[:n], self.generation[:n]
        stale = counted_at != generation
        as_of = int(generation[stale].min()) - 1 if stale.any() else int(generation.max(initial=0))
        names = self.names
        rows = np.flatnonzero(values)
        sparse = SparseCounts({names[r]: int(values[r]) for r in rows.tolist()}, as_of)
        self._sparse[key] = sparse
        self._sparse_entries += sparse.size
        while self._sparse_entries > MAX_SPARSE_ENTRIES and self._sparse:
            self._sparse_entries -= self._sparse.pop(next(iter(self._sparse))).size

    def releasable(self, priority: int) -> np.ndarray:
        """Per row, the summed requests of the node's pods below `priority` (rows x slots).

        What preemption could free on each node for a preemptor of that priority: one splay
        prefix query per node the first time, then only for the nodes that changed.
        """
        return self._per_row(("releasable", priority), (self.width,),
                             lambda info: self._row(info.tree.sum_below(priority)))

    def _per_row(self, key, shape: tuple, compute) -> np.ndarray:
        """A column of `compute(NodeInfo)` per row, cached under `key`; rows are recomputed
        only when their generation moved since they were last computed."""
        pc = self._counts.get(key)
        if pc is None:
            pc = self._new_row_cache(key, shape)
        else:
            self._counts[key] = self._counts.pop(key)  # most recently used last
        n = len(self.names)
        stale = np.flatnonzero(pc.counted_at[:n] != self.generation[:n])
        infos = self.infos
        for row in stale:
            pc.values[row] = compute(infos[row])
        pc.counted_at[stale] = self.generation[stale]
        return pc.values[:n]

    def _new_row_cache(self, key, shape: tuple) -> "RowCache":
        if len(self._counts) >= MAX_CACHED_SELECTORS:
            old_key = next(iter(self._counts))
            old = self._counts.pop(old_key)
            if old.values.ndim == 1:  # pod counts (releasable resources are not kept)
                self._to_sparse(old_key, old)
        pc = self._counts[key] = RowCache(self._cap, shape)
        return pc

    def domain_counts(self, key: str, per_row: np.ndarray, eligible: np.ndarray | None = None):
        """Sum `per_row` over the rows of each value of label `key` (topology domains).

        Returns (codes per row, sums per code); code 0 means "no such label" and is not a
        domain. Only `eligible` rows (a bool mask, default all) contribute.
        """
        codes, values = self.label_column(key)
        codes = codes[: len(self.names)]
        c = codes if eligible is None else codes[eligible]
        w = per_row if eligible is None else per_row[eligible]
        sums = np.bincount(c, weights=w, minlength=len(values) + 1).astype(np.int64)
        sums[0] = 0
        return codes, sums

    def check(self) -> None:
        """Assert rows, map and columns agree (tests and debugging)."""
        assert len(self.names) == len(self.infos) == len(self.row_of)
        assert self.base_gaps == sum(self._has_base_gap(row) for row in range(len(self.names)))
        for row, (name, info) in enumerate(zip(self.names, self.infos)):
            assert self.row_of[name] == row and info.name == name
            assert tuple(self.alloc[row]) == self._row(info.node.allocatable)
            assert tuple(self.base_alloc[row]) == tuple(self.alloc[row, :2])
            assert tuple(self.requested[row]) == self._row(info.requested)
            assert tuple(self.nonzero[row]) == tuple(min(x, INT64_MAX) for x in info.nonzero)
            assert (self.free[row] == self.alloc[row] - self.requested[row]).all()
            assert int(self.generation[row]) == info.generation
            assert int(self.name_hash[row]) == zlib.crc32(name.encode())
            assert bool(self.unschedulable[row]) == bool(info.node.unschedulable)
            assert int(self.taints[row]) == self.taint_bits.mask(info.node.taints)
            assert int(self.prefer_taints[row]) == self.prefer_bits.mask(info.node.taints)
            for key, (codes, values) in self._labels.items():
                assert int(codes[row]) == values.get(info.node.labels.get(key), 0)
        fresh = TermIndex()
        for name, info in zip(self.names, self.infos):
            for pod in info.affinity_pods.values():
                fresh.add_pod(pod, name)
        assert {k: g.nodes for k, g in fresh.groups.items()} == {k: g.nodes for k, g in self.terms.groups.items()}


MAX_CACHED_SELECTORS = 64
#: Node entries the sparse pod counts of keys pushed out of the dense cache may hold in all
#: (about 100 bytes each); the least recently pushed out go first.
MAX_SPARSE_ENTRIES = 200_000


class SparseCounts:
    """A pod-count column kept by node name, nonzero counts only, right for every node whose
    generation is not above `as_of`."""

    __slots__ = ("counts", "as_of", "size")

    def __init__(self, counts: dict, as_of: int):
        self.counts = counts
        self.as_of = as_of
        self.size = len(counts) + 1


class RowCache:
    """One cached per-row column and the generation each row was computed at."""

    __slots__ = ("values", "counted_at")

    def __init__(self, cap: int, shape: tuple = ()):
        self.values = np.zeros((cap,) + shape, dtype=np.int64)
        self.counted_at = np.full(cap, -1, dtype=np.int64)


def _code(values: dict, value) -> int:
    if value is None:
        return 0
    code = values.get(value)
    if code is None:
        code = values[value] = len(values) + 1
    return code
