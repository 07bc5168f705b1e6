"""Invariants of a scheduled cluster, checked from the store alone.

What no crash, race or bug may ever produce, whatever the scheduler did: a node holding
more than its allocatable (pod count included), two pods on one node sharing a host port,
a pod bound to a node that does not exist or whose NoSchedule/NoExecute taints, nodeSelector
or required node affinity it breaks, one pod bound twice, a pod whose required pod
affinity, anti-affinity or DoNotSchedule topology spread the final placement breaks, a
PodGroup partly placed (some members placed, fewer than its minMember, others pending), a
pod on a node its bound volumes' node affinity excludes, a ReadWriteOncePod claim mounted
by two pods, a device allocated to two ResourceClaims, and a bound pod whose ResourceClaim is
missing, unallocated, not reserved for it, or allocated devices its node cannot use.
Terminal pods do not count. `verify` is a pure function over parsed objects so benchmarks and tests
reuse it.

The cross-node constraints are judged as kube-scheduler would judge each pod if it were
placed last: against every other bound pod (common.scheduling.constraints). For pods that were placed
one after the other with the same constraints, and nothing deleted since, that holds for
every pod exactly when no scheduling decision broke a constraint.
"""
from __future__ import annotations

from collections import Counter

import time

from ..scheduling.checks import CROSS_NODE_CHECKS, DEVICE_CHECKS, NODE_CHECKS, VOLUME_CHECKS, Judged, first_failure
from ..scheduling.device_state import DeviceState
from ..scheduling.constraints import (ConstrainedAccounting, inter_pod_affinity_failure, primed,
                                      topology_spread_failure)
from ..errors import ObjectError
from ..model.objects import TERMINAL_PHASES, parse_node, parse_object, parse_pod
from ..model.podgroup import GroupIndex, parse_pod_group, raw_group_key
from ..model.storage_objects import READ_WRITE_ONCE_POD
from ..model.workloads import Namespaces
from ..scheduling.volumes import VolumeState, volume_fits, waiting_for_provisioning
from ..scheduling.predicates import HARD_EFFECTS, host_ports_conflict, node_matches
from ..model.resources import resource_name, shortfalls, vadd
from ..model.selectors import tolerated

SHOWN = 20  # violations listed in the summary


