"""PodTopologySpread: the pod's hard spread constraints hold on the node (the rules,
common.scheduling.constraints, are shared with verify); soft ones score. A pod without
constraints of its own gets the profile's default ones (`constraints_of`): kube's system
defaults (ScheduleAnyway) or the List given in its args, whose DoNotSchedule constraints
filter, in the shard and in the binder's check alike."""
from __future__ import annotations

from functools import partial

from ..model.objects import SpreadConstraint
from ..scheduling.constraints import POD_TOPOLOGY_SPREAD, topology_spread_failure
from ..validation import (ANY, Int, List, Obj, Refused, Str, duplicate, forbidden, invalid,
                                 label_name_errors, not_supported, required)
from .args import ArgsKind
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import ACROSS_NODES, PluginSpec

SPREAD_DEFAULTING = ("System", "List")
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
#: kube's system default constraints (ScheduleAnyway): (topologyKey, maxSkew).
SYSTEM_DEFAULTS = ((HOSTNAME, 3), (ZONE, 5))
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


def constraints_of(pod, args: dict, selector_of) -> tuple[list, bool]:
    """(the constraints that apply to `pod`, whether they are its own): its own, else the
    profile's defaults (kube's getConstraints and buildDefaultConstraints) over the pods of its
    workload, `selector_of(pod)` (common.scheduling.workloads.Workloads.default_selector, kube's
    helper.DefaultSelector); none for a pod without a workload."""
    if pod.spread_constraints:
        return list(pod.spread_constraints), True
    selector = selector_of(pod)
    if selector is None:
        return [], False
    if args["defaultingType"] == "List":
        spec = [(d["topologyKey"], d["maxSkew"], d["whenUnsatisfiable"] == "DoNotSchedule")
                for d in args["defaultConstraints"]]
    else:
        spec = [(key, skew, False) for key, skew in SYSTEM_DEFAULTS]
    return [SpreadConstraint(skew, key, hard, selector, 1, True, False) for key, skew, hard in spec], False


def check(j, args: dict | None = None):
    """The pod's DoNotSchedule constraints (its own, or with the profile's `args` its defaults,
    over the workloads `j.view.workloads` keeps) hold on the node."""
    own = j.pod.spread_constraints
    hard = [c for c in (constraints_of(j.pod, args, j.view.workloads.default_selector)[0] if args else own)
            if c.hard]
    if not hard:
        return None
    failure = topology_spread_failure(j.view.constraints, j.pod, j.node, j.excluded, hard)
    return None if failure is None else f"{POD_TOPOLOGY_SPREAD}: {failure[1]}"


class PodTopologySpread(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = POD_TOPOLOGY_SPREAD
    resolvable_by_preemption = True
    args_kind = ArgsKind({"defaultConstraints": List(DEFAULT_CONSTRAINT), "defaultingType": Str("System")}, _rules)
    binder_check = staticmethod(check)
    queueing_hints = ACROSS_NODES

    @classmethod
    def configured_check(cls, args: dict):
        """The check with the profile's default constraints (its List may hold DoNotSchedule ones)."""
        return partial(check, args=args)
