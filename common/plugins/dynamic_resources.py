"""DynamicResources: a pod's ResourceClaims are allocated devices on its node, as
kube-scheduler v1.37 allocates them (DynamicResourceAllocation is GA and locked on since
v1.35; the allocator: common.scheduling.dra; the claims, slices and classes a process knows:
common.scheduling.device_state).

* PreEnqueue keeps a pod out of the queue until its claims exist (a template's claim named in
  its status, not being deleted, the pod's own), with kube's messages.
* PreFilter: a claim allocated and reserved for as many pods as it may be ("resourceclaim in
  use"), one another pod of the shard is allocating, or one whose device class does not exist
  keeps the pod off every node (UnschedulableAndUnresolvable, as kube).
* Filter: an allocated claim lets the pod only on the nodes its allocation's selector allows
  ("resourceclaim not available on the node"); the others must all be allocatable on the
  node, against the devices already given ("cannot allocate all claims"). A CEL expression
  that fails is an Error, as kube's.
* Score: kube's, which only prioritized alternatives (firstAvailable) move: 8 minus the index
  of the alternative taken, normalised (weight 2 in kube's default profile).
* Reserve/Unreserve: the node's allocations are laid over the shard's view while in flight.
* PreBind is the binder's (common.scheduling.dra_binding): it allocates again against its own
  view plus the allocations it has in flight (`check`), writes each claim's allocation and
  reservedFor, then binds; a refused decision gives its devices back.
* PostFilter: kube's, without deallocation (a claim allocated on nodes the pod cannot use
  stays so: shardsched writes no deallocation from a shard). When no PreFilter record exists
  (a PreFilter before it stopped the cycle), kube's error "not found", which ends the
  PostFilter phase before DefaultPreemption.
Preemption does not count the devices of victims as freed (kube v1.37's plugin has no
PreFilter extensions either): a pod waiting for devices is retried when a claim is
deallocated or a slice appears.
"""
from __future__ import annotations

from ..validation import Str, format_duration, invalid, parse_duration
from ..scheduling.device_state import pod_claims
from ..scheduling.dra import AllocatorError, allocate, with_config
from .args import ArgsKind
from .interface import (FilterPlugin, PostFilterPlugin, PreEnqueuePlugin, PreFilterPlugin, PreScorePlugin,
                        ReservePlugin, ScorePlugin)
from .spec import PluginSpec, QueueingHints, always, labels_changed

#: What its PostFilter says when its PreFilter did not run (kube's CycleState ErrNotFound).
NO_STATE = "not found"
#: kube's messages
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
BEING_ALLOCATED = "resource claim {claim} is in the process of being allocated"
STILL_NOT_SCHEDULABLE = "still not schedulable"


def _rules(a: dict, path: str) -> list:
    """kube's ValidateDynamicResourcesArgs under v1.37's default gates (DRASchedulerFilterTimeout,
    DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on). Valid values are accepted;
    shardsched's allocator has no deadline and waits for no binding conditions."""
    errs = []
    for key, least, why in (("filterTimeout", 0.0, "must be zero or positive"),
                            ("bindingTimeout", 1.0, "must be at least 1 second")):
        seconds = parse_duration(a[key])
        if seconds is None:
            errs.append(invalid(f"{path}.{key}", a[key], 'must be a duration such as "10s"'))
        elif seconds < least:
            errs.append(invalid(f"{path}.{key}", format_duration(seconds), why))
    return errs


def check(j):
    """The binder's PreBind preparation, as authority: the pod's claims exist, its allocated
    claims allow the node, and the others can be allocated there against the binder's view
    plus every allocation it has in flight (its other reservations). The allocations found
    are kept for the reservation (`device_plan`), which writes them before the binding."""
    pod = j.pod
    if not pod.resource_claims:
        return None
    devices = j.view.devices
    claims, why = pod_claims(pod, devices.claims)
    if why is not None:
        return f"DynamicResources: {why}"
    to_allocate = []
    node = j.node
    for claim in claims:
        if claim.allocation is not None:
            if not claim.allocation.allows(node.name, node.labels):
                return f"DynamicResources: {NOT_AVAILABLE}"
            if not claim.reserved_for_pod(pod.uid) and not claim.can_be_reserved():
                return f"DynamicResources: {IN_USE}"
        elif devices.in_flight(claim):
            return f"DynamicResources: {BEING_ALLOCATED.format(claim=claim.key)}"
        else:
            to_allocate.append(claim)
    got = []
    if to_allocate:
        try:
            got = allocate(to_allocate, node.name, node.labels, devices.inventory(), devices.classes,
                           devices.allocated(), devices.cel)
        except AllocatorError as e:
            return f"DynamicResources: {e}"
        if got is None:
            return f"DynamicResources: {CANNOT_ALLOCATE}"
        got = with_config(to_allocate, got, devices.classes)
    j.device_plan = (claims, list(zip(to_allocate, got)))
    return None


def _could_help(pod, *event) -> bool:
    return bool(pod.resource_claims)


class DynamicResources(PluginSpec, PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin,
                       PreScorePlugin, ScorePlugin, ReservePlugin):
    name = "DynamicResources"
    args_kind = ArgsKind({"filterTimeout": Str("10s"), "bindingTimeout": Str("10m0s")}, _rules)
    binder_check = staticmethod(check)
    #: a pod with claims is never bound without its devices, whatever the profile runs
    binder_check_always = True
    #: Node events (a node whose labels a slice's or an allocation's selector reads); claim,
    #: class and slice events wake the pods with claims from the shard's intake.
    queueing_hints = QueueingHints(node_added=_could_help, node_updated=labels_changed)