def verify(nodes, pods, settled_s: float | None = None, scheduler_names=None, now: float | None = None,
           groups=(), volumes: VolumeState | None = None, namespaces: Namespaces | None = None,
           claims=(), slices=(), classes=()) -> dict:
    """{"ok", "nodes", "bound", "pending", "violations": [{"kind", "object", "message"}]}.

    With `settled_s`, a pending pod older than that which some node could take now (every
    check the binder makes) is a violation too ("stuck"): the scheduler should have placed
    it; a pod whose claim a provisioner is creating a volume for waits for storage, not for
    a node. `scheduler_names` limits that to pods of these schedulers (default: every pod).
    Pods of a PodGroup (`groups`, parsed) are placed as a group, which that check does not
    try; a group with some but fewer than minMember members placed while others still wait is
    a violation ("partial-group"). `volumes`: the claims, volumes, classes and CSINodes
    (default: none). `claims`, `slices` and `classes`: the ResourceClaims, ResourceSlices and
    DeviceClasses, parsed (a device twice: "device-twice"; a bound pod's claim missing,
    unallocated or not reserved for it: "claim-unallocated"; allocated where the pod is not:
    "claim-elsewhere"); a pending pod with claims is "stuck" only if its claims could be
    allocated on the node besides the devices already allocated."""
    volumes = volumes if volumes is not None else VolumeState()
    by_name = {n.name: n for n in nodes}
    violations: list[dict] = []

    def bad(kind: str, obj: str, message: str) -> None:
        violations.append({"kind": kind, "object": obj, "message": message})

    used: dict[str, tuple] = {}
    ports: dict[str, dict] = {}
    uids: dict[str, str] = {}
    bound = pending = 0
    for p in pods:
        if p.phase in TERMINAL_PHASES:
            continue
        if not p.node_name:
            pending += 1
            continue
        bound += 1
        where = f"Pod {p.key}"
        if p.uid:
            if p.uid in uids:
                bad("bound-twice", where, f"uid {p.uid} is also bound as {uids[p.uid]}")
            uids[p.uid] = p.key
        node = by_name.get(p.node_name)
        if node is None:
            bad("missing-node", where, f"bound to node {p.node_name}, which does not exist")
            continue
        used[node.name] = vadd(used[node.name], p.requests) if node.name in used else p.requests
        in_use = ports.setdefault(node.name, {})
        if p.host_ports and host_ports_conflict(p.host_ports, in_use):
            bad("host-port", where, f"host port {p.host_ports} already in use on {node.name}")
        for port in p.host_ports:
            in_use[port] = in_use.get(port, 0) + 1
        for taint in node.taints:
            if taint.effect in HARD_EFFECTS and not tolerated(taint, p.tolerations):
                bad("taint", where, f"does not tolerate {taint.key}={taint.value}:{taint.effect} "
                                    f"of {node.name}")
        if not node_matches(p, node):
            bad("node-affinity", where, f"nodeSelector or required node affinity excludes {node.name}")
        _volume_violations(p, node, volumes, bad)
    for name, total in used.items():
        over = [resource_name(i) for i in shortfalls(total, by_name[name].allocatable)]
        if over:
            bad("overcommit", f"Node {name}", f"bound pods request more {', '.join(over)} than allocatable")
    _read_write_once_pod(pods, volumes, bad)
    _devices(pods, by_name, claims, slices, bad)
    placed = [p for p in pods if p.node_name in by_name and p.phase not in TERMINAL_PHASES]
    constrained = [p for p in placed if p.affinity[0] or p.anti_affinity[0]
                   or any(c.hard for c in p.spread_constraints)]
    if constrained or settled_s is not None:
        acc = ConstrainedAccounting()
        acc.constraints.namespaces = namespaces
        for node in by_name.values():
            acc.set_node(node)
        for p in placed:
            acc.set_pod(p)
        _cross_node(acc, constrained, bad)
        if settled_s is not None:
            in_groups = _partial_groups(groups, pods, lambda *_: None)
            devices = DeviceState()
            for obj in (*classes, *slices, *claims):
                devices.set(obj)
            _stuck(acc, volumes, devices, [p for p in pods if p.key not in in_groups], settled_s, scheduler_names,
                   time.time() if now is None else now, bad)
    _partial_groups(groups, pods, bad)
    return {"ok": not violations, "nodes": len(by_name), "bound": bound, "pending": pending,
            "violations": violations}


def _cross_node(acc: ConstrainedAccounting, constrained: list, bad) -> None:
    """Required inter-pod affinity and anti-affinity, and DoNotSchedule spread, of the
    `constrained` bound pods against all those `acc` counts."""
    index = acc.constraints
    for p in primed(index, constrained):
        node, alone = acc.nodes[p.node_name].node, {p.key: p.node_name}
        if p.affinity[0] or p.anti_affinity[0]:
            failure = inter_pod_affinity_failure(index, p, node, alone, existing=False)
            if failure is not None:
                kind = "pod-affinity" if "pod affinity" in failure[1] else "pod-anti-affinity"
                bad(kind, f"Pod {p.key}", f"on {node.name}: {failure[1]}")
        if any(c.hard for c in p.spread_constraints):
            failure = topology_spread_failure(index, p, node, alone)
            if failure is not None:
                bad("topology-spread", f"Pod {p.key}", f"on {node.name}: {failure[1]}")


