"""The names of the scheduling plugins that code refers to, and the default profile, as kube
keeps them in names.go and default_plugins.go. The plugins themselves (their extension
points, arguments, checks and hints) are the registry's: common/plugins/.
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
#: kube's gang scheduling over its own PodGroups (scheduling.k8s.io; kube v1.37 adds it to the
#: default profile with the GenericWorkload feature gate, here on by default).
GANG_SCHEDULING = "GangScheduling"
DYNAMIC_RESOURCES = "DynamicResources"
#: scheduler-plugins' gang scheduling over PodGroups (not a kube-scheduler default, but on by
#: default here: pods outside a group never notice it).
COSCHEDULING = "Coscheduling"

#: (plugin, score weight) of the default profile, in kube-scheduler's order: filters run
#: cheapest-and-most-selective first. Coscheduling comes last, as scheduler-plugins adds it
#: (its PostFilter runs after preemption had its chance; its QueueSort replaces PrioritySort).
DEFAULT_PLUGINS = (
    (SCHEDULING_GATES, 0), (PRIORITY_SORT, 0), (NODE_NAME, 0), (NODE_UNSCHEDULABLE, 0),
    (TAINT_TOLERATION, 3), (NODE_AFFINITY, 2), (NODE_PORTS, 0), (NODE_RESOURCES_FIT, 1),
    (VOLUME_RESTRICTIONS, 0), (NODE_VOLUME_LIMITS, 0), (VOLUME_BINDING, 1), (VOLUME_ZONE, 0),
    (POD_TOPOLOGY_SPREAD, 2), (INTER_POD_AFFINITY, 2), (DYNAMIC_RESOURCES, 2), (DEFAULT_PREEMPTION, 0),
    (NODE_RESOURCES_BALANCED_ALLOCATION, 1), (IMAGE_LOCALITY, 1), (DEFAULT_BINDER, 0), (GANG_SCHEDULING, 0),
    (COSCHEDULING, 0),
)
