"""The shard's plugin classes by name, and profile assembly.

Maps each plugin of common's registry (common.plugins.SPECS: its semantics) to the shard's
adapter of it, checked when this module loads: every registered plugin has an adapter, and
each adapter derives from its plugin's class (so it has its name, extension points, args and
hints). Which plugins a profile runs, where, and with which arguments is common's business
(profile_plugins, plugin_args), shared with config validation and the binder.
"""
from __future__ import annotations

from common.plugins import SPECS

from .plugins.balanced_allocation import NodeResourcesBalancedAllocation
from .plugins.coscheduling import Coscheduling
from .plugins.gang_scheduling import GangScheduling
from .plugins.default_binder import DefaultBinder
from .plugins.default_preemption import DefaultPreemption
from .plugins.dynamic_resources import DynamicResources
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
    ImageLocality, DynamicResources, DefaultPreemption, DefaultBinder, GangScheduling, Coscheduling,
)}


def _check(registry: dict) -> None:
    """Every plugin of common's registry has exactly one adapter here, of its class."""
    if set(registry) != set(SPECS):
        raise TypeError(f"shard adapters {sorted(set(registry) ^ set(SPECS))} without a plugin in common.plugins, "
                        f"or the other way round")
    for name, cls in registry.items():
        if not issubclass(cls, SPECS[name]):
            raise TypeError(f"{cls.__qualname__} does not derive from common.plugins' {name}")


_check(REGISTRY)


def build_plugins(uses: list, args: dict, handle, registry: dict | None = None) -> list:
    """Instantiate a profile's plugins (common.config.profile_plugins' PluginUses, in order), each
    with its resolved arguments (common.config.plugin_args.profile_args); `registry` (name -> class,
    default REGISTRY) is where they are found, as kube's out-of-tree registry."""
    registry = REGISTRY if registry is None else registry
    return [registry[u.name](handle, args.get(u.name), u.weight) for u in uses]
