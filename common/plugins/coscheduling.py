"""Coscheduling (scheduler-plugins): pods of a PodGroup are scheduled all or nothing. Its
QueueSort replaces PrioritySort's when both run; the binder judges a group as a unit
(binder/groups.py)."""
from __future__ import annotations

from ..validation import Int, invalid
from .args import ArgsKind
from .interface import FilterPlugin, PermitPlugin, PostFilterPlugin, PreFilterPlugin, QueueSortPlugin, ReservePlugin
from .spec import PluginSpec


def _rules(a: dict, path: str) -> list:
    """scheduler-plugins' CoschedulingArgs: non-negative seconds, a percentage."""
    errs = [invalid(f"{path}.{k}", a[k], "must be greater than or equal to 0")
            for k in ("permitWaitingTimeSeconds", "podGroupBackoffSeconds") if a[k] < 0]
    if not 0 <= a["podGroupRejectPercentage"] <= 100:
        errs.append(invalid(f"{path}.podGroupRejectPercentage", a["podGroupRejectPercentage"],
                            "not in valid range [0, 100]"))
    return errs


class Coscheduling(PluginSpec, QueueSortPlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin,
                   PermitPlugin):
    name = "Coscheduling"
    #: Its PreFilter verdicts concern the group, not a node: preemption cannot help them.
    resolvable_by_preemption = False
    args_kind = ArgsKind(
        {"permitWaitingTimeSeconds": Int(60), "podGroupBackoffSeconds": Int(0), "podGroupRejectPercentage": Int(10)},
        _rules)
