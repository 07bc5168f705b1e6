"""Plugin registry and profile assembly.

Maps plugin names (common.plugin_names) to classes and turns a profile from the config
(enabled, disabled, weights, pluginConfig args) into the ordered plugin list the framework
runs, in the default profile's order.
"""
from __future__ import annotations

from common.plugin_names import DEFAULT_PLUGINS

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
from .plugins.node_volume_limits import NodeVolumeLimits
from .plugins.priority_sort import PrioritySort
from .plugins.scheduling_gates import SchedulingGates
from .plugins.taint_toleration import TaintToleration
from .plugins.topology_spread import PodTopologySpread
from .plugins.volume_binding import VolumeBinding
from .plugins.volume_restrictions import VolumeRestrictions
from .plugins.volume_zone import VolumeZone

REGISTRY = {cls.name: cls for cls in (
    SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
    NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
    NodeResourcesBalancedAllocation, PodTopologySpread, InterPodAffinity,
    ImageLocality, DefaultPreemption, DefaultBinder,
)}


def build_plugins(profile: dict, handle, default_args: dict, registry: dict | None = None) -> list:
    """Instantiate the profile's plugins: defaults minus disabled, plus enabled (re-weighted),
    each with its pluginConfig args laid over `default_args` for it. `registry` (name ->
    class, default REGISTRY) is where they are found, as kube's out-of-tree registry."""
    registry = REGISTRY if registry is None else registry
    disabled = {e["name"] for e in profile["plugins"]["disabled"]}
    entries = [] if "*" in disabled else [(n, w) for n, w in DEFAULT_PLUGINS if n not in disabled]
    order = [n for n, _ in entries]
    weights = dict(entries)
    for e in profile["plugins"]["enabled"]:
        if e["name"] not in weights:
            order.append(e["name"])
        weights[e["name"]] = e["weight"]
    args = {name: dict(a) for name, a in default_args.items()}
    for e in profile["pluginConfig"]:
        args[e["name"]] = {**args.get(e["name"], {}), **e["args"]}
    return [registry[n](handle, args.get(n), weights[n]) for n in order]
