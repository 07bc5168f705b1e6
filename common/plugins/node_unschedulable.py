"""NodeUnschedulable: a cordoned node (spec.unschedulable) takes only pods that tolerate its
unschedulable taint."""
from __future__ import annotations

from ..scheduling.predicates import UNSCHEDULABLE_NODE, unschedulable_blocks
from .interface import FilterPlugin
from .spec import PluginSpec, QueueingHints, could_host


def check(j):
    return f"NodeUnschedulable: {UNSCHEDULABLE_NODE}" if unschedulable_blocks(j.pod, j.node) else None


def _node_updated(pod, old, new) -> bool:
    return bool(old.unschedulable) and not unschedulable_blocks(pod, new)


class NodeUnschedulable(PluginSpec, FilterPlugin):
    name = "NodeUnschedulable"
    binder_check = staticmethod(check)
    queueing_hints = QueueingHints(node_added=could_host, node_updated=_node_updated)
