"""Which cluster events can make an unschedulable pod schedulable: kube's QueueingHints.

A pod that fits nowhere is parked with the names of the plugins that rejected it (its
*rejectors*: every filter that turned a node down, PreFilter's verdict, and DefaultPreemption
when preemption was tried and found nothing). An event wakes it only when one of its
rejectors could change its mind about it: a node added that the pod could use, a node whose
allocatable grew, whose labels, taints or unschedulable flag changed in a way the pod cares
about, a pod leaving a node, a pod arriving elsewhere (for affinity and spread), a
PodDisruptionBudget or a nomination changing, and for a preemptor any change a filter reads
(its dry runs run every filter). Anything else (a heartbeat, a
change no rejector reads, another node's labels for a pod rejected only for its size) leaves
it parked: a full retry would have failed too, which a property test checks on random
clusters (tests/shard/test_queueing_hints.py).

Each plugin's hints are its own (`queueing_hints` of its class in common/plugins/, kube's
EventsToRegister and QueueingHintFns); this module asks the pod's rejectors. A plugin without
hints wakes its pods on every event, so adding a plugin can cost retries but never strands a
pod.

Every hint takes the parked pod and its rejectors first; what follows describes the event.
"""
from __future__ import annotations

import functools

from common.config.plugin_names import DYNAMIC_RESOURCES
from common.plugins import SPECS
from common.plugins.spec import never

#: plugin name -> its QueueingHints, for the plugins that have them.
HINTS = {name: spec.queueing_hints for name, spec in SPECS.items() if spec.queueing_hints is not None}
#: Plugins whose hints are known.
KNOWN = frozenset(HINTS)


def _unknown(rejectors) -> bool:
    return not rejectors or not rejectors <= KNOWN


@functools.lru_cache(maxsize=4096)
def registered(rejectors: frozenset, event: str) -> bool:
    """Whether any of `rejectors` has a hint for `event` (a hint's name: "pod_arrived", ...),
    kube's check of an event against the plugins that registered it, before any hint runs: a
    pod turned down only by plugins that ignore the event stays parked without being asked
    (the queue skips such pods by their rejector set, so that a binding costs nothing per pod
    of a backlog rejected for its size)."""
    return _unknown(rejectors) or any(getattr(HINTS[r], event) is not never for r in rejectors)


def node_added(pod, rejectors, node) -> bool:
    """A new node helps a pod it could host; one in a new topology domain may also change
    what affinity and spread (and preemption's dry runs of them) allow on the others."""
    return _unknown(rejectors) or any(HINTS[r].node_added(pod, node) for r in rejectors)


def node_updated(pod, rejectors, old, new) -> bool:
    """What changed on the node against what turned the pod down."""
    return _unknown(rejectors) or any(HINTS[r].node_updated(pod, old, new) for r in rejectors)


def node_deleted(pod, rejectors) -> bool:
    """Only affinity and spread (and preemption through them) can gain from a node leaving
    (a domain gone, its pods with it)."""
    return _unknown(rejectors) or any(HINTS[r].node_deleted(pod) for r in rejectors)


def pod_left(pod, rejectors, gone) -> bool:
    """A pod left its node (deleted, evicted, finished): room, ports, and what it counted for
    affinity and spread came free, and preemption may find victims again."""
    return _unknown(rejectors) or any(HINTS[r].pod_left(pod, gone) for r in rejectors)


def pod_arrived(pod, rejectors, other) -> bool:
    """A pod now bound elsewhere (or relabelled) can only help affinity and spread (and
    preemption through them)."""
    return _unknown(rejectors) or any(HINTS[r].pod_arrived(pod, other) for r in rejectors)


def preemption_changed(pod, rejectors) -> bool:
    """A PodDisruptionBudget or a nomination changed: preemptors may find a candidate, and a
    nomination withdrawn leaves room."""
    return _unknown(rejectors) or any(HINTS[r].preemption_changed(pod) for r in rejectors)


def devices_changed(pod, rejectors) -> bool:
    """A ResourceClaim, ResourceSlice or DeviceClass event (devices published or freed, a
    claim made or changed): only DynamicResources registers these (kube's EventsToRegister),
    so only the pods with claims it (or a plugin without hints) turned down are asked.
    Which pods a claim event concerns at all is the shard's intake's to say (kube's
    preQueueingHint: those that reference the claim, all of them when it frees devices)."""
    return bool(pod.resource_claims) and (_unknown(rejectors) or DYNAMIC_RESOURCES in rejectors)
