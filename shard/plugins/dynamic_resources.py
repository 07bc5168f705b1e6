"""DynamicResources' framework side (common/plugins/dynamic_resources.py says what and why):
kube v1.37's PreEnqueue, PreFilter, Filter, Score and Reserve over the shard's DeviceState.

PreFilter resolves the pod's claims and takes one copy of the devices given (the claims'
allocations plus the ones this shard has in flight); Filter allocates, per node, the claims
not yet allocated (common.scheduling.dra.allocate) and keeps the result for Score and
Reserve; an allocated claim only lets the pod on the nodes its allocation's selector allows.
Reserve lays the node's allocations over the DeviceState (the next cycles do not give those
devices again), Unreserve takes them off. PreBind (writing the allocation and reservedFor
before the binding) is the binder's, which allocates again against its own view.
"""
from __future__ import annotations

from common.plugins import dynamic_resources as dra_spec
from common.scheduling.device_state import pod_claims
from common.scheduling.dra import CLASS_MISSING, AllocatorError, allocate, score, with_config
from ..framework import ERROR, SKIP, Plugin, PostFilterResult, Status, unresolvable, unschedulable
from .scoring import default_normalize

STATE = "DynamicResources"


class _State:
    """The pod's claims, those to allocate, the devices given when the cycle began, and the
    allocations found per node (kube's stateData)."""
    __slots__ = ("claims", "to_allocate", "pinned", "allocated", "classes", "by_node", "reserved")

    def __init__(self, claims=(), to_allocate=(), pinned=(), allocated=frozenset(), classes=None):
        self.claims, self.to_allocate, self.pinned, self.allocated = claims, to_allocate, pinned, allocated
        self.classes = classes or {}
        self.by_node: dict = {}
        self.reserved: list = []


def planned_claims(state, node_name: str):
    """(the pod's claims, [(claim, allocation)]) the cycle chose for its node, for a PreBind
    run in place (simulate's store committer), or None when the pod has no claims."""
    s = state.get(STATE)
    if s is None or not s.claims:
        return None
    return s.claims, list(zip(s.to_allocate, with_config(s.to_allocate, s.by_node.get(node_name, []), s.classes)))


class DynamicResources(Plugin, dra_spec.DynamicResources):
    def pre_enqueue(self, pod):
        if not pod.resource_claims:
            return None
        _, why = pod_claims(pod, self.handle.devices.claims)
        return None if why is None else unresolvable(why)

    def pre_filter(self, state, pod):
        if not pod.resource_claims:
            state[STATE] = _State()
            return Status(SKIP)
        devices = self.handle.devices
        claims, why = pod_claims(pod, devices.claims)
        if why is not None:
            state[STATE] = _State()
            return unresolvable(why)
        to_allocate, pinned = [], []
        for claim in claims:
            allocation = devices.allocation_of(claim)
            if claim.allocation is not None:
                if not claim.can_be_reserved() and not claim.reserved_for_pod(pod.uid):
                    state[STATE] = _State()  # (kube records the claims only once PreFilter passes)
                    return unresolvable(dra_spec.IN_USE)
                pinned.append(claim)
            elif allocation is not None:  # another pod of this shard is allocating it
                state[STATE] = _State()  # (kube records the claims only once PreFilter passes)
                return unresolvable(dra_spec.BEING_ALLOCATED.format(claim=claim.key))
            else:
                why = _missing_class(claim, devices.classes)
                if why is not None:
                    state[STATE] = _State()  # (kube records the claims only once PreFilter passes)
                    return unresolvable(why)
                to_allocate.append(claim)
        state[STATE] = _State(claims, to_allocate, pinned, frozenset(devices.allocated()) if to_allocate else frozenset(),
                              devices.classes)
        return None

    def filter(self, state, pod, info):
        s = state[STATE]
        node = info.node
        for claim in s.pinned:
            if not claim.allocation.allows(node.name, node.labels):
                return unresolvable(dra_spec.NOT_AVAILABLE)
        if not s.to_allocate:
            return None
        devices = self.handle.devices
        try:
            got = allocate(s.to_allocate, node.name, node.labels, devices.inventory(), devices.classes,
                           s.allocated, devices.cel)
        except AllocatorError as e:
            return Status(ERROR, str(e))
        if got is None:
            return unresolvable(dra_spec.CANNOT_ALLOCATE)
        s.by_node[node.name] = got
        return None

    def pre_score(self, state, pod, rows):
        s = state.get(STATE)
        if s is None or not any(r.alternatives for c in s.to_allocate for r in c.requests):
            return Status(SKIP)  # only prioritized alternatives score
        return None

    def score(self, state, pod, info) -> int:
        s = state[STATE]
        got = s.by_node.get(info.name)
        return 0 if got is None else score(s.to_allocate, got)

    def normalize(self, state, pod, scores) -> None:
        default_normalize(scores)

    def reserve(self, state, pod, node_name: str):
        s = state.get(STATE)
        if s is None or not s.to_allocate:
            return None
        got = s.by_node.get(node_name)
        if got is None:
            return Status(ERROR, "claim allocation not found for node")
        devices = self.handle.devices
        for claim, allocation in zip(s.to_allocate, got):
            devices.assume(claim, allocation)
            s.reserved.append(claim.key)
        return None

    def unreserve(self, state, pod, node_name: str) -> None:
        s = state.get(STATE)
        if s is not None:
            for key in s.reserved:
                self.handle.devices.revert(key)
            s.reserved = []

    def post_filter(self, state, pod, result) -> PostFilterResult:
        out = PostFilterResult()
        s = state.get(STATE)
        if s is None:
            out.status = Status(ERROR, dra_spec.NO_STATE)
        else:
            out.status = unschedulable(dra_spec.STILL_NOT_SCHEDULABLE) if s.claims else unschedulable()
        return out


def _missing_class(claim, classes: dict) -> str | None:
    """kube's validateDeviceClass over a claim's requests and their alternatives."""
    for request in claim.requests:
        for r in (request.alternatives or (request,)):
            if r.class_name not in classes:
                return CLASS_MISSING.format(request=r.name, cls=r.class_name)
    return None
