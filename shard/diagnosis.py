"""Why a pod fits nowhere: per-plugin rejections gathered during the filter scan.

Produces kube-scheduler's message ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s)
had untolerated taint {dedicated: gpu}.") and tells preemption which nodes failed only for
reasons that evicting pods could fix.
"""
from __future__ import annotations

from collections import Counter

import numpy as np


class Diagnosis:
    def __init__(self, total_nodes: int):
        self.total_nodes = total_nodes
        self.vec_failures: list[tuple] = []        # (plugin, absolute rows it rejected)
        self.node_failures: dict[int, tuple] = {}  # row -> (plugin, Status)
        self.pre_filter_status = None              # a PreFilter rejection applies to all nodes
        self._narrowed: tuple | None = None        # (plugin, rows) a PreFilterResult kept
        self._narrowed_by: list[str] = []          # every plugin whose PreFilterResult narrowed

    def narrow(self, plugin, kept: np.ndarray) -> None:
        """A PreFilterResult limited the scan to `kept` rows; the rest count as its rejections.

        The rejected rows are only worked out if a message or preemption needs them: a
        DaemonSet pod pinned to one node must not pay a pass over every row.
        """
        self._narrowed = (plugin, kept)
        if plugin.name not in self._narrowed_by:
            self._narrowed_by.append(plugin.name)

    @property
    def excluded(self) -> tuple | None:
        """(plugin, rows) left out by a PreFilterResult, or None."""
        if self._narrowed is None:
            return None
        plugin, kept = self._narrowed
        left_out = np.ones(self.total_nodes, dtype=bool)
        left_out[kept] = False
        return plugin, np.flatnonzero(left_out)

    def reasons(self, state, pod, table) -> Counter:
        counts = Counter()
        if self.pre_filter_status is not None:
            for r in self.pre_filter_status.reasons:
                counts[r] += self.total_nodes
            return counts
        excluded = self.excluded
        if excluded is not None and len(excluded[1]):
            # kube-scheduler gives nodes left out by PreFilter results one reason naming the
            # plugins (Go's %v of a sorted list): "node(s) didn't satisfy plugin(s) [NodeName]".
            counts[f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(self._narrowed_by))}]"] += len(excluded[1])
        for plugin, rows in self.vec_failures:
            if len(rows):
                counts.update(_reasons_of(plugin, state, pod, table, rows))
        for _, status in self.node_failures.values():
            for r in status.reasons:
                counts[r] += 1
        return counts

    def rejectors(self) -> frozenset[str]:
        """The plugins that turned down at least one node (shard/queueing_hints.py); a node
        refused for the nominated pods it must leave room for counts under its status's
        plugin ("" when unknown, which wakes the pod on any event)."""
        names = set(self._narrowed_by)
        if self.pre_filter_status is not None:
            names.add(self.pre_filter_status.plugin)
        names.update(p.name for p, rows in self.vec_failures if len(rows))
        names.update(p.name if p is not None else st.plugin for p, st in self.node_failures.values())
        return frozenset(names)

    def message(self, state, pod, table) -> str:
        counts = self.reasons(state, pod, table)
        parts = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"0/{self.total_nodes} nodes are available: {', '.join(parts)}."

    def unresolvable_rows(self) -> np.ndarray:
        """Rows where preemption cannot help (the plugin that rejected them says so)."""
        out = []
        excluded = self.excluded
        if excluded is not None:
            out.append(excluded[1])
        for plugin, rows in self.vec_failures:
            if not plugin.resolvable_by_preemption:
                out.append(np.asarray(rows))
        bad = [row for row, (_, st) in self.node_failures.items() if st.code == "UnschedulableAndUnresolvable"]
        if bad:
            out.append(np.array(bad, dtype=np.int64))
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _reasons_of(plugin, state, pod, table, rows) -> Counter:
    if hasattr(plugin, "reasons_vec"):
        return plugin.reasons_vec(state, pod, table, np.asarray(rows))
    counts = Counter()
    for row in rows:
        st = plugin.filter(state, pod, table.infos[row])
        for r in (st.reasons if st is not None else ()):
            counts[r] += 1
    return counts
