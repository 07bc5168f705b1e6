"""Every plugin argument: one bad value each and the error `config validate` prints for it,
kube-scheduler's message and field path (shardsched's own refusals where it cannot honour a
value); then defaulting, which the shard's plugins rely on."""
from __future__ import annotations

import pytest

from common import config
from common.config import plugin_args

A = "profiles[0].pluginConfig[0].args"

#: (plugin, args, the error after "config: ")
BAD = [
    ("Coscheduling", {"permitWaitingTimeSeconds": -1},
     f"{A}.permitWaitingTimeSeconds: Invalid value: -1: must be greater than or equal to 0"),
    ("Coscheduling", {"podGroupBackoffSeconds": "10s"},
     f'{A}.podGroupBackoffSeconds: Invalid value: "10s": must be an integer'),
    ("Coscheduling", {"podGroupRejectPercentage": 101},
     f"{A}.podGroupRejectPercentage: Invalid value: 101: not in valid range [0, 100]"),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 101},
     f"{A}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"),
    ("DefaultPreemption", {"minCandidateNodesPercentage": "10%"},
     f'{A}.minCandidateNodesPercentage: Invalid value: "10%": must be an integer'),
    ("DefaultPreemption", {"minCandidateNodesAbsolute": -1},
     f"{A}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     f"{A}.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
     f"minCandidateNodesAbsolute\nconfig: {A}.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the "
     "same time as minCandidateNodesPercentage"),  # kube lists both
    ("VolumeBinding", {"bindTimeoutSeconds": -1},
     f"{A}.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value"),
    ("DynamicResources", {"filterTimeout": "-1s"},
     f"{A}.filterTimeout: Invalid value: -1s: must be zero or positive"),
    ("DynamicResources", {"bindingTimeout": "500ms"},
     f"{A}.bindingTimeout: Invalid value: 500ms: must be at least 1 second"),
    ("VolumeBinding", {"shape": [{"utilization": 0, "score": 11}]},
     f"{A}.shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
    ("InterPodAffinity", {"hardPodAffinityWeight": 101},
     f"{A}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"),
    ("InterPodAffinity", {"hardPodAffinityWeight": "lots"},
     f'{A}.hardPodAffinityWeight: Invalid value: "lots": must be an integer'),
    ("InterPodAffinity", {"hardPodAffinityWeight": 2**40},
     f"{A}.hardPodAffinityWeight: Invalid value: 1099511627776: must fit in a 32-bit integer"),
    ("InterPodAffinity", {"ignorePreferredTermsOfExistingPods": "yes"},
     f'{A}.ignorePreferredTermsOfExistingPods: Invalid value: "yes": must be a boolean'),
    ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
     f"{A}.addedAffinity: Forbidden: shardsched does not apply addedAffinity (the binder checks each "
     "pod's own node affinity)"),
    ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]},
     f"{A}.resources[0].weight: Invalid value: 2: must be 1"),
    ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
     f'{A}.resources[1].name: Duplicate value: "cpu"'),
    ("NodeResourcesBalancedAllocation", {"resources": [{"weight": 1}]},
     f"{A}.resources[0].name: Required value"),
    ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "size": 1}]},
     f"{A}.resources[0].size: Forbidden: unknown field (known: name, weight)"),
    ("NodeResourcesFit", {"ignoredResources": ["example.com/a b"]},
     f'{A}.ignoredResources[0]: Invalid value: "example.com/a b": name part must consist of alphanumeric '
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
     "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/gpu"]},
     f"{A}.ignoredResourceGroups[0]: Invalid value: \"example.com/gpu\": resource group name can't contain '/'"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "MostAlocated"}},
     f'{A}.scoringStrategy.type: Unsupported value: "MostAlocated": supported values: "LeastAllocated", '
     '"MostAllocated", "RequestedToCapacityRatio"'),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
     f"{A}.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
     f"{A}.scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is "
     "RequestedToCapacityRatio"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": []}}},
     f"{A}.scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {}}},
     f"{A}.scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}},
     f"{A}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 50: values must be "
     "sorted in increasing order"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 11}]}}},
     f"{A}.scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 101, "score": 1}]}}},
     f"{A}.scoringStrategy.requestedToCapacityRatio.shape[0].utilization: Invalid value: 101: not in valid "
     "range [0, 100]"),
    ("PodTopologySpread", {"defaultingType": "Always"},
     f'{A}.defaultingType: Unsupported value: "Always": supported values: "System", "List"'),
    ("PodTopologySpread", {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                   "whenUnsatisfiable": "ScheduleAnyway"}]},
     f'{A}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
     f"{A}.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}]},
     f"{A}.defaultConstraints[0].topologyKey: Required value: can not be empty"),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never"}]},
     f'{A}.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Never": supported values: '
     '"DoNotSchedule", "ScheduleAnyway"'),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}]},
     f"{A}.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they "
     "deduced for each pod"),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
     f'{A}.defaultConstraints[1]: Duplicate value: "{{zone, ScheduleAnyway}}"'),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]},
     f"{A}.defaultConstraints[0].minDomains: Forbidden: shardsched applies a default constraint as "
     "topologyKey, maxSkew and whenUnsatisfiable only"),
    ("TaintToleration", {"weight": 3},
     f"{A}.weight: Forbidden: unknown field (known: none)"),
    ("NodeResourcesFit", {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"},
     f'{A}.apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: '
     '"kubescheduler.config.k8s.io/v1"'),
    ("NodeResourcesFit", {"kind": "InterPodAffinityArgs"},
     f'{A}.kind: Invalid value: "InterPodAffinityArgs": must be NodeResourcesFitArgs, the args of plugin '
     "NodeResourcesFit"),
]


