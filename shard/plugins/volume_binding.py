"""VolumeBinding: the pod's PersistentVolumeClaims must be bindable on the node.

PreFilter sorts the claims (common.scheduling.volumes.binding_claims: missing, lost or deleting claims
and unbound Immediate ones keep the pod off every node); Filter checks, per node, that bound
claims' volumes admit it and that every claim waiting for its first consumer can be matched
to an available volume or provisioned there; Reserve assumes the chosen volumes and
provisioning nodes in the shard's view, so the next cycles do not take them again, and
Unreserve forgets them. PreBind (writing the bindings and waiting for the claims to bind) is
the binder's (common.scheduling.volume_binding), never the shard's: the wait would block its loop.
Scoring needs StorageCapacityScoring, off by default in kube v1.33: there is none.
"""
from __future__ import annotations

from common.plugins import volume_binding
from common.scheduling.volumes import PodVolumes, binding_claims, binding_refusal, find_pod_volumes
from ..framework import SKIP, Plugin, Status

STATE = "VolumeBinding"


class _State:
    """The pod's claims and the plan found for each node filtered (kube's stateData, which
    its Clone shares rather than copies)."""

    __slots__ = ("claims", "by_node", "reserved")

    def __init__(self, claims):
        self.claims = claims
        self.by_node: dict[str, PodVolumes] = {}
        self.reserved: PodVolumes | None = None


def planned_volumes(state, node_name: str) -> PodVolumes | None:
    """The volume bindings the cycle chose for its node, or None (nothing to bind)."""
    s = state.get(STATE)
    if s is None:
        return None
    plan = s.by_node.get(node_name)
    return plan if plan else None


class VolumeBinding(Plugin, volume_binding.VolumeBinding):
    def pre_filter(self, state, pod):
        claims, refusal = binding_claims(pod, self.handle.volumes)
        if refusal is not None:
            return Status(refusal.code, *refusal.reasons)
        if claims is None:
            return Status(SKIP)
        state[STATE] = _State(claims)
        return None

    def filter(self, state, pod, info):
        s = state[STATE]
        plan, reasons = find_pod_volumes(s.claims, info.node, self.handle.volumes)
        refusal = binding_refusal(reasons)
        if refusal is not None:
            return Status(refusal.code, *refusal.reasons)
        s.by_node[info.name] = plan
        return None

    def reserve(self, state, pod, node_name: str):
        plan = planned_volumes(state, node_name)
        if plan is not None:
            self.handle.volumes.assume(plan, node_name)
            state[STATE].reserved = plan
        return None

    def unreserve(self, state, pod, node_name: str) -> None:
        s = state.get(STATE)
        if s is not None and s.reserved is not None:
            self.handle.volumes.revert(s.reserved)
            s.reserved = None
