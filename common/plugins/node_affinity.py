"""NodeAffinity: the pod's nodeSelector and required node affinity admit the node (the
predicate, common.scheduling.predicates.node_matches, is shared with verify); preferred terms score."""
from __future__ import annotations

from ..scheduling.predicates import NODE_AFFINITY_MISMATCH, node_matches
from ..validation import Refused
from .args import ArgsKind
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import PluginSpec, QueueingHints, could_host


def check(j):
    return None if node_matches(j.pod, j.node) else f"NodeAffinity: {NODE_AFFINITY_MISMATCH}"


def _node_updated(pod, old, new) -> bool:
    return old.labels != new.labels and node_matches(pod, new) and not node_matches(pod, old)


class NodeAffinity(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "NodeAffinity"
    binder_check = staticmethod(check)
    queueing_hints = QueueingHints(node_added=could_host, node_updated=_node_updated)
    args_kind = ArgsKind({"addedAffinity": Refused(
        "shardsched does not apply addedAffinity (the binder checks each pod's own node affinity)")})
