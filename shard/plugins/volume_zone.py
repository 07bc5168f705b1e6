"""VolumeZone: a pod whose bound volumes carry zone or region labels fits only nodes in
those zones and regions (common.scheduling.volumes has kube's rules)."""
from __future__ import annotations

from common.plugins import volume_zone
from common.scheduling.volumes import ZONE_CONFLICT, zone_fits, zone_topologies
from ..framework import SKIP, Plugin, Status, unresolvable

STATE = "VolumeZone"


class VolumeZone(Plugin, volume_zone.VolumeZone):
    def pre_filter(self, state, pod):
        topologies, refusal = zone_topologies(pod, self.handle.volumes)
        if refusal is not None:
            return Status(refusal.code, *refusal.reasons)
        if not topologies:
            return Status(SKIP)
        state[STATE] = topologies
        return None

    def filter(self, state, pod, info):
        return None if zone_fits(state[STATE], info.node.labels) else unresolvable(ZONE_CONFLICT)
