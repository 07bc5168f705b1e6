"""VolumeRestrictions: inline disks a pod shares with the node's pods, and ReadWriteOncePod
claims another pod mounts anywhere, keep it off (kube's rules: common.scheduling.volumes)."""
from __future__ import annotations

from ..scheduling.volumes import (DISK_CONFLICT, RWOP_CONFLICT, disks_conflict, rwop_claims, rwop_conflicts,
                                  rwop_uses)
from .interface import FilterPlugin, PreFilterPlugin
from .spec import PluginSpec


def check(j):
    """Inline disks shared on the node, and ReadWriteOncePod claims other pods mount
    anywhere, reservations of other decisions included: two shards cannot both give one
    such claim to a pod."""
    if not j.pod.volumes:
        return None
    vs = j.view.volumes
    names, refusal = rwop_claims(j.pod, vs)
    if refusal is not None:
        return f"VolumeRestrictions: {refusal.message()}"
    if any(v.disk is not None for v in j.pod.volumes) and disks_conflict(j.pod, j.remaining()):
        return f"VolumeRestrictions: {DISK_CONFLICT}"
    conflicts = rwop_conflicts(j.pod, names, j.view.claims_in_use) - sum(rwop_uses(v, names) for v in j.victims)
    return f"VolumeRestrictions: {RWOP_CONFLICT}" if conflicts > 0 else None


class VolumeRestrictions(PluginSpec, PreFilterPlugin, FilterPlugin):
    name = "VolumeRestrictions"
    resolvable_by_preemption = True  # both conflicts go away with the pods that cause them
    binder_check = staticmethod(check)
    binder_check_always = True
