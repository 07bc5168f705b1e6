"""DynamicResources' framework side (common/plugins/dynamic_resources.py says what and why):
kube v1.37's PreEnqueue, PreFilter, Filter, Score and Reserve over the shard's DeviceState.

PreFilter resolves the pod's claims and takes one copy of the devices given (the claims'
allocations plus the ones this shard has in flight); Filter allocates, per node, the claims
not yet allocated (common.scheduling.dra.allocate) and keeps the result for Score and
Reserve; an allocated claim only lets the pod on the nodes its allocation's selector allows.

The vectorised Filter first turns away, in one numpy pass, the nodes with fewer free devices
a request's selectors accept than the pod's requests of those selectors ask for (the
DeviceState's counts, kept as devices are given and given back): a necessary condition.
Where it is also sufficient (one claim to allocate, one ExactCount request without
alternatives, constraints or admin access, every slice node-local: the allocator then takes
the first `count` free candidates), no allocation is tried while filtering, only on the node
Reserve is given; otherwise the nodes that pass are allocated one by one. The per-node
Filter stays the reference (preemption's dry runs, the tests' comparison).
Reserve lays the node's allocations over the DeviceState (the next cycles do not give those
devices again), Unreserve takes them off. PreBind (writing the allocation and reservedFor
before the binding) is the binder's, which allocates again against its own view.
"""
from __future__ import annotations

import numpy as np

from common.model.dra import EXACT_COUNT
from common.plugins import dynamic_resources as dra_spec
from common.scheduling.device_state import pod_claims
from common.scheduling.dra import CLASS_MISSING, AllocatorError, allocate, score, with_config
from ..framework import ERROR, SKIP, Plugin, PostFilterResult, Status, unresolvable, unschedulable
from .scoring import default_normalize

STATE = "DynamicResources"


class _State:
    """The pod's claims, those to allocate, the devices given (as the cycle found them), and
    the allocations found per node (kube's stateData)."""
    __slots__ = ("claims", "to_allocate", "pinned", "allocated", "classes", "by_node", "reserved", "need",
                 "deferred")

    def __init__(self, claims=(), to_allocate=(), pinned=(), allocated=frozenset(), classes=None):
        self.claims, self.to_allocate, self.pinned, self.allocated = claims, to_allocate, pinned, allocated
        self.classes = classes or {}
        self.by_node: dict = {}
        self.reserved: list = []
        #: [(Matching, devices asked)] the vectorised Filter checks (None: not worked out yet)
        self.need = None
        #: whether passing those counts is enough (no allocation tried while filtering)
        self.deferred = False


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
        # The devices given, not a copy: the loop is the DeviceState's only writer and runs
        # a cycle from PreFilter to Reserve without applying an event (a copy cost a pass
        # over every device given, per pod).
        state[STATE] = _State(claims, to_allocate, pinned, devices.allocated() if to_allocate else frozenset(),
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

    def filter_vec(self, state, pod, table, rows):
        s = state[STATE]
        ids = range(rows.start, rows.stop) if isinstance(rows, slice) else rows
        names, infos = table.names, table.infos
        ok = np.ones(len(ids), dtype=bool)
        if s.pinned:
            ok &= np.fromiter((all(c.allocation.allows(infos[r].node.name, infos[r].node.labels) for c in s.pinned)
                               for r in ids), dtype=bool, count=len(ids))
        if not s.to_allocate:
            return ok
        if s.need is None:
            s.need, s.deferred = _needs(s.to_allocate, self.handle.devices)
        for matching, count in s.need:
            free = matching.free
            ok &= np.fromiter((free.get(names[r], 0) for r in ids), dtype=np.int64, count=len(ids)) >= count
            if matching.broken:
                broken = matching.broken
                ok &= np.fromiter((names[r] not in broken for r in ids), dtype=bool, count=len(ids))
        if s.deferred:
            return ok
        for i in np.flatnonzero(ok):
            ok[i] = self.filter(state, pod, infos[ids[i]]) is None
        return ok

    def _allocations(self, s, node_name: str):
        """The node's allocations: found by Filter, or (a deferred pod) now."""
        got = s.by_node.get(node_name)
        if got is None and s.deferred:
            table = self.handle.table
            row = table.row_of.get(node_name)
            if row is not None:
                node = table.infos[row].node
                devices = self.handle.devices
                got = allocate(s.to_allocate, node.name, node.labels, devices.inventory(), devices.classes,
                               s.allocated, devices.cel)
                if got is not None:
                    s.by_node[node_name] = got
        return got

    def pre_score(self, state, pod, rows):
        s = state.get(STATE)
        if s is None or not any(r.alternatives for c in s.to_allocate for r in c.requests):
            return Status(SKIP)  # only prioritized alternatives score
        return None

    def score(self, state, pod, info) -> int:
        s = state[STATE]
        got = self._allocations(s, info.name)
        return 0 if got is None else score(s.to_allocate, got)

    def normalize(self, state, pod, scores) -> None:
        default_normalize(scores)

    def reserve(self, state, pod, node_name: str):
        s = state.get(STATE)
        if s is None or not s.to_allocate:
            return None
        try:
            got = self._allocations(s, node_name)
        except AllocatorError as e:
            return Status(ERROR, str(e))
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
            # kube v1.37 words it only when an allocated claim is what keeps the pod off the
            # nodes (nothing of its own to deallocate); a claim still to allocate that fits
            # nowhere leaves DefaultPreemption's words alone (seen side by side with
            # kube-scheduler: tests/test_kube_dra.py)
            out.status = unschedulable(dra_spec.STILL_NOT_SCHEDULABLE) if s.pinned else unschedulable()
        return out


def _needs(claims, devices) -> tuple[list, bool]:
    """([(Matching, devices asked)] per selector set of the claims' ExactCount requests
    without alternatives or admin access, whether passing them is enough to allocate). With
    slices that are not node-local (allNodes, nodeSelector) nothing is counted."""
    if devices.inventory().shared:
        return [], False
    asked: dict = {}
    for claim in claims:
        for r in claim.requests:
            if r.alternatives or r.mode != EXACT_COUNT or r.admin_access:
                continue
            m = devices.free_matching(devices.classes[r.class_name], r, claim.key)
            asked[id(m)] = (m, asked.get(id(m), (m, 0))[1] + r.count)
    only = claims[0].requests[0] if len(claims) == 1 and len(claims[0].requests) == 1 else None
    simple = (only is not None and not claims[0].constraints and not only.alternatives
              and only.mode == EXACT_COUNT and not only.admin_access)
    return list(asked.values()), simple


def _missing_class(claim, classes: dict) -> str | None:
    """kube's validateDeviceClass over a claim's requests and their alternatives."""
    for request in claim.requests:
        for r in (request.alternatives or (request,)):
            if r.class_name not in classes:
                return CLASS_MISSING.format(request=r.name, cls=r.class_name)
    return None
