"""A plugin's arguments' kind (`ArgsKind`: fields, kube's defaults and validation), and the
argument types and rules several plugins share. Each plugin's own kind lives in its module
(common/plugins/<plugin>.py); resolving a profile's arguments is common.config.plugin_args'.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

from ..config.validation import Int, Obj, Str, required


@dataclass(frozen=True)
class ArgsKind:
    """One plugin's arguments: `fields` (name -> Field), `defaulting` (kube's SetDefaults
    beyond per-field defaults, in place) and `rules` (kube's validation, then shardsched's
    refusals: resolved args, path -> errors, first one reported)."""

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
