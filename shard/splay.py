"""A splay tree of a node's pods by priority with subtree resource sums, for preemption pruning.

Preemption asks every node "what could a preemptor of priority p free here?": the summed
requests of the node's pods below p. Each node keeps one tree entry per distinct priority
of its pods (a cluster has a handful: four in the bench's mix), holding how many pods have
it and their summed resource vector; every tree node also holds the sums and counts of its
subtree, so the question is one prefix query instead of a scan of the node's pods, and
nodes where free + releasable < request are skipped without running the victim search.
The victims themselves come from the node's pods (the victim search orders them); the
tree costs a node a few entries, whatever its number of pods, and a pod nothing.

A splay tree keeps those queries amortised O(log n) with no balancing metadata, and the
repeated queries at the same few priorities stay near the root. Splaying is bottom-up with
parent pointers and no recursion, so degenerate insertion orders cannot hit Python's
recursion limit.
"""
from __future__ import annotations

from common.model.resources import ZERO, vadd, vsub

Vector = tuple[int, ...]


class _Node:
    __slots__ = ("key", "count", "vec", "sum", "size", "low", "left", "right", "parent")

    def __init__(self, key: int, vec: Vector, count: int = 1) -> None:
        self.key = key
        self.count = count  # pods at this priority
        self.vec = vec      # their summed requests
        self.sum = vec      # ... and those of the whole subtree
        self.size = count   # pods in the subtree
        #: Priority of the subtree's first entry: lets a prefix query stop without
        #: walking into a subtree that holds nothing below its bound.
        self.low = key
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None


def _pull(node: _Node) -> None:
    """Recompute a node's subtree aggregates from its children (which must be current)."""
    total = node.vec
    size = node.count
    child = node.left
    if child is not None:
        total = vadd(total, child.sum)
        size += child.size
        node.low = child.low
    else:
        node.low = node.key
    child = node.right
    if child is not None:
        total = vadd(total, child.sum)
        size += child.size
    node.sum = total
    node.size = size


class PrioritySplayTree:
    """Pods counted by priority, each with a resource vector (common.model.resources:
    vectors of different lengths add up as if padded with zeros)."""

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root: _Node | None = None

    def __len__(self) -> int:
        """The number of pods."""
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

    def _descend(self, key: int) -> tuple[_Node | None, _Node | None]:
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

    def __contains__(self, priority: object) -> bool:
        """Whether some pod has this priority."""
        node, last = self._descend(priority)  # type: ignore[arg-type]
        if last is not None:
            self._splay(last)
        return node is not None

    def add(self, priority: int, vector: Vector, count: int = 1) -> None:
        """Count one more pod of `priority` requesting `vector` (or `count` more pods of it
        requesting `vector` together: a node's pods counted at once)."""
        found, parent = self._descend(priority)
        if found is not None:
            found.count += count
            found.vec = vadd(found.vec, vector)
            self._splay(found)  # refreshes it and every ancestor on the way up
            return
        new = _Node(priority, tuple(vector), count)
        if parent is None:
            self._root = new
            return
        new.parent = parent
        if priority < parent.key:
            parent.left = new
        else:
            parent.right = new
        # Every stale ancestor is on the splayed path, so splaying refreshes them all.
        self._splay(new)

    def remove(self, priority: int, vector: Vector) -> None:
        """Count one pod of `priority` requesting `vector` no more; KeyError if no pod has
        that priority."""
        node, last = self._descend(priority)
        if node is None:
            if last is not None:
                self._splay(last)
            raise KeyError(priority)
        if node.count > 1:
            node.count -= 1
            node.vec = vsub(node.vec, vector)
            self._splay(node)
            return
        self._splay(node)
        left, right = node.left, node.right
        if left is None:
            self._root = right
            if right is not None:
                right.parent = None
            return
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
            if node.key < priority:
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
        """Sum of the requests of all pods with priority strictly below ``priority``."""
        pred = self._below(priority)
        root = self._root
        if root is None:
            return ZERO
        left = root.left
        if pred is None:
            return ZERO if left is None else left.sum
        return root.vec if left is None else vadd(left.sum, root.vec)

    def count_below(self, priority: int) -> int:
        """Number of pods with priority strictly below ``priority``."""
        pred = self._below(priority)
        root = self._root
        if root is None:
            return 0
        count = 0 if root.left is None else root.left.size
        return count + (pred.count if pred is not None else 0)

    def total(self) -> Vector:
        """Sum of all pods' requests."""
        return ZERO if self._root is None else self._root.sum

    def items(self) -> list[tuple[int, int, Vector]]:
        """(priority, pods, summed requests) per distinct priority, lowest first."""
        out: list[tuple[int, int, Vector]] = []
        stack: list[_Node] = []
        node = self._root
        while stack or node is not None:  # in order, with an explicit stack (no recursion)
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            out.append((node.key, node.count, node.vec))
            node = node.right
        return out
