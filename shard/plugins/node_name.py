"""NodeName: a pod that names its node (spec.nodeName) fits only there.

Its PreFilter narrows the candidates to that one node, so the cycle never scans the others
(unit locating). kube-scheduler's NodeName has no PreFilter, so the result is only a hint:
the other nodes are explained by the filter's own reason, as kube explains them.
"""
from __future__ import annotations

import numpy as np

from common.plugins import node_name
from ..framework import SKIP, Plugin, PreFilterResult, Status, unresolvable

REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin, node_name.NodeName):
    def pre_filter(self, state, pod):
        if not pod.node_name:
            return Status(SKIP)
        return PreFilterResult([pod.node_name], hint=True)

    def filter(self, state, pod, info):
        return unresolvable(REASON) if info.name != pod.node_name else None

    def filter_vec(self, state, pod, table, rows):
        # Vectorised too, so the scan checks every filter in the profile's (kube's) order and
        # a node failing several is blamed on the first, as kube-scheduler's message does.
        row = table.row_of.get(pod.node_name, -1)
        ids = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else np.asarray(rows)
        return ids == row
