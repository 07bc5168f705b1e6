"""Every check a placement must pass, as one ordered list: what the binder checks before it
commits a decision, and what `verify --settled` asks of a pending pod on every node (the
node checks, kube's volume filters, then the cross-node constraints).

Each check sees the pod as the binder's own watch shows it, the node's record, the
victims (resolved from the binder's view, never from the message) and the binder's
reservations, and answers None or "Reason: message": the name of the kube filter plugin
whose rule failed and kube's message (the shard retries with it), or one of the binder's own
reasons for victims. The predicates are common/'s, the same the shard's plugins use.

Why checks over other partitions' nodes stay exact with several binders (common.partition):
a domain of the partition label, or of the hostname, lies within one partition, so affinity,
anti-affinity and the "existing pods" rule see every reservation that could break them. A
topology spread check also reads other domains' counts; those only grow through other
binders' commits, and a larger count elsewhere can only lower the skew of this placement,
so a decision judged against a slightly older view of other partitions stays valid. (A
concurrent eviction of a matching pod in another partition is the one exception: it lowers
a count. Constraints over labels wider than the partition label, a region say, are exact
only with binders.count 1 or a partitionLabel at least that wide.)
"""
from __future__ import annotations

from functools import partial

from . import plugin_names as names
from .constraints import (INTER_POD_AFFINITY, POD_TOPOLOGY_SPREAD, inter_pod_affinity_failure,
                          topology_spread_failure)
from .plugin_args import profile_args
from .predicates import (NODE_AFFINITY_MISMATCH, PORTS_IN_USE, UNSCHEDULABLE_NODE, IgnoredResources,
                         host_ports_conflict, insufficient, node_matches, unschedulable_blocks,
                         untolerated_taint, untolerated_taint_message)
from .profile_plugins import filters
from .resources import shortfalls, vadd
from .volumes import (DISK_CONFLICT, RWOP_CONFLICT, ZONE_CONFLICT, binding_claims, binding_refusal, disks_conflict,
                      find_pod_volumes, rwop_claims, rwop_conflicts, rwop_uses, volume_limits, zone_fits,
                      zone_topologies)


class Judged:
    """One decision as the checks see it. `view` has `nodes` (name -> node record),
    `constraints` (a ConstraintIndex), `claimed` (victim key -> claimant), `bound_to(key)`,
    `volumes` (common.volumes.VolumeState), `claims_in_use` (claim key -> pods counted
    mounting it) and `volume_prefix` (NodeVolumeLimits' name for unbound claims)."""

    __slots__ = ("view", "pod", "node_name", "info", "victim_refs", "victims", "volume_plan")

    def __init__(self, view, pod, node_name: str, victim_refs: list = ()):
        self.view = view
        self.pod = pod
        self.node_name = node_name
        self.info = view.nodes.get(node_name)
        self.victim_refs = victim_refs  # [(key, uid)] as the shard named them
        self.victims: list = []         # the victims' Pods, once `victims` passed
        self.volume_plan = None         # the volumes to bind, once `volume_binding` passed

    @property
    def node(self):
        return self.info.node

    @property
    def excluded(self) -> dict:
        """The victims, as constraint checks leave them out: key -> node."""
        return {v.key: self.node_name for v in self.victims}


def node_exists(j: Judged):
    if j.info is None or j.info.node is None:
        return f"NodeNotFound: node {j.node_name} not found"
    return None


def node_unschedulable(j: Judged):
    return f"NodeUnschedulable: {UNSCHEDULABLE_NODE}" if unschedulable_blocks(j.pod, j.node) else None


def taint_toleration(j: Judged):
    taint = untolerated_taint(j.node.taints, j.pod.tolerations)
    return None if taint is None else f"TaintToleration: {untolerated_taint_message(taint)}"


def node_affinity(j: Judged):
    return None if node_matches(j.pod, j.node) else f"NodeAffinity: {NODE_AFFINITY_MISMATCH}"


def victims(j: Judged):
    """Victims exist on this node as the watch shows them, are distinct, are bound (not
    another decision's reservation), are of lower priority, and nobody else claimed them."""
    view, seen = j.view, set()
    for key, uid in j.victim_refs:
        if key in seen:
            return f"InvalidVictim: {key} is named twice"
        seen.add(key)
        victim = j.info.pods.get(key)
        if victim is None or (uid and victim.uid != uid) or view.bound_to(key) != j.node_name:
            return f"VictimGone: {key} is not bound to {j.node_name}"
        if victim.priority >= j.pod.priority:
            return (f"InvalidVictim: {key} has priority {victim.priority}, not below the preemptor's "
                    f"{j.pod.priority}")
        claimant = view.claimed.get(key)
        if claimant is not None and claimant != j.pod.key:
            return f"VictimClaimed: {key} is a victim of {claimant}'s decision in flight"
        j.victims.append(victim)
    return None


def node_resources_fit(j: Judged, ignored: IgnoredResources = IgnoredResources()):
    free = j.info.free
    for v in j.victims:
        free = vadd(free, v.requests)
    short = [insufficient(i) for i in shortfalls(j.pod.requests, free) if not (ignored and ignored.column(i))]
    return f"NodeResourcesFit: {', '.join(short)}" if short else None


