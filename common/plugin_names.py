"""The names of the scheduling plugins and kube-scheduler's default profile, without the
plugins themselves (kube keeps them apart in names.go for the same reason): the config is
checked against them in every process and command, and only a shard needs the plugin code.
"""
from __future__ import annotations

PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
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
    (PRIORITY_SORT, 0), (NODE_UNSCHEDULABLE, 0), (NODE_NAME, 0), (TAINT_TOLERATION, 3),
    (NODE_AFFINITY, 2), (NODE_PORTS, 0), (NODE_RESOURCES_FIT, 1),
    (NODE_RESOURCES_BALANCED_ALLOCATION, 1), (POD_TOPOLOGY_SPREAD, 2), (INTER_POD_AFFINITY, 2),
    (IMAGE_LOCALITY, 1), (DEFAULT_PREEMPTION, 0), (DEFAULT_BINDER, 0), (COSCHEDULING, 0),
)

#: Every plugin a profile may name.
KNOWN = frozenset(name for name, _ in DEFAULT_PLUGINS)


def profile_plugins(profile: dict) -> list[tuple[str, int]]:
    """(plugin, weight) of a configured profile, in order: the defaults minus the disabled
    ones ('*' disables them all), then the enabled ones not among them; an enabled default
    keeps its place with the weight given."""
    disabled = {e["name"] for e in profile["plugins"]["disabled"]}
    entries = [] if "*" in disabled else [(n, w) for n, w in DEFAULT_PLUGINS if n not in disabled]
    order = [n for n, _ in entries]
    weights = dict(entries)
    for e in profile["plugins"]["enabled"]:
        if e["name"] not in weights:
            order.append(e["name"])
        weights[e["name"]] = e["weight"]
    return [(n, weights[n]) for n in order]


def gang_scheduler_names(cfg: dict) -> frozenset:
    """schedulerNames whose profile schedules PodGroups all or nothing (Coscheduling on)."""
    return frozenset(p["schedulerName"] for p in cfg["profiles"]
                     if any(n == COSCHEDULING for n, _ in profile_plugins(p)))
