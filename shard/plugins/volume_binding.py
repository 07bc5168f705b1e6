"""VolumeBinding: the pod's PersistentVolumeClaims must be bindable on the node.

PreFilter sorts the claims (common.scheduling.volumes.binding_claims: missing, lost or deleting claims
and unbound Immediate ones keep the pod off every node); Filter checks, per node, that bound
claims' volumes admit it and that every claim waiting for its first consumer can be matched
to an available volume or provisioned there; Reserve assumes the chosen volumes and
provisioning nodes in the shard's view, so the next cycles do not take them again, and
Unreserve forgets them. PreBind (writing the bindings and waiting for the claims to bind) is
the binder's (common.scheduling.volume_binding), never the shard's: the wait would block its loop.
Score is kube-scheduler v1.37's (StorageCapacityScoring, on by default since v1.37): per
storage class, the claims' requests over the capacity of the volumes the node's plan binds them
to, through the args' shape, averaged over the classes. Claims to provision score by the
node's storage capacity in kube, which shardsched does not model (no CSIStorageCapacity):
kube gives them 0 as well when no capacity is published.
"""
from __future__ import annotations

from common.plugins import volume_binding
from common.scheduling.volumes import PodVolumes, binding_claims, binding_refusal, find_pod_volumes
from ..framework import SKIP, Plugin, Status
from .scoring import MAX_NODE_SCORE, broken_linear

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
    def __init__(self, handle, args=None, weight=1):
        super().__init__(handle, args, weight)
        scale = MAX_NODE_SCORE // 10  # the args' scores are 0..10 (MaxCustomPriorityScore)
        self.shape = [(p["utilization"], p["score"] * scale) for p in self.args["shape"]]

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

    def pre_score(self, state, pod, rows):
        s = state.get(STATE)
        if s is None or not any(plan and plan.static for plan in s.by_node.values()):
            return Status(SKIP)  # no node binds an existing volume: every score would be 0
        return None

    def score(self, state, pod, info) -> int:
        plan = state[STATE].by_node.get(info.name)
        if not plan or not plan.static:
            return 0
        classes: dict[str, list] = {}
        for pv, claim in plan.static:
            used = classes.setdefault(pv.class_name, [0, 0])
            used[0] += claim.request
            used[1] += pv.capacity
        total = sum(self._class_score(requested, capacity) for requested, capacity in classes.values())
        return int(total / len(classes) + 0.5)  # Go's math.Round of a non-negative mean

    def _class_score(self, requested: int, capacity: int) -> int:
        """The shape at the class's utilisation (full when it has no room), 0..100."""
        utilization = 100 if capacity == 0 or requested > capacity else requested * 100 // capacity
        return broken_linear(self.shape, utilization)

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
