"""Plugin arguments (a profile's `pluginConfig[].args`): their types, defaults and
validation, apart from the plugins themselves, as kube keeps its args types and their
validation in apis/config: the command line and every role check a configuration through
this module, and the shard's plugins read their arguments through it (`resolve`).

Each plugin has one `ArgsKind` in `KINDS`: its fields (types and kube's defaults), kube's
validation rules (kube-scheduler v1.33's messages and field paths), and what shardsched
refuses on top. Adding a plugin's arguments is one entry here.

Arguments may carry kube's `apiVersion: kubescheduler.config.k8s.io/v1` and
`kind: <Plugin>Args` (as `kube-scheduler --write-config-to` writes them); resolved arguments
are plain mappings without them, every field present.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

from . import plugin_names as names
from .validation import (ANY, Bool, Int, List, Obj, Refused, Str, decode_object, duplicate,
                         forbidden, invalid, label_name_errors, not_supported, required)

ARGS_API_VERSION = "kubescheduler.config.k8s.io/v1"


# --- the args kinds --------------------------------------------------------------------------

@dataclass(frozen=True)
class ArgsKind:
    """One plugin's arguments: `fields` (name -> Field), `defaulting` (kube's SetDefaults
    beyond per-field defaults, in place) and `rules` (kube's validation, then shardsched's
    refusals: resolved args, path -> errors, first one reported)."""

    fields: dict
    rules: Callable[[dict, str], list] = lambda args, path: []
    defaulting: Callable[[dict], None] = lambda args: None


def _default_preemption_rules(a: dict, path: str) -> list:
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


def _inter_pod_affinity_rules(a: dict, path: str) -> list:
    w = a["hardPodAffinityWeight"]
    return [] if 0 <= w <= 100 else [invalid(f"{path}.hardPodAffinityWeight", w, "not in valid range [0, 100]")]


def _volume_binding_rules(a: dict, path: str) -> list:
    errs = []
    if a["bindTimeoutSeconds"] < 0:
        errs.append(invalid(f"{path}.bindTimeoutSeconds", a["bindTimeoutSeconds"],
                            "invalid BindTimeoutSeconds, should not be a negative value"))
    if a["shape"]:
        errs.append(forbidden(f"{path}.shape", "shardsched does not score nodes by storage capacity "
                              "(kube's StorageCapacityScoring, off by default in v1.33)"))
    return errs


def _coscheduling_rules(a: dict, path: str) -> list:
    """scheduler-plugins' CoschedulingArgs: non-negative seconds, a percentage."""
    errs = [invalid(f"{path}.{k}", a[k], "must be greater than or equal to 0")
            for k in ("permitWaitingTimeSeconds", "podGroupBackoffSeconds") if a[k] < 0]
    if not 0 <= a["podGroupRejectPercentage"] <= 100:
        errs.append(invalid(f"{path}.podGroupRejectPercentage", a["podGroupRejectPercentage"],
                            "not in valid range [0, 100]"))
    return errs


RESOURCE_SPEC = Obj(name=Str(), weight=Int(0, bits=64))
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
SHAPE_POINT = Obj(utilization=Int(), score=Int())


def _default_weights(resources: list) -> list:
    """kube: no resources means cpu and memory; a weight left out (or 0) is 1."""
    if not resources:
        return copy.deepcopy(DEFAULT_RESOURCES)
    return [dict(r, weight=r["weight"] or 1) for r in resources]


def _resource_names(resources: list, path: str) -> list:
    """shardsched's own rule: a resource is named (kube accepts "" and never matches it)."""
    return [required(f"{path}[{i}].name") for i, r in enumerate(resources) if not r["name"]]


def _balanced_allocation_defaulting(a: dict) -> None:
    a["resources"] = _default_weights(a["resources"])


def _balanced_allocation_rules(a: dict, path: str) -> list:
    errs, seen = [], set()
    for i, r in enumerate(a["resources"]):
        if r["name"] in seen:
            errs.append(duplicate(f"{path}.resources[{i}].name", r["name"]))
        seen.add(r["name"])
        if r["weight"] != 1:
            errs.append(invalid(f"{path}.resources[{i}].weight", r["weight"], "must be 1"))
    return errs + _resource_names(a["resources"], f"{path}.resources")


def _fit_defaulting(a: dict) -> None:
    if a["scoringStrategy"] is None:
        a["scoringStrategy"] = {"type": "LeastAllocated", "resources": [], "requestedToCapacityRatio": None}
    a["scoringStrategy"]["resources"] = _default_weights(a["scoringStrategy"]["resources"])


SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def _fit_rules(a: dict, path: str) -> list:
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
            errs += _shape_rules(ratio["shape"], f"{sp}.requestedToCapacityRatio.shape")
    elif ratio is not None:
        errs.append(forbidden(f"{sp}.requestedToCapacityRatio", "must be nil when type is not RequestedToCapacityRatio"))
    return errs + _resource_names(s["resources"], f"{sp}.resources")


def _shape_rules(shape: list, path: str) -> list:
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


SPREAD_DEFAULTING = ("System", "List")
_BEYOND_DEFAULT_CONSTRAINTS = ("shardsched applies a default constraint as topologyKey, maxSkew "
                               "and whenUnsatisfiable only")


def _spread_rules(a: dict, path: str) -> list:
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

