"""The binder's own picture of the cluster, which it trusts instead of the shards' messages.

It follows the store's watch: every node, every bound pod, the pending pods of this
scheduler (held as the store's documents and parsed once, when a decision first names one:
`pending_pod`), the PodDisruptionBudgets, the PodGroups with their members, and the
Namespaces (their labels, which pod affinity's namespaceSelector reads). Decisions
that pass the checks are *reserved*: counted at once as assumed pods (common.scheduling.accounting, as
a shard counts its own decisions), their victims claimed, until the commit settles them. So two decisions in
flight can never both take the last room on a node or break a constraint between them.

A reservation ends in exactly one of three ways (`settle`): bound (the pod stays counted
until the watch confirms it), refused (forgotten at once), or in doubt (the store failed
part-way: it stays counted for a short while, until the watch shows what really happened or
the doubt expires). Not thread-safe: the binder calls it under one lock.
"""
from __future__ import annotations

import logging
import time
import uuid

from common.model.changes import node_unchanged
from common.scheduling.constraints import ConstrainedAccounting, ConstraintIndex
from common.runtime.intake import (Intake, Kind, bound_from_patch, device_kinds, status_hinted, status_update,
                                   volume_kinds, workload_kinds)
from common.model.objects import raw_pod_key
from common.model.podgroup import NATIVE_KIND, GroupIndex, index_key_of, may_name_group
from common.model.workloads import Namespaces
from common.scheduling.device_state import DeviceState
from common.scheduling.volumes import VolumeState
from common.scheduling.workloads import Workloads

log = logging.getLogger(__name__)


class Reservation:
    __slots__ = ("pod", "node", "victims", "delete", "partition", "volumes", "devices")

    def __init__(self, pod, node: str, victims: list, delete: set, partition: int, volumes=None, devices=None):
        self.pod = pod
        self.node = node
        self.victims = victims      # [(key, uid)]
        self.delete = delete        # victim keys deleted outright (their eviction breaks a PDB)
        self.partition = partition
        self.volumes = volumes      # common.scheduling.volumes.PodVolumes to bind first (PreBind), or None
        self.devices = devices      # (claims, [(claim, allocation)]) to write first (PreBind), or None


