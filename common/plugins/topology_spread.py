"""PodTopologySpread: the pod's hard spread constraints hold on the node (the rules,
common.scheduling.constraints, are shared with verify); soft ones, and the profile's default
constraints, score."""
from __future__ import annotations

from ..scheduling.constraints import POD_TOPOLOGY_SPREAD, topology_spread_failure
from ..config.validation import (ANY, Int, List, Obj, Refused, Str, duplicate, forbidden, invalid,
                                 label_name_errors, not_supported, required)
from .args import ArgsKind
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import ACROSS_NODES, PluginSpec

SPREAD_DEFAULTING = ("System", "List")
_BEYOND_DEFAULT_CONSTRAINTS = ("shardsched applies a default constraint as topologyKey, maxSkew "
                               "and whenUnsatisfiable only")


def _rules(a: dict, path: str) -> list:
    errs = []
    kind, constraints = a["defaultingType"], a["defaultConstraints"]
    if kind not in SPREAD_DEFAULTING:
        errs.append(not_supported(f"{path}.defaultingType", kind, SPREAD_DEFAULTING))
    elif kind == "System" and constraints:
        errs.append(invalid(f"{path}.defaultingType", kind, "when .defaultConstraints are not empty"))
    cp = f"{path}.defaultConstraints"
    for i, c in enumerate(constraints):
        p = f"{cp}[{i}]"
        if c["maxSkew"] <= 0:
            errs.append(invalid(f"{p}.maxSkew", c["maxSkew"], "not in valid range (0, inf)"))
        if not c["topologyKey"]:
            errs.append(required(f"{p}.topologyKey", "can not be empty"))
        else:
            errs += label_name_errors(c["topologyKey"], f"{p}.topologyKey")
        when = c["whenUnsatisfiable"]
        if not when:
            errs.append(required(f"{p}.whenUnsatisfiable", "can not be empty"))
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(f"{p}.whenUnsatisfiable", when, ("DoNotSchedule", "ScheduleAnyway")))
        elif when == "DoNotSchedule":
            errs.append(forbidden(f"{p}.whenUnsatisfiable", "shardsched applies default constraints as "
                                  "ScheduleAnyway only (the binder checks each pod's own constraints)"))
        if c["labelSelector"] is not None:
            errs.append(forbidden(f"{p}.labelSelector", "constraint must not define a selector, as they deduced for each pod"))
        for j in range(i):
            other = constraints[j]
            if (other["topologyKey"], other["whenUnsatisfiable"]) == (c["topologyKey"], when):
                errs.append(duplicate(f"{cp}[{i}]", f"{{{c['topologyKey']}, {when}}}"))
                break
    return errs


DEFAULT_CONSTRAINT = Obj(
    maxSkew=Int(), topologyKey=Str(), whenUnsatisfiable=Str(), labelSelector=ANY,
    minDomains=Refused(_BEYOND_DEFAULT_CONSTRAINTS), nodeAffinityPolicy=Refused(_BEYOND_DEFAULT_CONSTRAINTS),
    nodeTaintsPolicy=Refused(_BEYOND_DEFAULT_CONSTRAINTS), matchLabelKeys=Refused(_BEYOND_DEFAULT_CONSTRAINTS))


def check(j):
    if not any(c.hard for c in j.pod.spread_constraints):
        return None
    failure = topology_spread_failure(j.view.constraints, j.pod, j.node, j.excluded)
    return None if failure is None else f"{POD_TOPOLOGY_SPREAD}: {failure[1]}"


class PodTopologySpread(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = POD_TOPOLOGY_SPREAD
    resolvable_by_preemption = True
    args_kind = ArgsKind({"defaultConstraints": List(DEFAULT_CONSTRAINT), "defaultingType": Str("System")}, _rules)
    binder_check = staticmethod(check)
    queueing_hints = ACROSS_NODES
