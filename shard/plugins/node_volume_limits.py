"""NodeVolumeLimits (kube's CSILimits): the volumes a pod adds on a node, counted per CSI
driver with those of the pods already there, must stay within the node's CSINode allocatable
count for that driver (common.scheduling.volumes.volume_limits has kube's rules)."""
from __future__ import annotations

import uuid

from common.plugins import node_volume_limits
from common.scheduling.volumes import counts_volumes, volume_limits
from ..framework import SKIP, Plugin, Status


class NodeVolumeLimits(Plugin, node_volume_limits.NodeVolumeLimits):
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        #: kube names a claim not yet bound after a random prefix (randomVolumeIDPrefix), so
        #: it never equals a real volume handle
        self.prefix = uuid.uuid4().hex

    def pre_filter(self, state, pod):
        return None if counts_volumes(pod) else Status(SKIP)

    def filter(self, state, pod, info):
        refusal = volume_limits(pod, info.name, info.pods.values(), self.handle.volumes, self.prefix)
        return None if refusal is None else Status(refusal.code, *refusal.reasons)
