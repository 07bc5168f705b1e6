"""A stand-in for kube-controller-manager's ResourceClaim controller, for stores without one
(`simulate`'s memory store, the embedded store, tests on an API server without a controller
manager), as shard/provisioner.py stands in for the PersistentVolume controller.

`step()` looks at every pod and claim once and does the controller's part:
* a pod naming a claim template gets a claim made from it, named
  `<pod>-<pod claim name>-<5 characters>`, controlled by the pod and annotated with the pod's
  claim name, and the pod's status.resourceClaimStatuses names it (kube's generated claims);
* a claim's status.reservedFor loses the pods that are gone or done;
* an allocated claim reserved for nobody any more is deallocated (its allocation cleared),
  which is what frees its devices for other pods;
* a generated claim whose pod is gone or done is deleted.
"""
from __future__ import annotations

import hashlib

from .errors import Conflict, ObjectError
from .model.dra import API_VERSION
from .model.objects import TERMINAL_PHASES, parse_object

#: kube's annotation on a generated claim: the pod's claim entry it was made for.
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's generateName characters


def generated_name(pod_name: str, claim_name: str, pod_uid: str) -> str:
    """`<pod>-<claim>-<suffix>` as kube's generateName makes it, the suffix derived from the
    pod's uid so a replay (simulate) names the claim the same way."""
    digest = hashlib.sha256(f"{pod_uid}/{claim_name}".encode()).digest()
    suffix = "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])
    base = f"{pod_name}-{claim_name}"[:57]
    return f"{base}-{suffix}"


class ClaimController:
    def __init__(self, store):
        self.store = store

    def step(self) -> int:
        """One pass over the pods and claims; returns the number of writes. Only the objects
        with something to do are parsed (a glance at the raw document tells): a pass over a
        settled cluster parses nothing."""
        # claims before pods: every pod a listed claim is reserved for is in the later list
        raw_claims = self.store.list("ResourceClaim")[0]
        live, pods = set(), []
        for d in self.store.list("Pod")[0]:
            meta = d.get("metadata") or {}
            if (d.get("status") or {}).get("phase") in TERMINAL_PHASES or meta.get("deletionTimestamp"):
                continue
            live.add(meta.get("uid"))
            if _claims_to_make(d):  # only these are parsed
                try:
                    pods.append(parse_object(d))
                except ObjectError:
                    continue  # admission reports it; this controller has nothing to do with it
        writes = 0
        owned = dict(_owned(d) for d in raw_claims)
        for pod in pods:
            writes += self._generate(pod, owned)
        for d in raw_claims:
            if _to_release(d, live):
                try:
                    writes += self._release(parse_object(d), live)
                except ObjectError:
                    continue
        return writes

    def _generate(self, pod, owned: dict) -> int:
        """Claims made from the pod's templates, and their names in the pod's status."""
        statuses = dict(pod.claim_statuses)
        writes = 0
        for pc in pod.resource_claims:
            if not pc.template_name or pc.name in statuses:
                continue
            name = owned.get((pod.namespace, pod.uid, pc.name))
            if name is None:
                template = self.store.get("ResourceClaimTemplate", f"{pod.namespace}/{pc.template_name}")
                if template is None:
                    continue  # kube's controller waits for the template too
                name = self._create(pod, pc.name, template)
                writes += 1
            statuses[pc.name] = name
        if statuses != pod.claim_statuses:
            writes += self._write_pod_statuses(pod, statuses)
        return writes

    def _create(self, pod, claim_name: str, template: dict) -> str:
        spec = template["spec"]
        meta = spec.get("metadata") or {}
        name = generated_name(pod.name, claim_name, pod.uid)
        doc = {"apiVersion": API_VERSION, "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": pod.namespace, "labels": dict(meta.get("labels") or {}),
                            "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_NAME: claim_name},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                                 "controller": True, "blockOwnerDeletion": True}]},
               "spec": spec["spec"]}
        try:
            self.store.create(doc)
        except Conflict:
            pass  # made in an earlier pass whose pod status write was lost: the name is the same
        return name

    def _write_pod_statuses(self, pod, statuses: dict) -> int:
        current = self.store.get("Pod", pod.key)
        if current is None or (current.get("metadata") or {}).get("uid") != pod.uid:
            return 0
        status = dict(current.get("status") or {})
        status["resourceClaimStatuses"] = [{"name": n, "resourceClaimName": c} for n, c in statuses.items()]
        current["status"] = status
        try:
            self.store.update_status(current)
        except Conflict:
            return 0  # the next pass sees the pod as it is now
        return 1

    def _release(self, claim, live: set) -> int:
        """Drop consumers that are gone, deallocate a claim nobody uses, delete a generated
        claim whose pod is done."""
        if claim.owner is not None and claim.owner[0] == "Pod" and claim.owner[2] not in live:
            return 1 if self.store.delete("ResourceClaim", claim.key) else 0
        reserved = [r for r in claim.reserved_for if r[2] in live]
        if len(reserved) == len(claim.reserved_for) and (reserved or claim.allocation is None):
            return 0
        current = self.store.get("ResourceClaim", claim.key)
        if current is None:
            return 0
        status = dict(current.get("status") or {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if r.get("uid") in live]
        if not status["reservedFor"]:
            status.pop("reservedFor")
            status.pop("allocation", None)
            status.pop("devices", None)
        current["status"] = status
        try:
            self.store.update_status(current)
        except Conflict:
            return 0
        return 1


def _claims_to_make(pod: dict) -> bool:
    """Whether a pod document has a template entry its status does not name a claim for yet."""
    entries = (pod.get("spec") or {}).get("resourceClaims") or ()
    wanted = {e.get("name") for e in entries if isinstance(e, dict) and e.get("resourceClaimTemplateName")}
    if not wanted:
        return False
    named = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or () if isinstance(s, dict)}
    return not wanted <= named


def _controller(claim: dict) -> dict | None:
    for r in (claim.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(r, dict) and r.get("controller"):
            return r
    return None


def _owned(claim: dict) -> tuple:
    """((namespace, owning pod's uid, pod claim name), claim name) of a claim document."""
    meta = claim.get("metadata") or {}
    owner = _controller(claim) or {}
    pod_uid = owner.get("uid") if owner.get("kind") == "Pod" else None
    return (meta.get("namespace"), pod_uid, (meta.get("annotations") or {}).get(POD_CLAIM_NAME)), meta.get("name")


def _to_release(claim: dict, live: set) -> bool:
    """Whether a claim document has a consumer gone, an allocation nobody uses, or an owning
    pod gone (what `_release` acts on)."""
    owner = _controller(claim)
    if owner is not None and owner.get("kind") == "Pod" and owner.get("uid") not in live:
        return True
    status = claim.get("status") or {}
    reserved = status.get("reservedFor") or ()
    if any(not isinstance(r, dict) or r.get("uid") not in live for r in reserved):
        return True
    return not reserved and bool(status.get("allocation"))
