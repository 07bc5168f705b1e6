"""TaintToleration: a pod goes only where it tolerates every NoSchedule and NoExecute taint,
and prefers nodes with fewer PreferNoSchedule taints it does not tolerate."""
from __future__ import annotations

from ..scheduling.predicates import untolerated_taint, untolerated_taint_message
from .interface import FilterPlugin, PreScorePlugin, ScorePlugin
from .spec import PluginSpec, QueueingHints, could_host


def check(j):
    taint = untolerated_taint(j.node.taints, j.pod.tolerations)
    return None if taint is None else f"TaintToleration: {untolerated_taint_message(taint)}"


def _node_updated(pod, old, new) -> bool:
    return old.taints != new.taints and untolerated_taint(new.taints, pod.tolerations) is None


class TaintToleration(PluginSpec, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "TaintToleration"
    binder_check = staticmethod(check)
    queueing_hints = QueueingHints(node_added=could_host, node_updated=_node_updated)
