"""DefaultPreemption: a pod that fits nowhere may evict lower-priority pods (its PostFilter
finds the victims; the binder checks them, common.scheduling.checks.victims)."""
from __future__ import annotations

import dataclasses

from ..validation import Int, invalid
from .args import ArgsKind
from .interface import PostFilterPlugin
from .spec import ACROSS_NODES, PluginSpec, always, grown


def _rules(a: dict, path: str) -> list:
    errs = []
    pct, absolute = a["minCandidateNodesPercentage"], a["minCandidateNodesAbsolute"]
    if not 0 <= pct <= 100:
        errs.append(invalid(f"{path}.minCandidateNodesPercentage", pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(f"{path}.minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs += [invalid(f"{path}.minCandidateNodesPercentage", pct,
                         "cannot be zero at the same time as minCandidateNodesAbsolute"),
                 invalid(f"{path}.minCandidateNodesAbsolute", absolute,
                         "cannot be zero at the same time as minCandidateNodesPercentage")]
    return errs


def _node_updated(pod, old, new) -> bool:
    """A preemptor that found no victims may find some after any change a filter reads:
    preemption's dry runs run every filter, where the pod's rejectors name only the first to
    fail on each node."""
    return (old.labels != new.labels or grown(old, new) or old.taints != new.taints
            or old.unschedulable != new.unschedulable)


class DefaultPreemption(PluginSpec, PostFilterPlugin):
    name = "DefaultPreemption"
    finds_victims = True
    args_kind = ArgsKind({"minCandidateNodesPercentage": Int(10), "minCandidateNodesAbsolute": Int(100)}, _rules)
    #: its dry runs run every filter: a change anywhere may give it a candidate, and a
    #: PodDisruptionBudget or a nomination changing may too
    queueing_hints = dataclasses.replace(ACROSS_NODES, node_updated=_node_updated, preemption_changed=always)