class BinderView:
    def __init__(self, scheduler_names, assume_ttl: float = 30.0, doubt_s: float = 20.0,
                 clock=time.monotonic):
        #: spec.schedulerName values this scheduler serves
        self.names = frozenset(scheduler_names)
        self.doubt_s = doubt_s
        self.clock = clock
        self.acc = ConstrainedAccounting(assume_ttl, clock)  # in doubt: acc.hold
        self.namespaces = self.acc.constraints.namespaces = Namespaces()
        #: Services and controllers: PodTopologySpread's default constraints select by them
        #: (a profile's List may hold DoNotSchedule ones, which the binder checks too)
        self.workloads = Workloads()
        #: pod key -> pending pod of this scheduler: its Pod once parsed, else the store's
        #: document (a dict) as the watch or the list showed it. Parsed when first needed
        #: (`pending_pod`), not when listed: at start the binder listed thousands of pending
        #: pods and parsed each before it could serve (5,000: 0.03-0.04 s of CPU alone, up to
        #: 0.1 s at start, four processes on two cores); each is parsed once all the same.
        self.pending: dict = {}
        self.priority_classes: dict = {}
        self.pdbs: dict = {}
        self.reserved: dict[str, Reservation] = {}
        self.claimed: dict[str, str] = {}  # victim key -> key of the pod it is claimed for
        self.groups = GroupIndex()
        #: claims, volumes, classes and CSINodes, with the volume bindings reserved laid over
        self.volumes = VolumeState()
        #: DRA's claims, classes and slices, with the allocations reserved laid over
        self.devices = DeviceState()
        #: NodeVolumeLimits' prefix for the volume a claim not yet bound will get
        self.volume_prefix = uuid.uuid4().hex
        #: what the view keeps of each kind (common.runtime.intake); the binder's informer feeds it
        self.intake = Intake([
            Kind("PriorityClass", keep=self.priority_classes),
            Kind("PodDisruptionBudget", keep=self.pdbs),
            *volume_kinds(self.volumes),
            *device_kinds(self.devices),
            Kind("Namespace", put=self.namespaces.set, drop=self.namespaces.remove),
            *workload_kinds(self.workloads),
            Kind("Node", handle=self._apply_node, current=self._node, unchanged=node_unchanged),
            Kind("PodGroup", handle=self._apply_group),
            Kind(NATIVE_KIND, handle=self._apply_group),
            Kind("Pod", handle=self._apply_pod, take_status=self._takes_status,
                 take_undecoded=self._takes_binding),
        ], priority_classes=self.priority_classes, logger=log)
        self.errors = self.intake.errors

    @property
    def nodes(self):
        return self.acc.nodes

    @property
    def constraints(self) -> ConstraintIndex:
        return self.acc.constraints

    @property
    def claims_in_use(self):
        return self.acc.claims_in_use

    # --- following the store --------------------------------------------------------------

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        """One store event (a method, not the intake's: `reset` builds a new intake)."""
        self.intake.apply(type_, kind, obj)

    def _node(self, name: str):
        info = self.acc.nodes.get(name)
        return info.node if info is not None else None

    def _apply_node(self, type_: str, obj: dict) -> None:
        """(A heartbeat is skipped before this, unparsed.)"""
        name = (obj.get("metadata") or {}).get("name")
        if type_ == "DELETED":
            self.acc.remove_node(name)
        elif (node := self.intake.parse(obj)) is not None:
            self.acc.set_node(node)

    def _apply_group(self, type_: str, obj: dict) -> None:
        if self.groups.apply_group(type_, obj) is None and type_ != "DELETED":
            self.intake.report(self.groups.errors[index_key_of(obj)])

    def _apply_pod(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)
        self.groups.apply_pod(type_, key, obj)
        if type_ == "DELETED":
            self.pending.pop(key, None)
            self.acc.remove_pod(key)
            return
        spec = obj.get("spec") or {}
        if not spec.get("nodeName"):
            if (spec.get("schedulerName") or "default-scheduler") not in self.names:
                self.pending.pop(key, None)
                return
            self.pending[key] = obj  # parsed when a decision names it (pending_pod)
            return
        pending = self.pending.pop(key, None)
        if pending.__class__ is dict:
            pending = None  # never parsed here: no decision of ours named it
        if pending is None and self._refreshed(key, obj):
            return
        pod = self._own_binding(key, pending, obj) or self.intake.parse(obj)
        if pod is not None:
            self.acc.set_pod(pod)

    def pending_pod(self, key: str):
        """The pending pod of this scheduler under `key`, parsed now if it was held as its
        document (then kept parsed); None when there is none, or when it cannot be parsed:
        then reported by the intake (its object and field, in `errors` and the log, once),
        dropped, and a decision for it is refused as for a pod the binder does not hold."""
        pod = self.pending.get(key)
        if pod.__class__ is not dict:
            return pod
        pod = self.intake.parse(pod)
        if pod is None:
            del self.pending[key]
        else:
            self.pending[key] = pod
        return pod

    def _takes_status(self, type_: str, key: str, status: bytes) -> bool:
        """A pod event taken undecoded (Kind.take_status): a status-only write (its
        `status` hint) of a bound pod the view counts, not a group member (the group index
        reads members' documents), swapped in from the hint alone; with --churn, every pod's
        Running write."""
        if type_ != "MODIFIED" or key in self.groups.group_of or key in self.pending:
            return False
        pod = status_hinted(self.acc.counted(key), status)
        return pod is not None and self.acc.refresh_pod(pod)

    def _takes_binding(self, type_: str, key: str, document: bytes, event) -> bool:
        """A pod event handed over undecoded (Kind.take_undecoded): the binding of a pending
        pod the view parsed, taken from its patch alone (common.runtime.intake.
        bound_from_patch) as _apply_pod takes it from the document, when it concerns no pod
        group (read on the document's bytes; the group index reads members' documents):
        every binding the binder commits. What it declines is decoded and applied."""
        if type_ != "MODIFIED" or key in self.groups.group_of or may_name_group(document):
            return False
        pending = self.pending_pod(key)
        pod = bound_from_patch(pending, event) if pending is not None else None
        if pod is None:
            return False
        del self.pending[key]
        self.acc.set_pod(pod)
        return True

    def _refreshed(self, key: str, obj: dict) -> bool:
        """A status-only update of a bound pod we count: swapped in without a parse."""
        counted = self.acc.counted(key)
        if counted is None or counted.node_name != obj["spec"]["nodeName"]:
            return False
        pod = status_update(counted, obj)
        return pod is not None and self.acc.refresh_pod(pod)

    def _own_binding(self, key: str, pending, obj: dict):
        """The pending pod we parsed, as its binding shows it, rather than parsed again."""
        uid = (obj.get("metadata") or {}).get("uid")
        if pending is not None and pending.uid == uid:
            return pending.bound_copy(obj)
        counted = self.acc.counted(key) if self.acc.is_assumed(key) else None
        if counted is not None and counted.uid == uid and self.acc.pod_node.get(key) == obj["spec"]["nodeName"]:
            return counted.bound_copy(obj)
        return None

    def reset(self) -> None:
        """Before a relist: forget what the watch told us. Reservations stay: their commits
        are still running and settle them."""
        reserved, claimed, prefix = self.reserved, self.claimed, self.volume_prefix
        self.__init__(self.names, self.acc.assume_ttl, self.doubt_s, self.clock)
        self.reserved, self.claimed, self.volume_prefix = reserved, claimed, prefix
        for r in reserved.values():  # their allocations are still in flight: no device given twice meanwhile
            for claim, allocation in (r.devices[1] if r.devices is not None else ()):
                self.devices.assume(claim, allocation)

    def priority_of(self, key: str) -> int | None:
        """The priority of a pod the view knows (counted on a node, or pending)."""
        pod = self.acc.counted(key) or self.pending_pod(key)
        return None if pod is None else pod.priority

    # --- reservations ---------------------------------------------------------------------

    def bound_to(self, key: str) -> str | None:
        """The node the store has `key` bound to, as the watch shows it (not a reservation)."""
        return None if self.acc.is_assumed(key) else self.acc.pod_node.get(key)

    def reserve(self, r: Reservation) -> None:
        self.acc.assume(r.pod, r.node)
        self.reserved[r.pod.key] = r
        if r.volumes is not None:
            self.volumes.assume(r.volumes, r.node)
        if r.devices is not None:
            for claim, allocation in r.devices[1]:
                self.devices.assume(claim, allocation)
        for key, _ in r.victims:
            self.claimed[key] = r.pod.key

    def settle(self, key: str, outcome: str) -> None:
        """End a reservation: outcome "bound", "refused" or "doubt" (see the module doc)."""
        r = self.reserved.pop(key, None)
        if r is None:
            return
        for victim, _ in r.victims:
            if self.claimed.get(victim) == key:
                del self.claimed[victim]
        if outcome == "refused":
            self.acc.forget(key)
            if r.volumes is not None:  # (what PreBind wrote stays written, as in kube)
                self.volumes.revert(r.volumes)
            if r.devices is not None:  # (an allocation written stays until the claim controller frees it)
                for claim, _ in r.devices[1]:
                    self.devices.revert(claim.key)
        elif outcome == "doubt":
            self.acc.hold(key, self.doubt_s)
        else:
            for victim, _ in r.victims:  # gone from the store; the watch will say so too
                self.acc.remove_pod(victim)

    def expire(self) -> None:
        """Forget assumptions (bound or in doubt) the watch never confirmed in time."""
        for key in self.acc.expire():
            r = self.reserved.get(key)
            if r is not None:  # its commit is still running: keep counting it
                self.acc.assume(r.pod, r.node)
            else:
                log.info("assumption of %s expired without its binding showing", key)
