"""Why a pod fits nowhere: per-plugin rejections gathered during the filter scan.

Produces kube-scheduler's message ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s)
had untolerated taint(s).") and tells preemption which nodes failed only for
reasons that evicting pods could fix.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .framework import UNRESOLVABLE


def fit_message(total_nodes: int, counts: Counter) -> str:
    """kube's FitError text over a histogram of reasons: "0/N nodes are available: " and
    "count reason" items sorted as strings (so "10 ..." comes before "2 ...")."""
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{total_nodes} nodes are available: {', '.join(parts)}."


class Diagnosis:
    def __init__(self, total_nodes: int):
        self.total_nodes = total_nodes
        self.vec_failures: list[tuple] = []        # (plugin, absolute rows it rejected)
        self.node_failures: dict[int, tuple] = {}  # row -> (plugin, Status)
        self.pre_filter_status = None              # a PreFilter rejection applies to all nodes
        self.kept: np.ndarray | None = None        # rows every PreFilterResult kept (None: all)
        self._kube_kept: np.ndarray | None = None  # ... those of kube's own PreFilterResults
        self._narrowed_by: list[str] = []          # plugins of those kube results
        self._hinted_by: list = []                 # plugins whose results were only hints

    def narrow(self, plugin, kept: np.ndarray, hint: bool = False) -> None:
        """A PreFilterResult limited the scan to `kept` rows (sorted); the rest count as its
        rejections: kube's "didn't satisfy plugin(s)", or for a hint the plugin's own filter
        reason.

        The rejected rows are only worked out if a message or preemption needs them: a
        DaemonSet pod pinned to one node must not pay a pass over every row.
        """
        self.kept = kept if self.kept is None else np.intersect1d(self.kept, kept)
        if hint:
            self._hinted_by.append(plugin)
        else:
            self._kube_kept = kept if self._kube_kept is None else np.intersect1d(self._kube_kept, kept)
            if plugin.name not in self._narrowed_by:
                self._narrowed_by.append(plugin.name)

    def _left_out(self, kept) -> np.ndarray:
        mask = np.ones(self.total_nodes, dtype=bool)
        mask[kept] = False
        return mask

    @property
    def excluded(self) -> np.ndarray | None:
        """Rows left out by PreFilter results, or None when none narrowed the scan."""
        return None if self.kept is None else np.flatnonzero(self._left_out(self.kept))

    def reasons(self, state, pod, table) -> Counter:
        counts = Counter()
        if self.pre_filter_status is not None:
            for r in self.pre_filter_status.reasons:
                counts[r] += self.total_nodes
            return counts
        if self.kept is not None:
            left_out = self._left_out(self.kept)
            if self._kube_kept is not None:
                # kube-scheduler gives the nodes its PreFilter results left out one reason naming
                # the plugins (Go's %v of a sorted list): "node(s) didn't satisfy plugin(s) [X]".
                by_kube = self._left_out(self._kube_kept)
                if by_kube.any():
                    names = " ".join(sorted(self._narrowed_by))
                    counts[f"node(s) didn't satisfy plugin(s) [{names}]"] += int(by_kube.sum())
                left_out &= ~by_kube
            hinted = np.flatnonzero(left_out)
            if len(hinted) and self._hinted_by:  # (NodeName, the only hint, rejects them all)
                counts.update(_reasons_of(self._hinted_by[0], state, pod, table, hinted))
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
        return fit_message(self.total_nodes, self.reasons(state, pod, table))

    def unresolvable_rows(self, state, pod, table) -> np.ndarray:
        """Rows where preemption cannot help: the plugin that rejected them said
        UnschedulableAndUnresolvable (plugins whose status depends on the node tell which
        rows through `unresolvable_vec`)."""
        if self.pre_filter_status is not None:
            everything = self.pre_filter_status.code == UNRESOLVABLE
            return np.arange(self.total_nodes if everything else 0, dtype=np.int64)
        out = []
        excluded = self.excluded
        if excluded is not None:
            out.append(excluded)
        for plugin, rows in self.vec_failures:
            rows = np.asarray(rows)
            if not plugin.resolvable_by_preemption:
                out.append(rows)
            elif hasattr(plugin, "unresolvable_vec") and len(rows):
                out.append(rows[plugin.unresolvable_vec(state, pod, table, rows)])
        bad = [row for row, (_, st) in self.node_failures.items() if st.code == UNRESOLVABLE]
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
