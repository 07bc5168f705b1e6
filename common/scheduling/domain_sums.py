"""Per-domain totals the cross-node checks read, kept up to date as pods and nodes change.

A topology spread or inter-pod affinity check asks, for one selector and one topology key:
how many matching pods sit in the node's domain, and (spread) the fewest in any eligible
domain. Summing the selector's per-node counts for every check costs one step per node
holding a matching pod: for a Deployment of 27,000 replicas on 20,000 nodes, 20,000 steps
and as many eligibility tests per decision, and per pod in `verify`. Here the sums are built
once, then moved by each pod counted or uncounted (one eligibility test of its node) and by
each node whose labels or taints change, so a check reads them in a few steps.

`DomainSums` also keeps how many domains hold each total (`levels`), so the least total over
the eligible domains costs one step per distinct total, not per domain: with hostname as the
topology key there are as many domains as nodes, but few distinct totals.

Both classes are fed by their holder (common.scheduling.constraints.ConstraintIndex) and
are not thread-safe.
"""
from __future__ import annotations

from collections import Counter


def domain_of(node, topology_key: str, eligible) -> str | None:
    """The node's value of `topology_key` if the node counts (it exists, carries the key and
    `eligible(node)` admits it, or `eligible` is None); None otherwise."""
    if node is None:
        return None
    value = node.labels.get(topology_key)
    if value is None or (eligible is not None and not eligible(node)):
        return None
    return value


class EligibleDomains:
    """The values of one topology key among the nodes one eligibility admits, with how many
    such nodes carry each (a domain is gone when its last node goes)."""

    __slots__ = ("topology_key", "eligible", "nodes")

    def __init__(self, topology_key: str, eligible, nodes):
        self.topology_key = topology_key
        self.eligible = eligible
        #: domain value -> eligible nodes in it
        self.nodes: Counter = Counter()
        for _, info in nodes.items():
            value = domain_of(info.node, topology_key, eligible)
            if value is not None:
                self.nodes[value] += 1

    def __len__(self) -> int:
        return len(self.nodes)

    def node_changed(self, old, new) -> None:
        was = domain_of(old, self.topology_key, self.eligible)
        now = domain_of(new, self.topology_key, self.eligible)
        if was == now:
            return
        if was is not None:
            left = self.nodes[was] - 1
            if left:
                self.nodes[was] = left
            else:
                del self.nodes[was]
        if now is not None:
            self.nodes[now] += 1


class DomainSums:
    """Matching pods per domain of `topology_key`, over the nodes `eligible` admits (None:
    every node carrying the key), for one selector whose per-node counts are `counts`."""

    __slots__ = ("topology_key", "eligible", "counts", "sums", "levels", "total")

    def __init__(self, topology_key: str, eligible, counts: Counter, nodes):
        self.topology_key = topology_key
        self.eligible = eligible
        #: the selector's node name -> matching pods (ConstraintIndex.counts; read only here)
        self.counts = counts
        self.sums: dict[str, int] = {}   # domain value -> matching pods (> 0 only)
        self.levels: Counter = Counter()  # total -> domains holding exactly that many (> 0)
        self.total = 0
        for name, n in counts.items():
            info = nodes.get(name)
            value = domain_of(info.node if info is not None else None, topology_key, eligible)
            if value is not None:
                self._move(value, n)

    def _move(self, value: str, delta: int) -> None:
        old = self.sums.get(value, 0)
        new = old + delta
        if old:
            left = self.levels[old] - 1
            if left:
                self.levels[old] = left
            else:
                del self.levels[old]
        if new:
            self.sums[value] = new
            self.levels[new] += 1
        else:
            del self.sums[value]
        self.total += delta

    # --- fed by the holder ----------------------------------------------------------------

    def pods_changed(self, node, delta: int) -> None:
        """`delta` matching pods were counted on (or, negative, taken off) `node`."""
        value = domain_of(node, self.topology_key, self.eligible)
        if value is not None:
            self._move(value, delta)

    def node_changed(self, old, new, name: str) -> None:
        """Node `name` was replaced (old or new None: added or removed); its pods move with it."""
        n = self.counts.get(name, 0)
        if not n:
            return
        was = domain_of(old, self.topology_key, self.eligible)
        now = domain_of(new, self.topology_key, self.eligible)
        if was == now:
            return
        if was is not None:
            self._move(was, -n)
        if now is not None:
            self._move(now, n)

    # --- reading --------------------------------------------------------------------------

    def adjustments(self, minus: Counter, nodes) -> dict[str, int]:
        """domain value -> how much lower its sum is with `minus` (node name -> matching pods
        left out, e.g. victims) taken off."""
        out: dict[str, int] = {}
        for name, n in minus.items():
            info = nodes.get(name)
            value = domain_of(info.node if info is not None else None, self.topology_key, self.eligible)
            if value is not None and n:
                out[value] = out.get(value, 0) - n
        return out

    def count(self, value: str, adjust: dict | None = None) -> int:
        return self.sums.get(value, 0) + (adjust.get(value, 0) if adjust else 0)

    def lowest(self, domains: int, adjust: dict | None = None) -> int:
        """The least sum over the `domains` eligible domains (those without a matching pod
        hold 0), with `adjust` (from `adjustments`: it only lowers sums) applied."""
        changed = [self.sums[v] + d for v, d in (adjust or {}).items() if d]
        if len(self.sums) < domains or not all(changed):
            return 0
        # every domain holds a matching pod; a lowered one is below its old level, so the
        # least level (whichever domain holds it) and the lowered sums bound the minimum
        return min([*self.levels, *changed], default=0)