def validate_args(plugin: str, args) -> dict:
    return config.validate({"profiles": [{"schedulerName": "a", "pluginConfig": [{"name": plugin, "args": args}]}]})


@pytest.mark.parametrize("plugin, args, expected", BAD, ids=[f"{p}-{e.split(':')[0][len(A) + 1:]}" for p, _, e in BAD])
def test_a_bad_value_is_reported_with_its_field_path(plugin, args, expected):
    with pytest.raises(config.ConfigError) as e:
        validate_args(plugin, args)
    assert str(e.value) == f"config: {expected}"


def test_every_argument_has_a_table_case():
    """A new field in plugin_args.KINDS needs a bad value above."""
    covered = {(p, e[len(A) + 1:].split(":")[0].split(".")[0].split("[")[0]) for p, _, e in BAD}
    fields = {(p, f) for p, kind in plugin_args.KINDS.items() for f in kind.fields}
    assert fields <= covered, sorted(fields - covered)


def test_kube_defaults_fill_every_field():
    assert plugin_args.resolve("NodeResourcesFit", None) == {
        "ignoredResources": [], "ignoredResourceGroups": [],
        "scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                                   {"name": "memory", "weight": 1}],
                            "requestedToCapacityRatio": None}}
    assert plugin_args.resolve("InterPodAffinity", {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                                    "kind": "InterPodAffinityArgs"}) == {
        "hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}
    assert plugin_args.resolve("PodTopologySpread", {}) == {"defaultConstraints": [], "defaultingType": "System"}


def test_a_weight_left_out_or_zero_means_one():
    args = plugin_args.resolve("NodeResourcesFit", {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}]}})
    assert args["scoringStrategy"]["resources"] == [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def test_resolving_resolved_args_changes_nothing():
    for plugin in plugin_args.KINDS:
        once = plugin_args.resolve(plugin, {})
        assert plugin_args.resolve(plugin, once) == once, plugin


def test_default_preemption_takes_its_defaults_from_the_preemption_section():
    cfg = config.validate({"preemption": {"minCandidateNodesPercentage": 30}})
    assert plugin_args.profile_args(cfg, 0)["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 30, "minCandidateNodesAbsolute": 100}
    cfg = config.validate({"preemption": {"minCandidateNodesPercentage": 30}, "profiles": [
        {"schedulerName": "a", "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}]}]})
    assert plugin_args.profile_args(cfg, 0)["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 30, "minCandidateNodesAbsolute": 5}
