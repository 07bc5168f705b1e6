"""NodeName: a pod that names its node (spec.nodeName) fits only there."""
from __future__ import annotations

from .interface import FilterPlugin
from .spec import PluginSpec, QueueingHints, could_host


class NodeName(PluginSpec, FilterPlugin):
    name = "NodeName"
    queueing_hints = QueueingHints(node_added=could_host)
