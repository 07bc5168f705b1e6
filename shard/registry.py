"""Plugin registry and profile assembly.

Maps plugin names (common.plugin_names) to classes; which plugins a profile runs, where, and
with which arguments is common's business (profile_plugins, plugin_args), shared with config
validation and the binder.
"""
from __future__ import annotations

from .plugins.balanced_allocation import NodeResourcesBalancedAllocation
from .plugins.coscheduling import Coscheduling
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
    ImageLocality, DefaultPreemption, DefaultBinder, Coscheduling,
)}


def build_plugins(uses: list, args: dict, handle) -> list:
    """Instantiate a profile's plugins (common.profile_plugins' PluginUses, in order), each
    with its resolved arguments (common.plugin_args.profile_args)."""
    return [REGISTRY[u.name](handle, args.get(u.name), u.weight) for u in uses]