def _partial_groups(groups, pods, bad) -> set[str]:
    """Report every PodGroup with 0 < placed members < minMember and a member still pending
    (placed: bound, or run to completion); returns the keys of all groups' members."""
    index = GroupIndex()
    for g in groups:
        index.apply_group("ADDED", g.raw)
    members: set[str] = set()
    for p in pods:
        if p.raw is not None and index.apply_pod("ADDED", p.key, p.raw) is not None:  # lean: in no group
            members.add(p.key)
    for key, group in index.groups.items():
        counts = index.counts(key)
        if 0 < counts.placed < group.min_member and counts.pending:
            bad("partial-group", f"PodGroup {key}", f"{counts.placed} of its minMember {group.min_member} "
                                                    f"placed, {counts.pending} pending")
    return members


def _volume_violations(p, node, volumes: VolumeState, bad) -> None:
    """A bound claim's volume must admit the node the pod runs on."""
    for v in p.volumes:
        claim = volumes.claim(p.namespace, v.claim) if v.claim is not None else None
        pv = volumes.volume(claim.volume_name) if claim is not None and claim.volume_name else None
        if pv is not None and not volume_fits(pv, node.labels):
            bad("volume-node-affinity", f"Pod {p.key}",
                f"on {node.name}, which the node affinity of volume {pv.name} (claim {claim.key}) excludes")


def _read_write_once_pod(pods, volumes: VolumeState, bad) -> None:
    users: dict[str, list[str]] = {}
    for p in pods:
        if not p.node_name or p.phase in TERMINAL_PHASES:
            continue
        for v in p.volumes:
            claim = volumes.claim(p.namespace, v.claim) if v.claim is not None else None
            if claim is not None and READ_WRITE_ONCE_POD in claim.access_modes:
                users.setdefault(claim.key, []).append(p.key)
    for key, who in users.items():
        if len(who) > 1:
            bad("read-write-once-pod", f"PersistentVolumeClaim {key}",
                f"ReadWriteOncePod claim mounted by {len(who)} pods: {', '.join(sorted(who))}")


def _devices(pods, by_name: dict, claims, slices, bad) -> None:
    """Each device in at most one claim's allocation; each bound pod's claims allocated,
    reserved for it, and usable on its node, their devices in slices its node can use."""
    holder: dict[tuple, str] = {}
    for c in claims:
        for device in c.allocation.devices() if c.allocation is not None else ():
            if device in holder:
                bad("device-twice", f"ResourceClaim {c.key}",
                    f"device {'/'.join(device)} is also allocated to claim {holder[device]}")
            else:
                holder[device] = c.key
    by_key = {c.key: c for c in claims}
    where = {d.id: s for s in slices for d in s.devices}
    for p in pods:
        node = by_name.get(p.node_name)
        if node is None or p.phase in TERMINAL_PHASES:
            continue
        for pc in p.resource_claims:
            name = pc.claim_name or p.claim_statuses.get(pc.name)
            claim = by_key.get(f"{p.namespace}/{name}") if name else None
            problem = _claim_problem(p, pc, name, claim, node, where)
            if problem is not None:
                bad(problem[0], f"Pod {p.key}", problem[1])


def _claim_problem(p, pc, name, claim, node, where) -> tuple[str, str] | None:
    """(kind, message) of what is wrong with one of a bound pod's claims on `node`, or None."""
    on = f"bound to {node.name}, but"
    if not name:
        return "claim-unallocated", f"{on} no claim was made for its entry {pc.name} (template {pc.template_name})"
    if claim is None:
        return "claim-unallocated", f"{on} its claim {name} does not exist"
    if claim.allocation is None:
        return "claim-unallocated", f"{on} its claim {name} is not allocated"
    if not claim.reserved_for_pod(p.uid):
        return "claim-unallocated", f"{on} its claim {name} is not reserved for it"
    if not claim.allocation.allows(node.name, node.labels):
        return "claim-elsewhere", f"{on} the allocation of its claim {name} is for other nodes"
    for device in claim.allocation.devices():
        pool = where.get(device)
        if pool is None or not pool.available_on(node.name, node.labels):
            return "claim-elsewhere", (f"{on} device {'/'.join(device)} of its claim {name} is "
                                       + ("in no ResourceSlice" if pool is None else "not on that node"))
    return None


