"""NodeVolumeLimits: a node attaches at most its CSINode's count of a driver's volumes (kube's
rules: common.scheduling.volumes.volume_limits)."""
from __future__ import annotations

from ..scheduling.volumes import volume_limits
from .interface import FilterPlugin, PreFilterPlugin
from .spec import PluginSpec


def check(j):
    if not j.pod.volumes:
        return None
    refusal = volume_limits(j.pod, j.node_name, j.remaining(), j.view.volumes, j.view.volume_prefix)
    return None if refusal is None else f"NodeVolumeLimits: {refusal.message()}"


class NodeVolumeLimits(PluginSpec, PreFilterPlugin, FilterPlugin):
    name = "NodeVolumeLimits"
    resolvable_by_preemption = True  # fewer pods on the node, fewer volumes attached
    binder_check = staticmethod(check)
    binder_check_always = True
