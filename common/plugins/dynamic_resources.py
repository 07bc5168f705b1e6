"""DynamicResources, as far as a pod without ResourceClaims meets it in kube-scheduler v1.37's
default profile (DynamicResourceAllocation is GA and locked on since v1.35): allocating claims
is its own issue, and shardsched does not consider a pod's spec.resourceClaims.

What it does to every other pod is observable, so shardsched has it: its PreFilter records
that it ran and skips its Filter, PreScore skips its Score (weight 2 in kube's default
profile); its PostFilter, first in the default profile (before DefaultPreemption), has
nothing to deallocate and passes, unless a PreFilter before it stopped the cycle (a rejection
kube calls UnschedulableAndUnresolvable, or PreFilter results with no node in common). Then it
finds no record of its PreFilter and fails with kube's error, "not found": kube's
RunPostFilterPlugins stops there, so DefaultPreemption never runs, and the pod's message ends
in "not found" instead of the preemption's words.
"""
from __future__ import annotations

from ..config.validation import Str, format_duration, invalid, parse_duration
from .args import ArgsKind
from .interface import FilterPlugin, PostFilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import PluginSpec

#: What its PostFilter says when its PreFilter did not run (kube's CycleState ErrNotFound).
NO_STATE = "not found"


def _rules(a: dict, path: str) -> list:
    """kube's ValidateDynamicResourcesArgs under v1.37's default gates (DRASchedulerFilterTimeout,
    DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on). Valid values are accepted
    and mean nothing here: shardsched searches no devices and waits for no binding conditions."""
    errs = []
    for key, least, why in (("filterTimeout", 0.0, "must be zero or positive"),
                            ("bindingTimeout", 1.0, "must be at least 1 second")):
        seconds = parse_duration(a[key])
        if seconds is None:
            errs.append(invalid(f"{path}.{key}", a[key], 'must be a duration such as "10s"'))
        elif seconds < least:
            errs.append(invalid(f"{path}.{key}", format_duration(seconds), why))
    return errs


class DynamicResources(PluginSpec, PreFilterPlugin, FilterPlugin, PostFilterPlugin, PreScorePlugin, ScorePlugin):
    name = "DynamicResources"
    args_kind = ArgsKind({"filterTimeout": Str("10s"), "bindingTimeout": Str("10m0s")}, _rules)
