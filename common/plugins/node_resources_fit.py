"""NodeResourcesFit: the pod's requests fit the node's free room (the victims' room counted);
nodes score by a scoring strategy over the configured resources."""
from __future__ import annotations

from functools import partial

from ..scheduling.predicates import IgnoredResources, insufficient
from ..model.resources import shortfalls, vadd
from ..validation import (List, Obj, Str, forbidden, invalid, label_name_errors, not_supported,
                                 required)
from .args import RESOURCE_SPEC, SHAPE_POINT, ArgsKind, default_weights, resource_names, shape_rules
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import PluginSpec, QueueingHints, always, could_host, grown

SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def _defaulting(a: dict) -> None:
    if a["scoringStrategy"] is None:
        a["scoringStrategy"] = {"type": "LeastAllocated", "resources": [], "requestedToCapacityRatio": None}
    a["scoringStrategy"]["resources"] = default_weights(a["scoringStrategy"]["resources"])


def _rules(a: dict, path: str) -> list:
    errs = []
    for i, res in enumerate(a["ignoredResources"]):
        errs += label_name_errors(res, f"{path}.ignoredResources[{i}]")
    for i, group in enumerate(a["ignoredResourceGroups"]):
        if "/" in group:
            errs.append(invalid(f"{path}.ignoredResourceGroups[{i}]", group, "resource group name can't contain '/'"))
        errs += label_name_errors(group, f"{path}.ignoredResourceGroups[{i}]")
    s, sp = a["scoringStrategy"], f"{path}.scoringStrategy"
    if s["type"] not in SCORING_STRATEGIES:
        errs.append(not_supported(f"{sp}.type", s["type"], SCORING_STRATEGIES))
    for i, r in enumerate(s["resources"]):
        if not 0 < r["weight"] <= 100:
            errs.append(invalid(f"{sp}.resources[{i}].weight", r["weight"],
                                f"resource weight of {r['name']} not in valid range (0, 100]"))
    ratio = s["requestedToCapacityRatio"]
    if s["type"] == "RequestedToCapacityRatio":
        if ratio is None:
            errs.append(required(f"{sp}.requestedToCapacityRatio", "must be specified when type is RequestedToCapacityRatio"))
        else:
            errs += shape_rules(ratio["shape"], f"{sp}.requestedToCapacityRatio.shape")
    elif ratio is not None:
        errs.append(forbidden(f"{sp}.requestedToCapacityRatio", "must be nil when type is not RequestedToCapacityRatio"))
    return errs + resource_names(s["resources"], f"{sp}.resources")


ARGS = ArgsKind(
    {"ignoredResources": List(Str()), "ignoredResourceGroups": List(Str()),
     "scoringStrategy": Obj(type=Str(), resources=List(RESOURCE_SPEC),
                            requestedToCapacityRatio=Obj(shape=List(SHAPE_POINT)))},
    _rules, _defaulting)


def check(j, ignored: IgnoredResources = IgnoredResources()):
    """The binder's re-check: the requests fit the node's free room plus the victims'."""
    free = j.info.free
    for v in j.victims:
        free = vadd(free, v.requests)
    short = [insufficient(i) for i in shortfalls(j.pod.requests, free) if not (ignored and ignored.column(i))]
    return f"NodeResourcesFit: {', '.join(short)}" if short else None


class NodeResourcesFit(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "NodeResourcesFit"
    args_kind = ARGS
    resolvable_by_preemption = True
    binder_check = staticmethod(check)
    queueing_hints = QueueingHints(node_added=could_host, node_updated=lambda pod, old, new: grown(old, new),
                                   pod_left=always, preemption_changed=always)

    @classmethod
    def configured_check(cls, args: dict):
        """The check leaves out the profile's ignored resources and resource groups."""
        ignored = IgnoredResources(args["ignoredResources"], args["ignoredResourceGroups"])
        return partial(check, ignored=ignored) if ignored else check
