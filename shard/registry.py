"""Plugin registry and profile assembly.

Maps plugin names to classes and turns a profile from the config (enabled, disabled,
weights, pluginConfig args) into the ordered plugin list the framework runs. The default
order is kube-scheduler's: filters run cheapest-and-most-selective first.
"""
from __future__ import annotations

from .plugins.balanced_allocation import NodeResourcesBalancedAllocation
from .plugins.default_binder import DefaultBinder
from .plugins.default_preemption import DefaultPreemption
from .plugins.image_locality import ImageLocality
from .plugins.inter_pod_affinity import InterPodAffinity
from .plugins.node_affinity import NodeAffinity
from .plugins.node_name import NodeName
from .plugins.node_ports import NodePorts
from .plugins.node_resources_fit import NodeResourcesFit
from .plugins.node_unschedulable import NodeUnschedulable
from .plugins.priority_sort import PrioritySort
from .plugins.taint_toleration import TaintToleration
from .plugins.topology_spread import PodTopologySpread

REGISTRY = {cls.name: cls for cls in (
    PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
    NodeResourcesFit, NodeResourcesBalancedAllocation, PodTopologySpread, InterPodAffinity,
    ImageLocality, DefaultPreemption, DefaultBinder,
)}

#: (plugin, score weight) of the default profile, in kube-scheduler's order.
DEFAULT_PLUGINS = [
    ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0), ("TaintToleration", 3),
    ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("NodeResourcesBalancedAllocation", 1), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
    ("ImageLocality", 1), ("DefaultPreemption", 0), ("DefaultBinder", 0),
]


def known_plugins() -> set[str]:
    return set(REGISTRY)


def build_plugins(profile: dict) -> list:
    """Instantiate the profile's plugins: defaults minus disabled, plus enabled (re-weighted)."""
    disabled = {e["name"] for e in profile["plugins"]["disabled"]}
    entries = [] if "*" in disabled else [(n, w) for n, w in DEFAULT_PLUGINS if n not in disabled]
    order = [n for n, _ in entries]
    weights = dict(entries)
    for e in profile["plugins"]["enabled"]:
        if e["name"] not in weights:
            order.append(e["name"])
        weights[e["name"]] = e["weight"]
    args = {e["name"]: e["args"] for e in profile["pluginConfig"]}
    return [REGISTRY[n](args.get(n), weights[n]) for n in order]
