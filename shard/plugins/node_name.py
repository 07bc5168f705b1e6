"""NodeName: a pod that names its node (spec.nodeName) fits only there.

Its PreFilter narrows the candidates to that one node, so the cycle never scans the others
(unit locating).
"""
from __future__ import annotations

from ..framework import SKIP, Plugin, PreFilterResult, Status, unresolvable

REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin):
    name = "NodeName"

    def pre_filter(self, state, pod):
        if not pod.node_name:
            return Status(SKIP)
        return PreFilterResult([pod.node_name])

    def filter(self, state, pod, info):
        return unresolvable(REASON) if info.name != pod.node_name else None