class _Bound:
    """The bound pods as the checks read a view (no reservations, no victims claimed), and
    the devices as the store has them allocated."""

    def __init__(self, acc: ConstrainedAccounting, volumes: VolumeState, devices: DeviceState):
        self.nodes, self.constraints, self.claimed = acc.nodes, acc.constraints, {}
        self.bound_to = acc.pod_node.get
        self.volumes, self.claims_in_use, self.volume_prefix = volumes, acc.claims_in_use, "verify"
        self.devices = devices


def _stuck(acc, volumes: VolumeState, devices: DeviceState, pods, settled_s: float, names, now: float,
           bad) -> None:
    view = _Bound(acc, volumes, devices)
    checks = NODE_CHECKS + VOLUME_CHECKS + DEVICE_CHECKS + CROSS_NODE_CHECKS
    for p in pods:
        if (p.node_name or p.deleting or p.phase in TERMINAL_PHASES or now - p.creation_time <= settled_s
                or (names is not None and p.scheduler_name not in names)
                or p.scheduling_gates or waiting_for_provisioning(p, volumes)):
            continue
        for info in acc.live_nodes():
            if first_failure(Judged(view, p, info.name), checks) is None:
                bad("stuck", f"Pod {p.key}", f"pending for {now - p.creation_time:.0f} s, "
                                             f"though node {info.name} can take it")
                break


def verify_store(store, settled_s: float | None = None, scheduler_names=None) -> dict:
    """`verify` over everything in `store`; objects that do not parse are listed as errors.

    Each kind is read in pages (`list_iter`): a million running pods cannot come in one
    answer (on Redis one HGETALL of gigabytes outlasts the client's timeout), and a bound
    pod outside any group is kept lean, with no document (what verify reads of it is parsed;
    only group members' documents are read again, by the group index)."""
    nodes, pods, groups, errors = [], [], [], []
    volumes, namespaces = VolumeState(), Namespaces()
    claims, slices, classes = [], [], []
    for kind, parse, add in (("Namespace", parse_object, namespaces.set),
                             ("Node", parse_node, nodes.append), ("Pod", _parse_kept_pod, pods.append),
                             ("PodGroup", parse_pod_group, groups.append),
                             ("StorageClass", parse_object, volumes.set), ("CSINode", parse_object, volumes.set),
                             ("PersistentVolume", parse_object, volumes.set),
                             ("PersistentVolumeClaim", parse_object, volumes.set),
                             ("ResourceClaim", parse_object, claims.append),
                             ("ResourceSlice", parse_object, slices.append),
                             ("DeviceClass", parse_object, classes.append)):
        for d in store.list_iter(kind)[0]:
            try:
                add(parse(d))
            except ObjectError as e:
                errors.append(e.as_dict())
    report = verify(nodes, pods, settled_s, scheduler_names, groups=groups, volumes=volumes, namespaces=namespaces,
                    claims=claims, slices=slices, classes=classes)
    report["unparsable"] = errors
    return report


def _parse_kept_pod(d: dict):
    return parse_pod(d, lean=raw_group_key(d) is None)


def summary(report: dict) -> str:
    counts = Counter(v["kind"] for v in report["violations"])
    lines = [f"nodes {report['nodes']}, bound {report['bound']}, pending {report['pending']}, "
             f"violations {len(report['violations'])}"
             + (f" ({', '.join(f'{k} {n}' for k, n in sorted(counts.items()))})" if counts else "")]
    lines += [f"  {v['kind']}: {v['object']}: {v['message']}" for v in report["violations"][:SHOWN]]
    return "\n".join(lines)
