"""VolumeZone: a pod whose volumes are bound to zones or regions fits only nodes in those
(kube's rules: common.scheduling.volumes)."""
from __future__ import annotations

from ..scheduling.volumes import ZONE_CONFLICT, zone_fits, zone_topologies
from .interface import FilterPlugin, PreFilterPlugin
from .spec import PluginSpec


def check(j):
    if not j.pod.volumes:
        return None
    topologies, refusal = zone_topologies(j.pod, j.view.volumes)
    if refusal is None and topologies and not zone_fits(topologies, j.node.labels):
        return f"VolumeZone: {ZONE_CONFLICT}"
    return None if refusal is None else f"VolumeZone: {refusal.message()}"


class VolumeZone(PluginSpec, PreFilterPlugin, FilterPlugin):
    name = "VolumeZone"
    binder_check = staticmethod(check)
    binder_check_always = True
