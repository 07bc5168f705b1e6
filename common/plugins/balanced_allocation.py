"""NodeResourcesBalancedAllocation: nodes whose resources' utilisations end up closest score
highest."""
from __future__ import annotations

from ..validation import List, duplicate, invalid
from .args import RESOURCE_SPEC, ArgsKind, default_weights, resource_names
from .interface import PreScorePlugin, ScorePlugin
from .spec import PluginSpec


def _defaulting(a: dict) -> None:
    a["resources"] = default_weights(a["resources"])


def _rules(a: dict, path: str) -> list:
    errs, seen = [], set()
    for i, r in enumerate(a["resources"]):
        if r["name"] in seen:
            errs.append(duplicate(f"{path}.resources[{i}].name", r["name"]))
        seen.add(r["name"])
        if r["weight"] != 1:
            errs.append(invalid(f"{path}.resources[{i}].weight", r["weight"], "must be 1"))
    return errs + resource_names(a["resources"], f"{path}.resources")


class NodeResourcesBalancedAllocation(PluginSpec, PreScorePlugin, ScorePlugin):
    name = "NodeResourcesBalancedAllocation"
    args_kind = ArgsKind({"resources": List(RESOURCE_SPEC)}, _rules, _defaulting)
