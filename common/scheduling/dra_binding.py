"""DynamicResources' PreBind, as the binder (and simulate's store committer) runs it: before
the pod is bound, each of its claims gets the allocation the check found (status.allocation)
and the pod in status.reservedFor, in one status write per claim, conditional on the claim's
resourceVersion, as kube-scheduler's bindClaim writes it: first over the claim as the
writer's view has it (no read; the claims of a whole chunk of decisions in one batch), and
only on a Conflict read again and written once more (kube's refresh before its retry). A
claim written by someone else since the check (allocated elsewhere, deleted, reserved up to
the limit) refuses the decision; claims written before the refusal keep what was written (kube does the same) and
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
    return write_claims_many(store, [(pod, plan)])[0]


def write_claims_many(store, items: list) -> list[str | None]:
    """`write_claims` of each (pod, plan), the first attempts of all in one batch; one
    result per item."""
    out: list[str | None] = [None] * len(items)
    first = []  # (item index, claim, allocation, document to write)
    for i, (pod, (claims, allocations)) in enumerate(items):
        to_allocate = {claim.key: allocation for claim, allocation in allocations}
        for claim in claims:
            if claim.reserved_for_pod(pod.uid):
                continue
            allocation = to_allocate.get(claim.key)
            doc = claim.raw if claim.resource_version else None  # (unversioned: read it first)
            written = None if doc is None else _with_reservation(doc, claim, pod, allocation)
            if isinstance(written, str):
                out[i] = written
                break
            first.append((i, claim, allocation, written))
    batch = [f for f in first if f[3] is not None and out[f[0]] is None]
    results = dict(zip((id(f) for f in batch), store.update_status_many([f[3] for f in batch]))) if batch else {}
    for f in first:
        i, claim, allocation, _ = f
        if out[i] is None and (id(f) not in results or results[id(f)] is not None):
            out[i] = _write(store, items[i][0], claim, allocation)  # read again, written once more
    return out


def _with_reservation(current: dict, claim, pod, allocation: dict | None) -> dict | str:
    """`current` (a claim document, not modified) with the allocation and the pod's
    reservation added, or why it cannot be."""
    meta = current.get("metadata") or {}
    if meta.get("uid") != claim.uid or meta.get("deletionTimestamp"):
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
    return {**current, "metadata": dict(meta), "status": status}


def _write(store, pod, claim, allocation: dict | None) -> str | None:
    current = store.get("ResourceClaim", claim.key)
    if current is None:
        return f"claim {claim.key} got deleted in the meantime"
    written = _with_reservation(current, claim, pod, allocation)
    if isinstance(written, str):
        return written
    try:
        store.update_status(written)
    except Conflict as e:
        verb = "add allocation and reservation to" if allocation is not None else "add reservation to"
        return f"{verb} claim {claim.key}: {e}"
    return None
