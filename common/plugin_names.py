"""The names of the scheduling plugins and kube-scheduler's default profile, without the
plugins themselves (kube keeps them apart in names.go for the same reason): the config is
checked against them in every process and command, and only a shard needs the plugin code.
"""
from __future__ import annotations

SCHEDULING_GATES = "SchedulingGates"
PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
INTER_POD_AFFINITY = "InterPodAffinity"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_PREEMPTION = "DefaultPreemption"
DEFAULT_BINDER = "DefaultBinder"
#: scheduler-plugins' gang scheduling over PodGroups (not a kube-scheduler default, but on by
#: default here: pods outside a group never notice it).
COSCHEDULING = "Coscheduling"

#: (plugin, score weight) of the default profile, in kube-scheduler's order: filters run
#: cheapest-and-most-selective first. Coscheduling comes last, as scheduler-plugins adds it
#: (its PostFilter runs after preemption had its chance; its QueueSort replaces PrioritySort).
DEFAULT_PLUGINS = (
    (SCHEDULING_GATES, 0), (PRIORITY_SORT, 0), (NODE_UNSCHEDULABLE, 0), (NODE_NAME, 0),
    (TAINT_TOLERATION, 3), (NODE_AFFINITY, 2), (NODE_PORTS, 0), (NODE_RESOURCES_FIT, 1),
    (VOLUME_RESTRICTIONS, 0), (NODE_VOLUME_LIMITS, 0), (VOLUME_BINDING, 0), (VOLUME_ZONE, 0),
    (POD_TOPOLOGY_SPREAD, 2), (INTER_POD_AFFINITY, 2), (DEFAULT_PREEMPTION, 0),
    (NODE_RESOURCES_BALANCED_ALLOCATION, 1), (IMAGE_LOCALITY, 1), (DEFAULT_BINDER, 0), (COSCHEDULING, 0),
)

#: Every plugin a profile may name.
KNOWN = frozenset(name for name, _ in DEFAULT_PLUGINS)

#: kube-scheduler's extension points, in the order a pod meets them.
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                    "reserve", "permit", "preBind", "bind", "postBind")

#: The extension points each plugin implements, as kube-scheduler v1.33's plugin of that name
#: does (DefaultPreemption's PreEnqueue, for kube's asynchronous preemption, aside): a profile
#: may enable or disable a plugin at these. tests/plugins/test_registry.py checks them against
#: the shard's plugin classes.
POINTS = {
    PRIORITY_SORT: ("queueSort",),
    NODE_UNSCHEDULABLE: ("filter",),
    NODE_NAME: ("filter",),
    TAINT_TOLERATION: ("filter", "preScore", "score"),
    NODE_AFFINITY: ("preFilter", "filter", "preScore", "score"),
    NODE_PORTS: ("preFilter", "filter"),
    NODE_RESOURCES_FIT: ("preFilter", "filter", "preScore", "score"),
    NODE_RESOURCES_BALANCED_ALLOCATION: ("preScore", "score"),
    POD_TOPOLOGY_SPREAD: ("preFilter", "filter", "preScore", "score"),
    INTER_POD_AFFINITY: ("preFilter", "filter", "preScore", "score"),
    IMAGE_LOCALITY: ("score",),
    DEFAULT_PREEMPTION: ("postFilter",),
    DEFAULT_BINDER: ("bind",),
    SCHEDULING_GATES: ("preEnqueue",),
    VOLUME_RESTRICTIONS: ("preFilter", "filter"),
    NODE_VOLUME_LIMITS: ("preFilter", "filter"),
    # (its PreBind is the binder's: common/volume_binding.py)
    VOLUME_BINDING: ("preFilter", "filter", "reserve"),
    VOLUME_ZONE: ("preFilter", "filter"),
    # scheduler-plugins' Coscheduling; its QueueSort replaces PrioritySort's when both run.
    COSCHEDULING: ("queueSort", "preFilter", "filter", "postFilter", "reserve", "permit"),
}

#: A plugin's PreFilter and PreScore prepare its Filter and Score: shardsched runs each with
#: its main point, so a profile switches the pair on or off together.
PAIRED_POINTS = {"preFilter": "filter", "preScore": "score"}
