"""DynamicResources' PreBind, as the binder (and simulate's store committer) runs it: before
the pod is bound, each of its claims gets the allocation the check found (status.allocation)
and the pod in status.reservedFor, in one status write per claim, conditional on the claim's
resourceVersion, as kube-scheduler's bindClaim writes it. A claim written by someone else
since the check (allocated elsewhere, deleted, reserved up to the limit) refuses the
decision; claims written before the refusal keep what was written (kube does the same) and
the ResourceClaim controller deallocates them once no pod is reserved (common.claim_controller).
kube's delete-protection finalizer is not added (a status write cannot set it, and the stores
without a controller manager do not honour finalizers).
"""
from __future__ import annotations

from ..errors import Conflict
from ..model.dra import RESERVED_FOR_MAX


def write_claims(store, pod, plan) -> str | None:
    """Write `plan` ((claims, [(claim, allocation)]) from the check) for `pod`; None when
    every claim was written, else why not (kube's words where it has them)."""
    claims, allocations = plan
    to_allocate = {claim.key: allocation for claim, allocation in allocations}
    for claim in claims:
        if claim.reserved_for_pod(pod.uid):
            continue
        why = _write(store, pod, claim, to_allocate.get(claim.key))
        if why is not None:
            return why
    return None


def _write(store, pod, claim, allocation: dict | None) -> str | None:
    current = store.get("ResourceClaim", claim.key)
    if current is None or (current.get("metadata") or {}).get("uid") != claim.uid:
        return f"claim {claim.key} got deleted in the meantime"
    meta = current["metadata"]
    if meta.get("deletionTimestamp"):
        return f"claim {claim.key} got deleted in the meantime"
    status = dict(current.get("status") or {})
    if allocation is not None:
        if status.get("allocation"):
            return f"claim {claim.key} got allocated elsewhere in the meantime"
        status["allocation"] = allocation
    reserved = list(status.get("reservedFor") or [])
    if len(reserved) >= RESERVED_FOR_MAX:
        return f"add reservation to claim {claim.key}: reservedFor is full"
    reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
    status["reservedFor"] = reserved
    current["status"] = status
    try:
        store.update_status(current)
    except Conflict as e:
        verb = "add allocation and reservation to" if allocation is not None else "add reservation to"
        return f"{verb} claim {claim.key}: {e}"
    return None