#: plugin name -> its arguments. Plugins without arguments take none (an empty mapping).
KINDS: dict[str, ArgsKind] = {
    names.PRIORITY_SORT: ArgsKind({}),
    names.NODE_UNSCHEDULABLE: ArgsKind({}),
    names.NODE_NAME: ArgsKind({}),
    names.TAINT_TOLERATION: ArgsKind({}),
    names.NODE_PORTS: ArgsKind({}),
    names.IMAGE_LOCALITY: ArgsKind({}),
    names.DEFAULT_BINDER: ArgsKind({}),
    names.DEFAULT_PREEMPTION: ArgsKind(
        {"minCandidateNodesPercentage": Int(10), "minCandidateNodesAbsolute": Int(100)},
        _default_preemption_rules),
    names.INTER_POD_AFFINITY: ArgsKind(
        {"hardPodAffinityWeight": Int(1), "ignorePreferredTermsOfExistingPods": Bool()},
        _inter_pod_affinity_rules),
    names.NODE_AFFINITY: ArgsKind({"addedAffinity": Refused(
        "shardsched does not apply addedAffinity (the binder checks each pod's own node affinity)")}),
    names.NODE_RESOURCES_BALANCED_ALLOCATION: ArgsKind(
        {"resources": List(RESOURCE_SPEC)}, _balanced_allocation_rules, _balanced_allocation_defaulting),
    names.NODE_RESOURCES_FIT: ArgsKind(
        {"ignoredResources": List(Str()), "ignoredResourceGroups": List(Str()),
         "scoringStrategy": Obj(type=Str(), resources=List(RESOURCE_SPEC),
                                requestedToCapacityRatio=Obj(shape=List(SHAPE_POINT)))},
        _fit_rules, _fit_defaulting),
    names.POD_TOPOLOGY_SPREAD: ArgsKind(
        {"defaultConstraints": List(DEFAULT_CONSTRAINT), "defaultingType": Str("System")}, _spread_rules),
    names.SCHEDULING_GATES: ArgsKind({}),
    names.VOLUME_RESTRICTIONS: ArgsKind({}),
    names.NODE_VOLUME_LIMITS: ArgsKind({}),
    names.VOLUME_ZONE: ArgsKind({}),
    names.VOLUME_BINDING: ArgsKind(
        {"bindTimeoutSeconds": Int(600, bits=64), "shape": ANY},
        _volume_binding_rules),
    names.COSCHEDULING: ArgsKind(
        {"permitWaitingTimeSeconds": Int(60), "podGroupBackoffSeconds": Int(0), "podGroupRejectPercentage": Int(10)},
        _coscheduling_rules),
}


def resolve(plugin: str, raw, path: str = "args", base: dict | None = None) -> dict:
    """The plugin's full arguments: `raw` (a pluginConfig entry's args) over `base` (defaults
    from shardsched's own sections) over kube's defaults, checked; raises FieldError naming
    `path` and the field. Resolving resolved arguments gives them back unchanged."""
    kind = KINDS.get(plugin)
    if kind is None:
        raise invalid(path, plugin, f"shardsched has no plugin {plugin} to take these args")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid(path, raw, f"must be a mapping ({plugin}Args)")
    raw = dict(raw)
    _check_type_meta(raw, plugin, path)
    merged = {**(base or {}), **raw}
    args = decode_object(kind.fields, merged, path)
    kind.defaulting(args)
    errors = kind.rules(args, path)
    if errors:
        raise errors[0]
    return args


def _check_type_meta(raw: dict, plugin: str, path: str) -> None:
    """Drop kube's apiVersion and kind from `raw` after checking them."""
    version = raw.pop("apiVersion", None)
    kind = raw.pop("kind", None)
    if version is not None and version != ARGS_API_VERSION:
        raise not_supported(f"{path}.apiVersion", version, (ARGS_API_VERSION,))
    if kind is not None and kind != f"{plugin}Args":
        raise invalid(f"{path}.kind", kind, f"must be {plugin}Args, the args of plugin {plugin}")


def section_defaults(cfg) -> dict:
    """Arguments shardsched takes from its own sections (of a common.config.Config) where a
    profile gives none."""
    p = cfg.preemption
    return {names.DEFAULT_PREEMPTION: {"minCandidateNodesPercentage": p.min_candidate_nodes_percentage,
                                       "minCandidateNodesAbsolute": p.min_candidate_nodes_absolute}}


def profile_args(cfg, index: int) -> dict[str, dict]:
    """Every plugin's resolved arguments in profile `index` of a config (pluginConfig over
    the sections' defaults): what the shard builds the profile's plugins with, and what
    config validation checks. Raises FieldError with the pluginConfig entry's path."""
    given: dict[str, tuple] = {}
    for j, entry in enumerate(cfg.profiles[index].plugin_config):
        path = f"profiles[{index}].pluginConfig[{j}]"
        name = entry.name
        if name in given:
            raise duplicate(path, name)
        if name not in KINDS:
            raise not_supported(f"{path}.name", name, sorted(KINDS))
        given[name] = (entry.args, f"{path}.args")
    base = section_defaults(cfg)
    return {name: resolve(name, *given.get(name, ({}, f"profiles[{index}].pluginConfig")), base.get(name))
            for name in KINDS}
