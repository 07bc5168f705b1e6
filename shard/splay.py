"""A splay tree of preemptible pods with subtree resource sums, for preemption pruning.

Each node of the cluster keeps its preemptible pods ordered by (priority, start time, uid),
the order in which the victim search considers them. Every tree node also holds the sum of
the resource vectors and the number of pods in its subtree, so "what could a preemptor of
priority p free here?" is one prefix query instead of a scan of the node's pods; nodes where
free + releasable < request are skipped without running the victim search.

A splay tree keeps those queries amortised O(log n) with no balancing metadata, and the
repeated queries at the same few priorities stay near the root. Splaying is bottom-up with
parent pointers and no recursion, so degenerate insertion orders (pods arriving in start-time
order) cannot hit Python's recursion limit.
"""
from __future__ import annotations

from common.model.resources import ZERO, vadd

Key = tuple[int, float, str]
Vector = tuple[int, ...]


class _Node:
    __slots__ = ("key", "vec", "sum", "size", "low", "left", "right", "parent")

    def __init__(self, key: Key, vec: Vector) -> None:
        self.key = key
        self.vec = vec
        self.sum = vec
        self.size = 1
        #: Priority of the subtree's first entry: lets a prefix query stop without
        #: walking into a subtree that holds nothing below its bound.
        self.low = key[0]
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None


def _pull(node: _Node) -> None:
    """Recompute a node's subtree aggregates from its children (which must be current)."""
    total = node.vec
    size = 1
    child = node.left
    if child is not None:
        total = vadd(total, child.sum)
        size += child.size
        node.low = child.low
    else:
        node.low = node.key[0]
    child = node.right
    if child is not None:
        total = vadd(total, child.sum)
        size += child.size
    node.sum = total
    node.size = size


class PrioritySplayTree:
    """Entries keyed by unique (priority, start_time, uid), each with a resource vector
    (common.model.resources: vectors of different lengths add up as if padded with zeros)."""

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root: _Node | None = None

    def __len__(self) -> int:
        return 0 if self._root is None else self._root.size

    def _rotate(self, x: _Node) -> None:
        """Lift ``x`` above its parent; only the parent's aggregates are refreshed here.

        Splaying refreshes ``x`` once it stops rising, so its aggregates may be stale while
        it is still on the way up (nothing reads them until then).
        """
        p = x.parent
        assert p is not None
        g = p.parent
        if p.left is x:
            moved = x.right
            p.left = moved
            x.right = p
        else:
            moved = x.left
            p.right = moved
            x.left = p
        if moved is not None:
            moved.parent = p
        p.parent = x
        x.parent = g
        if g is None:
            self._root = x
        elif g.left is p:
            g.left = x
        else:
            g.right = x
        _pull(p)

    def _splay(self, x: _Node) -> None:
        """Move ``x`` to the top of the tree it is in (the whole tree unless detached)."""
        while True:
            p = x.parent
            if p is None:
                break
            g = p.parent
            if g is not None:
                # zig-zig rotates the parent first; zig-zag rotates x twice.
                self._rotate(p if (g.left is p) == (p.left is x) else x)
            self._rotate(x)
        _pull(x)

    def _descend(self, key: Key) -> tuple[_Node | None, _Node | None]:
        """(node holding ``key`` or None, last node on the search path); nothing splayed."""
        node = self._root
        last = None
        while node is not None:
            last = node
            if key < node.key:
                node = node.left
            elif node.key < key:
                node = node.right
            else:
                break
        return node, last

    def _find(self, key: Key) -> _Node | None:
        """Splay the node holding ``key`` (or the last one on its search path) to the root."""
        node, last = self._descend(key)
        if last is not None:
            self._splay(last)
        return node

    def __contains__(self, key: object) -> bool:
        return self._find(key) is not None  # type: ignore[arg-type]

    def insert(self, key: Key, vector: Vector) -> None:
        """Add an entry; KeyError if the key is already present."""
        found, parent = self._descend(key)
        if found is not None:
            self._splay(found)
            raise KeyError(key)
        new = _Node(key, tuple(vector))
        if parent is None:
            self._root = new
            return
        new.parent = parent
        if key < parent.key:
            parent.left = new
        else:
            parent.right = new
        # Every stale ancestor is on the splayed path, so splaying refreshes them all.
        self._splay(new)

    def delete(self, key: Key) -> Vector:
        """Remove an entry and return its vector; KeyError if missing."""
        node = self._find(key)
        if node is None:
            raise KeyError(key)
        left, right = node.left, node.right
        if left is None:
            self._root = right
            if right is not None:
                right.parent = None
            return node.vec
        left.parent = None
        top = left
        while top.right is not None:
            top = top.right
        self._splay(top)  # the maximum of the left part, so it has no right child
        top.right = right
        if right is not None:
            right.parent = top
        _pull(top)
        self._root = top
        return node.vec

    def _below(self, priority: int) -> _Node | None:
        """Splay the last entry with priority below ``priority`` to the root and return it.

        With that entry at the root, everything below the bound is its left subtree plus
        itself. The descent stops as soon as the remaining subtree starts at or above the
        bound, so repeating a query at one priority (every node asked about the same
        preemptor) finds the entry at the root in O(1). When no entry is below, the last
        node visited is splayed instead, which keeps the amortised bound.
        """
        node = self._root
        pred = last = None
        while node is not None:
            last = node
            if node.key[0] < priority:
                pred = node
                right = node.right
                node = right if right is not None and right.low < priority else None
            else:
                node = node.left
        if last is None:
            return None
        self._splay(pred if pred is not None else last)
        return pred

    def sum_below(self, priority: int) -> Vector:
        """Sum of the vectors of all entries with priority strictly below ``priority``."""
        pred = self._below(priority)
        root = self._root
        if root is None:
            return ZERO
        left = root.left
        if pred is None:
            return ZERO if left is None else left.sum
        return root.vec if left is None else vadd(left.sum, root.vec)

    def count_below(self, priority: int) -> int:
        """Number of entries with priority strictly below ``priority``."""
        pred = self._below(priority)
        root = self._root
        if root is None:
            return 0
        count = 0 if root.left is None else root.left.size
        return count + (pred is not None)

    def total(self) -> Vector:
        """Sum of all vectors."""
        return ZERO if self._root is None else self._root.sum

    def items(self) -> list[tuple[Key, Vector]]:
        """All (key, vector) pairs in key order; a list, so callers may mutate the tree."""
        out: list[tuple[Key, Vector]] = []
        _in_order(self._root, out)
        return out

    def items_below(self, priority: int) -> list[tuple[Key, Vector]]:
        """(key, vector) pairs with priority strictly below ``priority``, in key order."""
        pred = self._below(priority)
        out: list[tuple[Key, Vector]] = []
        if self._root is not None:
            _in_order(self._root.left, out)
            if pred is not None:
                out.append((pred.key, pred.vec))
        return out


def _in_order(node: _Node | None, out: list[tuple[Key, Vector]]) -> None:
    """Append a subtree's entries in key order, with an explicit stack (no recursion)."""
    stack: list[_Node] = []
    while stack or node is not None:
        while node is not None:
            stack.append(node)
            node = node.left
        node = stack.pop()
        out.append((node.key, node.vec))
        node = node.right
