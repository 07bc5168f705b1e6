"""The plugin registry: every scheduling plugin's semantics by name.

One module per plugin (common/plugins/<plugin>.py) holds what every role knows of it: its
name, its extension points (the interfaces of interface.py it derives from), its arguments'
kind, the binder's re-check of its filter, its queueing hints (spec.py has the fields). The
shard's adapter of it (shard/plugins/<plugin>.py) derives from its class; every other module
reaches it through this registry, never by importing the plugin's module
(tests/test_layers.py keeps it so).

Adding a plugin: its module here, and its class in PLUGINS below.
"""
from __future__ import annotations

from . import (balanced_allocation, coscheduling, default_binder, default_preemption, dynamic_resources,
               gang_scheduling, image_locality,
               inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable,
               node_volume_limits, priority_sort, scheduling_gates, taint_toleration, topology_spread, volume_binding,
               volume_restrictions, volume_zone)
from .args import ArgsKind
from .interface import EXTENSION_POINTS, PAIRED_POINTS
from .spec import PluginSpec, QueueingHints

#: Every plugin, in the order their arguments are resolved (the first error is reported).
PLUGINS: tuple[type[PluginSpec], ...] = (
    priority_sort.PrioritySort, node_unschedulable.NodeUnschedulable, node_name.NodeName,
    taint_toleration.TaintToleration, node_ports.NodePorts, image_locality.ImageLocality,
    default_binder.DefaultBinder, default_preemption.DefaultPreemption, inter_pod_affinity.InterPodAffinity,
    node_affinity.NodeAffinity, balanced_allocation.NodeResourcesBalancedAllocation,
    node_resources_fit.NodeResourcesFit, topology_spread.PodTopologySpread, scheduling_gates.SchedulingGates,
    volume_restrictions.VolumeRestrictions, node_volume_limits.NodeVolumeLimits, volume_zone.VolumeZone,
    volume_binding.VolumeBinding, dynamic_resources.DynamicResources, gang_scheduling.GangScheduling,
    coscheduling.Coscheduling,
)


def _register(plugins) -> dict[str, type[PluginSpec]]:
    """name -> plugin class, each checked: named once, extending at least one point, with an
    ArgsKind and well-formed hints."""
    specs = {}
    for p in plugins:
        if not (isinstance(p, type) and issubclass(p, PluginSpec)) or not p.name or p.name in specs:
            raise TypeError(f"{p!r}: a plugin is a PluginSpec subclass with a name of its own")
        if not p.points():
            raise TypeError(f"{p.name} extends no extension point (derive from common.plugins.interface's)")
        if not isinstance(p.args_kind, ArgsKind):
            raise TypeError(f"{p.name}.args_kind is not an ArgsKind")
        if p.queueing_hints is not None and not isinstance(p.queueing_hints, QueueingHints):
            raise TypeError(f"{p.name}.queueing_hints is not QueueingHints")
        specs[p.name] = p
    return specs


#: plugin name -> its class (its semantics): the registry.
SPECS: dict[str, type[PluginSpec]] = _register(PLUGINS)
#: Every plugin a profile may name.
KNOWN = frozenset(SPECS)
#: The extension points each plugin implements, as kube-scheduler v1.37's plugin of that name
#: does (DefaultPreemption's PreEnqueue, for kube's asynchronous preemption, aside): a profile
#: may enable or disable a plugin at these.
POINTS = {name: spec.points() for name, spec in SPECS.items()}

__all__ = ["ArgsKind", "EXTENSION_POINTS", "KNOWN", "PAIRED_POINTS", "PLUGINS", "POINTS", "PluginSpec",
           "QueueingHints", "SPECS"]
