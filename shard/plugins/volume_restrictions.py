"""VolumeRestrictions: two pods on one node may not share an inline disk (GCE PD, AWS EBS,
iSCSI, RBD) unless both mount it read-only, and a ReadWriteOncePod claim another pod already
mounts, anywhere, keeps the pod off every node (common.scheduling.volumes has kube's rules)."""
from __future__ import annotations

from common.plugins import volume_restrictions
from common.scheduling.volumes import (DISK_CONFLICT, RWOP_CONFLICT, disks_conflict, has_inline_disks,
                                       rwop_claims, rwop_conflicts, rwop_uses)
from ..framework import SKIP, Plugin, Status, unschedulable

STATE = "VolumeRestrictions"


class _State:
    """The pod's ReadWriteOncePod claim names and how many placed pods mount one of them;
    preemption's dry runs move the count (kube's preFilterState)."""

    __slots__ = ("names", "conflicts", "disks")

    def __init__(self, names, conflicts: int, disks: bool):
        self.names, self.conflicts, self.disks = names, conflicts, disks

    def clone(self) -> "_State":
        return _State(self.names, self.conflicts, self.disks)


class VolumeRestrictions(Plugin, volume_restrictions.VolumeRestrictions):
    def pre_filter(self, state, pod):
        names, refusal = rwop_claims(pod, self.handle.volumes)
        if refusal is not None:
            return Status(refusal.code, *refusal.reasons)
        conflicts = rwop_conflicts(pod, names, self.handle.claims_in_use)
        disks = has_inline_disks(pod)
        if not disks and not conflicts:
            return Status(SKIP)
        state[STATE] = _State(names, conflicts, disks)
        return None

    def filter(self, state, pod, info):
        s = state[STATE]
        if s.disks and disks_conflict(pod, info.pods.values()):
            return unschedulable(DISK_CONFLICT)
        if s.conflicts > 0:
            return unschedulable(RWOP_CONFLICT)
        return None

    def add_pod(self, state, pod, added, info) -> None:
        s = state.get(STATE)
        if s is not None:
            s.conflicts += rwop_uses(added, s.names)

    def remove_pod(self, state, pod, removed, info) -> None:
        s = state.get(STATE)
        if s is not None:
            s.conflicts -= rwop_uses(removed, s.names)
