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
clusters (tests/shard/test_queueing_hints.py). A plugin this module does not know wakes its
pods on every event, so adding a plugin can cost retries but never strands a pod.

Every hint takes the parked pod and its rejectors first; what follows describes the event.
"""
from __future__ import annotations

from common.plugin_names import (DEFAULT_PREEMPTION, INTER_POD_AFFINITY, NODE_AFFINITY, NODE_NAME, NODE_PORTS,
                                 NODE_RESOURCES_FIT, NODE_UNSCHEDULABLE, POD_TOPOLOGY_SPREAD, TAINT_TOLERATION)
from common.predicates import host_ports_conflict, node_matches, unschedulable_blocks, untolerated_taint

#: Plugins whose verdict depends on pods on other nodes.
ACROSS_NODES = frozenset((INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD))
#: ...and preemption, whose dry runs run every filter (the pod's rejectors name only the
#: first to fail on each node): a change anywhere may give it a candidate.
WIDE = ACROSS_NODES | {DEFAULT_PREEMPTION}
#: Plugins whose verdict on a node depends on that node alone (its object and its pods).
KNOWN = frozenset((NODE_UNSCHEDULABLE, NODE_NAME, TAINT_TOLERATION, NODE_AFFINITY, NODE_PORTS,
                   NODE_RESOURCES_FIT, DEFAULT_PREEMPTION)) | ACROSS_NODES


def _unknown(rejectors) -> bool:
    return not rejectors or not rejectors <= KNOWN


def _could_host(pod, node) -> bool:
    """Whether an empty `node` passes the pod's checks that do not depend on other pods."""
    return (not unschedulable_blocks(pod, node) and untolerated_taint(node.taints, pod.tolerations) is None
            and node_matches(pod, node) and all(r <= a for r, a in zip(pod.requests, node.allocatable)))


def node_added(pod, rejectors, node) -> bool:
    """A new node helps a pod it could host; one in a new topology domain may also change
    what affinity and spread (and preemption's dry runs of them) allow on the others."""
    return _unknown(rejectors) or bool(rejectors & WIDE) or _could_host(pod, node)


def node_updated(pod, rejectors, old, new) -> bool:
    """What changed on the node against what turned the pod down. A preemptor that found no
    victims may find some after any change a filter reads: preemption's dry runs run every
    filter, where the pod's rejectors name only the first to fail on each node."""
    if _unknown(rejectors):
        return True
    labels = old.labels != new.labels
    grown = any(b > a for a, b in zip(old.allocatable, new.allocatable))
    if labels and rejectors & ACROSS_NODES:
        return True
    if DEFAULT_PREEMPTION in rejectors and (labels or grown or old.taints != new.taints
                                            or old.unschedulable != new.unschedulable):
        return True
    if NODE_RESOURCES_FIT in rejectors and grown:
        return True
    if NODE_UNSCHEDULABLE in rejectors and old.unschedulable and not unschedulable_blocks(pod, new):
        return True
    if TAINT_TOLERATION in rejectors and old.taints != new.taints and untolerated_taint(new.taints,
                                                                                        pod.tolerations) is None:
        return True
    return NODE_AFFINITY in rejectors and labels and node_matches(pod, new) and not node_matches(pod, old)


def node_deleted(pod, rejectors) -> bool:
    """Only affinity and spread (and preemption through them) can gain from a node leaving
    (a domain gone, its pods with it)."""
    return _unknown(rejectors) or bool(rejectors & WIDE)


def pod_left(pod, rejectors, gone) -> bool:
    """A pod left its node (deleted, evicted, finished): room, ports, and what it counted for
    affinity and spread came free, and preemption may find victims again."""
    if _unknown(rejectors) or rejectors & (WIDE | {NODE_RESOURCES_FIT}):
        return True
    return NODE_PORTS in rejectors and bool(gone.host_ports) and host_ports_conflict(pod.host_ports, gone.host_ports)


def pod_arrived(pod, rejectors, other) -> bool:
    """A pod now bound elsewhere (or relabelled) can only help affinity and spread (and
    preemption through them)."""
    return _unknown(rejectors) or bool(rejectors & WIDE)


def preemption_changed(pod, rejectors) -> bool:
    """A PodDisruptionBudget or a nomination changed: preemptors may find a candidate, and a
    nomination withdrawn leaves room."""
    return _unknown(rejectors) or bool(rejectors & {DEFAULT_PREEMPTION, NODE_RESOURCES_FIT, NODE_PORTS})
