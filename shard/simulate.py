"""What `shardsched simulate` runs: the pending pods of some manifests, scheduled on the
memory store through the real shard code (pod groups included, as units).

Pods with spec.nodeName are running; the other pods are pending, queued in input order, and
scheduled until nothing more can change (a pass in which no pod was bound or evicted).
PersistentVolumeClaims are bound as a cluster's controllers would bind them
(shard.provisioner): Immediate ones before any pod is scheduled, WaitForFirstConsumer ones
once the scheduler picked a node for their first pod. Pods' ResourceClaims are made from their
templates, and deallocated once their pods end, as kube-controller-manager's ResourceClaim
controller does (common.claim_controller). Pods
whose schedulerName is `default-scheduler` (the API's default) are scheduled too, by the first
profile: a manifest written for any cluster should simulate without edits. Pods of any other
scheduler are left pending, as kube-scheduler leaves them, and reported so.
"""
from __future__ import annotations

from common.claim_controller import ClaimController
from common.model.admission import admit
from common.config import Config
from common.model.objects import raw_pod_key
from common.model.podgroup import status_of
from .provisioner import Provisioner
from common.store.memory import MemoryStore
from common.store.podstatus import GATED_MESSAGE, SCHEDULING_GATED
from .intake import ProfileOwnership
from .loop import ShardLoop
from .store_committer import StoreCommitter
from .waiting import TIMED_OUT


def run(docs: list, cfg: Config, seed: int = 0) -> tuple[dict, int]:
    """Returns (the JSON document, exit status 0 or 1). The objects are admitted as
    `create -f` admits them; the rejected ones are reported and the rest simulated."""
    accepted, rejected = admit(docs, {})
    store = MemoryStore()
    for _, _, doc in accepted:
        store.create(doc)
    pods = [key for kind, key, _ in accepted if kind == "Pod"]
    clock = _VirtualClock()
    provisioner = Provisioner(store)
    committer = StoreCommitter(store, provision=provisioner.settle)
    loop = ShardLoop(cfg, store, seed=seed, clock=clock, committer=committer,
                     owner=ProfileOwnership(cfg, accept_default=True))
    provisioner.settle()  # claims of Immediate classes are bound before any pod is scheduled
    claims = ClaimController(store)
    claims.step()  # pods' claims from their templates, as kube-controller-manager makes them
    loop.start()
    _run_until_stable(loop, clock, provisioner, claims)
    errors = [e.as_dict() for e in rejected]
    report = _report(store, loop, committer, pods, errors)
    report["podGroups"] = _units(loop)
    return report, (1 if errors else 0)


class _VirtualClock:
    """Simulated time. It stands still during a pass over the queue (assumptions never
    expire, and a pod that failed waits in backoff for the next pass instead of spinning),
    moves on by the longest backoff between passes, and jumps far ahead when only time can
    release pods held at Permit, so that they time out instead of hanging the simulation."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run_until_stable(loop: ShardLoop, clock: _VirtualClock, provisioner: Provisioner,
                      claims: ClaimController) -> None:
    """Passes over the queue until one changes nothing in the store."""
    while True:
        changed = provisioner.settle() + claims.step()
        while loop.schedule_next() is not None:
            loop.release_waiting()
            changed += loop.sync()
        loop.release_waiting()
        changed += loop.sync()
        if loop.waiting.pods:  # only time can release them now
            clock.now += 1e9
            loop.release_waiting()
            changed += loop.sync()
        if not changed:
            break
        clock.now += loop.queue.max_backoff
        loop.queue.move_all_to_active()


def _report(store, loop: ShardLoop, committer: StoreCommitter, pods: list, errors: list) -> dict:
    out = {}
    current = {raw_pod_key(d): d for d in store.list("Pod")[0]}
    ours = loop.owner.names  # simulate runs the loop with ProfileOwnership
    for key in pods:
        d = current.get(key)
        if d is None:  # only an eviction removes a pod during a simulation
            out[key] = {"status": "Evicted", "node": None, "nominatedNode": None,
                        "message": "", "evictedBy": committer.evicted_by.get(key)}
            continue
        spec, status = d.get("spec") or {}, d.get("status") or {}
        node = spec.get("nodeName")
        entry = {"status": "Bound" if node else "Unschedulable", "node": node or None,
                 "nominatedNode": status.get("nominatedNodeName") or None, "message": "",
                 "evictedBy": None}
        scheduler = spec.get("schedulerName") or "default-scheduler"
        if not node and scheduler not in ours:  # kube-scheduler leaves it to its scheduler
            entry["status"] = "Pending"
            entry["message"] = (f'schedulerName "{scheduler}" is not this scheduler\'s (profiles: '
                                f"{', '.join(sorted(ours))}): left pending for it")
        elif not node and key in loop.gated and spec.get("schedulingGates"):  # kube's status and message
            entry["status"], entry["message"] = SCHEDULING_GATED, GATED_MESSAGE
        elif not node and key in loop.gated:
            entry["message"] = loop.gated[key]  # held back by another PreEnqueue (GangScheduling's quorum)
        elif not node:
            entry["message"] = _waited_for_group(loop, key, loop.messages.get(key) or _invalid_message(loop, key))
        out[key] = entry
    return {"pods": out, "errors": errors}


def _units(loop: ShardLoop) -> dict:
    """Each PodGroup as a unit: minMember, phase, members and how many are bound, assumed
    or waiting at Permit (none once the simulation is stable: a group still short of its
    quorum has timed out and let its members go)."""
    out = {}
    for key, unit in sorted(loop.units().items()):
        group = loop.groups.groups[key]
        out[key] = {"phase": status_of(group, loop.groups.counts(key))["phase"], **unit}
    return out


def _waited_for_group(loop: ShardLoop, key: str, message: str) -> str:
    """kube's message for a member its group's Permit held until time ran out (or that no
    cycle explained), with the group it waited for and how far that got: kube's own says
    only which plugin it waited at."""
    group = loop.groups.group_of.get(key)
    if group is None or group not in loop.groups.groups or not message.startswith((TIMED_OUT, NOT_SCHEDULED)):
        return message
    unit = loop.units([group])[group]
    return (f"{message}: waiting for its PodGroup {group}: {unit['bound']} of minMember "
            f"{unit['minMember']} members placed")


#: What an unbound pod no cycle explained says.
NOT_SCHEDULED = "not scheduled"


def _invalid_message(loop: ShardLoop, key: str) -> str:
    err = loop.errors.get(f"Pod {key}")
    return f"invalid pod: {err.field}: {err.message}" if err else NOT_SCHEDULED
