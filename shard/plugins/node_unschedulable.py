"""NodeUnschedulable: nodes marked spec.unschedulable take only pods tolerating that taint."""
from __future__ import annotations

from collections import Counter

from common.plugins import node_unschedulable
from common.scheduling.predicates import UNSCHEDULABLE_NODE, UNSCHEDULABLE_TAINT
from common.model.selectors import tolerated
from ..framework import SKIP, Plugin, Status, unresolvable

REASON = UNSCHEDULABLE_NODE


class NodeUnschedulable(Plugin, node_unschedulable.NodeUnschedulable):
    def pre_filter(self, state, pod):
        if tolerated(UNSCHEDULABLE_TAINT, pod.tolerations):
            return Status(SKIP)
        return None

    def filter(self, state, pod, info):
        return unresolvable(REASON) if info.node.unschedulable else None

    def filter_vec(self, state, pod, table, rows):
        return ~table.unschedulable[rows]

    def reasons_vec(self, state, pod, table, rows):
        return Counter({REASON: len(rows)})