def node_ports(j: Judged):
    if not j.pod.host_ports:
        return None
    in_use = dict(j.info.host_ports)
    for v in j.victims:
        for port in v.host_ports:
            in_use[port] -= 1
    if host_ports_conflict(j.pod.host_ports, [p for p, n in in_use.items() if n > 0]):
        return f"NodePorts: {PORTS_IN_USE}"
    return None


def inter_pod_affinity(j: Judged):
    failure = inter_pod_affinity_failure(j.view.constraints, j.pod, j.node, j.excluded)
    return None if failure is None else f"{INTER_POD_AFFINITY}: {failure[1]}"


def topology_spread(j: Judged):
    if not any(c.hard for c in j.pod.spread_constraints):
        return None
    failure = topology_spread_failure(j.view.constraints, j.pod, j.node, j.excluded)
    return None if failure is None else f"{POD_TOPOLOGY_SPREAD}: {failure[1]}"


def _remaining(j: Judged) -> list:
    """The pods staying on the node (the victims leave)."""
    gone = {v.key for v in j.victims}
    return [p for key, p in j.info.pods.items() if key not in gone]


def volume_restrictions(j: Judged):
    """Inline disks shared on the node, and ReadWriteOncePod claims other pods mount
    anywhere, reservations of other decisions included: two shards cannot both give one
    such claim to a pod."""
    if not j.pod.volumes:
        return None
    vs = j.view.volumes
    names, refusal = rwop_claims(j.pod, vs)
    if refusal is not None:
        return f"VolumeRestrictions: {refusal.message()}"
    if any(v.disk is not None for v in j.pod.volumes) and disks_conflict(j.pod, _remaining(j)):
        return f"VolumeRestrictions: {DISK_CONFLICT}"
    conflicts = rwop_conflicts(j.pod, names, j.view.claims_in_use) - sum(rwop_uses(v, names) for v in j.victims)
    return f"VolumeRestrictions: {RWOP_CONFLICT}" if conflicts > 0 else None


def node_volume_limits(j: Judged):
    if not j.pod.volumes:
        return None
    refusal = volume_limits(j.pod, j.node_name, _remaining(j), j.view.volumes, j.view.volume_prefix)
    return None if refusal is None else f"NodeVolumeLimits: {refusal.message()}"


def volume_binding(j: Judged):
    """The pod's claims can be bound on the node, against the volumes other decisions in
    flight took; the plan (what PreBind writes) is kept for the reservation."""
    if not j.pod.volumes:
        return None
    claims, refusal = binding_claims(j.pod, j.view.volumes)
    if refusal is None and claims is not None:
        plan, reasons = find_pod_volumes(claims, j.node, j.view.volumes)
        refusal = binding_refusal(reasons)
        j.volume_plan = plan if plan else None
    return None if refusal is None else f"VolumeBinding: {refusal.message()}"


def volume_zone(j: Judged):
    if not j.pod.volumes:
        return None
    topologies, refusal = zone_topologies(j.pod, j.view.volumes)
    if refusal is None and topologies and not zone_fits(topologies, j.node.labels):
        return f"VolumeZone: {ZONE_CONFLICT}"
    return None if refusal is None else f"VolumeZone: {refusal.message()}"


#: In order; the first failure is the answer.
NODE_CHECKS = (node_exists, node_unschedulable, taint_toleration, node_affinity, victims,
               node_resources_fit, node_ports)
#: kube's volume filters, after NodeResourcesFit as in its profile; always made (switching
#: them off could bind a pod to a node its volumes cannot reach)
VOLUME_CHECKS = (volume_restrictions, node_volume_limits, volume_binding, volume_zone)
CROSS_NODE_CHECKS = (inter_pod_affinity, topology_spread)
#: The checks that stand for a kube filter plugin: a profile that does not run the plugin's
#: Filter does not get the check either (node_exists and victims always run).
CHECKED_PLUGIN = {
    node_unschedulable: names.NODE_UNSCHEDULABLE, taint_toleration: names.TAINT_TOLERATION,
    node_affinity: names.NODE_AFFINITY, node_resources_fit: names.NODE_RESOURCES_FIT,
    node_ports: names.NODE_PORTS, inter_pod_affinity: names.INTER_POD_AFFINITY,
    topology_spread: names.POD_TOPOLOGY_SPREAD,
}


def profile_checks(cfg, cross_node: bool = True) -> dict[str, tuple]:
    """schedulerName -> the checks for that profile's pods: the filters it runs, with its
    NodeResourcesFit's ignored resources, and the volume checks always."""
    out = {}
    for i, profile in enumerate(cfg.profiles):
        runs = filters(profile)
        fit = profile_args(cfg, i)[names.NODE_RESOURCES_FIT]
        ignored = IgnoredResources(fit["ignoredResources"], fit["ignoredResourceGroups"])
        checks = []
        for check in NODE_CHECKS + VOLUME_CHECKS + (CROSS_NODE_CHECKS if cross_node else ()):
            plugin = CHECKED_PLUGIN.get(check)
            if plugin is not None and plugin not in runs:
                continue
            checks.append(partial(node_resources_fit, ignored=ignored) if check is node_resources_fit and ignored
                          else check)
        out[profile.scheduler_name] = tuple(checks)
    return out


def first_failure(j: Judged, checks) -> str | None:
    for check in checks:
        why = check(j)
        if why is not None:
            return why
    return None
