"""A plugin's arguments' kind (`ArgsKind`: fields, kube's defaults and validation), and the
argument types and rules several plugins share. Each plugin's own kind lives in its module
(common/plugins/<plugin>.py); resolving a profile's arguments is common.config.plugin_args'.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

from ..validation import Int, Obj, Str, invalid, required


@dataclass(frozen=True)
class ArgsKind:
    """One plugin's arguments: `fields` (name -> Field), `defaulting` (kube's SetDefaults
    beyond per-field defaults, in place) and `rules` (kube's validation, then shardsched's
    refusals: resolved args, path -> errors, all of them reported)."""

    fields: dict
    rules: Callable[[dict, str], list] = lambda args, path: []
    defaulting: Callable[[dict], None] = lambda args: None


RESOURCE_SPEC = Obj(name=Str(), weight=Int(0, bits=64))
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def default_weights(resources: list) -> list:
    """kube: no resources means cpu and memory; a weight left out (or 0) is 1."""
    if not resources:
        return copy.deepcopy(DEFAULT_RESOURCES)
    return [dict(r, weight=r["weight"] or 1) for r in resources]


def resource_names(resources: list, path: str) -> list:
    """shardsched's own rule: a resource is named (kube accepts "" and never matches it)."""
    return [required(f"{path}[{i}].name") for i, r in enumerate(resources) if not r["name"]]


#: One point of a scoring function's shape (RequestedToCapacityRatio, VolumeBinding): a
#: utilisation 0..100 and its score 0..10 (MaxCustomPriorityScore).
SHAPE_POINT = Obj(utilization=Int(), score=Int())


def shape_rules(shape: list, path: str) -> list:
    """kube's validateFunctionShape (scores 0..10, utilisations 0..100 increasing)."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs = []
    for i in range(1, len(shape)):
        if shape[i - 1]["utilization"] >= shape[i]["utilization"]:
            errs.append(invalid(f"{path}[{i}].utilization", shape[i]["utilization"],
                                "values must be sorted in increasing order"))
            break
    for i, p in enumerate(shape):
        if not 0 <= p["utilization"] <= 100:
            errs.append(invalid(f"{path}[{i}].utilization", p["utilization"], "not in valid range [0, 100]"))
        if not 0 <= p["score"] <= 10:
            errs.append(invalid(f"{path}[{i}].score", p["score"], "not in valid range [0, 10]"))
    return errs
