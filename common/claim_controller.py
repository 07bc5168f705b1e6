"""A stand-in for kube-controller-manager's ResourceClaim controller, for stores without one
(`simulate`'s memory store, the embedded store, tests on an API server without a controller
manager), as shard/provisioner.py stands in for the PersistentVolume controller.

Like kube's controller it follows the store (an informer over the ResourceClaimTemplates,
ResourceClaims and Pods, common.runtime.intake) and acts on what the events show, with no
read on the hot path:
* a pod naming a claim template gets a claim made from it, named
  `<pod>-<pod claim name>-<5 characters>`, controlled by the pod and annotated with the pod's
  claim name, and the pod's status.resourceClaimStatuses names it (kube's generated claims):
  two writes per pod, the status written over the watched document, so a pod that changed
  meanwhile is a Conflict, retried when its newer version arrives;
* a claim's status.reservedFor loses the pods that are gone or done;
* an allocated claim reserved for nobody any more is deallocated (its allocation cleared),
  which is what frees its devices for other pods;
* a generated claim whose pod is gone or done is deleted.

`step()` is one pass: the events since the last one (the first lists everything), then the
writes they call for; `simulate` and the tests call it, the bench's process
(benchmarks/claims.py) calls it in a loop that waits for events.
"""
from __future__ import annotations

import hashlib
import logging

from .errors import Conflict, ObjectError
from .model.dra import API_VERSION
from .model.objects import TERMINAL_PHASES, parse_object, raw_pod_key
from .runtime.intake import Intake, Kind, key_of

log = logging.getLogger(__name__)

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
        self.templates: dict[str, dict] = {}   # key -> ResourceClaimTemplate document
        self.claims: dict[str, dict] = {}      # key -> ResourceClaim document
        #: (namespace, owning pod's uid, pod claim name) -> the generated claim's name
        self.owned: dict[tuple, str] = {}
        #: pod uid -> keys of the claims that name it (their owner, or in reservedFor)
        self.by_uid: dict[str, set[str]] = {}
        #: uids of pods seen ended (deleted, done, being deleted) that some claim still names
        self.gone: set[str] = set()
        #: pod key -> its latest document, while it has template claims its status does not name
        self.waiting: dict[str, dict] = {}
        self.dirty_pods: set[str] = set()      # waiting pods to act on
        self.dirty_claims: set[str] = set()    # claims that may have something to release
        #: the uids of the pods listed, while an initial list is delivered (None: following events)
        self._listed: set[str] | None = set()
        self.intake = Intake([Kind("ResourceClaimTemplate", handle=self._apply_template),
                              Kind("ResourceClaim", handle=self._apply_claim),
                              Kind("Pod", handle=self._apply_pod)], logger=log)
        self.informer = self.intake.informer(store, self._forget)
        self._started = False

    def step(self, timeout: float = 0.0) -> int:
        """One pass: the store's events since the last pass (waiting up to `timeout` for the
        first; the first pass lists everything), then the writes they call for. Returns the
        number of writes."""
        if not self._started:
            self.informer.start()
            self._started = True
        else:
            self.informer.sync(timeout)
        if self._listed is not None:
            self._listed_all()
        return self._generate() + self._release_all()

    # --- following the store ---------------------------------------------------------------

    def _forget(self) -> None:
        """Before a relist: the fresh list brings back whatever still exists."""
        for d in (self.templates, self.claims, self.owned, self.by_uid, self.waiting):
            d.clear()
        self.gone.clear()
        self.dirty_pods.clear()
        self.dirty_claims.clear()
        self._listed = set()

    def _listed_all(self) -> None:
        """After an initial list (claims come before pods in it: every pod a listed claim
        names is in the later list if it lives): the pods claims name that were not listed
        are gone, and every claim is looked at once."""
        listed, self._listed = self._listed, None
        self.gone = {uid for uid in self.by_uid if uid not in listed}
        self.dirty_claims = set(self.claims)

    def _apply_template(self, type_: str, obj: dict) -> None:
        key = key_of("ResourceClaimTemplate", obj)
        if type_ == "DELETED":
            self.templates.pop(key, None)
            return
        self.templates[key] = obj
        self.dirty_pods.update(self.waiting)  # (kube's controller waits for the template too)

    def _apply_claim(self, type_: str, obj: dict) -> None:
        key = key_of("ResourceClaim", obj)
        old = self.claims.pop(key, None)
        if old is not None:
            owned, name = _owned(old)
            if self.owned.get(owned) == name:
                del self.owned[owned]
            for uid in _pod_uids(old):
                keys = self.by_uid.get(uid)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self.by_uid[uid]
                        self.gone.discard(uid)
        if type_ == "DELETED":
            return
        self.claims[key] = obj
        owned, name = _owned(obj)
        if owned[1] is not None:
            self.owned[owned] = name
        for uid in _pod_uids(obj):
            self.by_uid.setdefault(uid, set()).add(key)
        if self._listed is None and _to_release(obj, self.gone):
            self.dirty_claims.add(key)

    def _apply_pod(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)
        meta = obj.get("metadata") or {}
        if type_ == "DELETED" or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES \
                or meta.get("deletionTimestamp"):
            self.waiting.pop(key, None)
            self.dirty_pods.discard(key)
            uid = meta.get("uid")
            if self._listed is None and uid in self.by_uid:
                self.gone.add(uid)
                self.dirty_claims.update(self.by_uid[uid])
            return
        if self._listed is not None:
            self._listed.add(meta.get("uid"))
        if _claims_to_make(obj):
            self.waiting[key] = obj
            self.dirty_pods.add(key)
        elif self.waiting.pop(key, None) is not None:
            self.dirty_pods.discard(key)

    # --- writing -----------------------------------------------------------------------------

    def _generate(self) -> int:
        """The claims the dirty waiting pods need, made in one batch, then their statuses
        written over the documents the watch showed, in another. A pod whose write fails
        stays dirty when the store failed (nothing lost), and waits for its next event on a
        Conflict (it changed meanwhile)."""
        if not self.dirty_pods:
            return 0
        keys, self.dirty_pods = self.dirty_pods, set()
        try:
            plans = [plan for key in keys if key in self.waiting and (plan := self._plan(self.waiting[key]))]
            made = [c for claims, _ in plans for c in claims]
            failed = set()
            for e in self.store.create_many(made) if made else ():
                if e.field != "metadata.name":  # (a name taken: made by an earlier pass)
                    log.warning("cannot make a ResourceClaim from its template: %s", e)
                    failed.add(e.obj)
            writes = len(made) - len(failed)
            statuses = [pod for claims, pod in plans
                        if not any(f"ResourceClaim {_claim_key(c)}" in failed for c in claims)]
            results = self.store.update_status_many(statuses) if statuses else []
            return writes + sum(r is None for r in results)
        except BaseException:
            self.dirty_pods |= keys
            raise

    def _plan(self, pod: dict) -> tuple[list, dict] | None:
        """(the claims to make for a pod, its document with status.resourceClaimStatuses
        naming them), or None when nothing can be done yet (a template missing)."""
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        ns, uid = meta.get("namespace") or "default", meta.get("uid")
        named = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()
                 if isinstance(s, dict)}
        made = []
        before = len(named)
        for entry in spec.get("resourceClaims") or ():
            if (not isinstance(entry, dict) or not entry.get("resourceClaimTemplateName") or not entry.get("name")
                    or entry["name"] in named):
                continue
            name = self.owned.get((ns, uid, entry["name"]))
            if name is None:
                template = self.templates.get(f"{ns}/{entry['resourceClaimTemplateName']}")
                if template is None:
                    continue
                made.append(_claim_from(template, meta["name"], ns, uid, entry["name"]))
                name = made[-1]["metadata"]["name"]
            named[entry["name"]] = name
        if len(named) == before:
            return None
        written = {**status, "resourceClaimStatuses": [{"name": n, "resourceClaimName": c} for n, c in named.items()]}
        return made, {**pod, "metadata": dict(meta), "status": written}

    def _release_all(self) -> int:
        """`_release` of each claim an event may have left something to release on (rare:
        a pod that ended), one by one as before: a Conflict waits for the claim's next event."""
        writes = 0
        keys, self.dirty_claims = sorted(self.dirty_claims), set()
        for n, key in enumerate(keys):
            d = self.claims.get(key)
            if d is None or not _to_release(d, self.gone):
                continue
            try:
                writes += self._release(parse_object(d))
            except ObjectError:
                continue  # admission reports it; this controller has nothing to do with it
            except BaseException:
                self.dirty_claims.update(keys[n:])
                raise
        return writes

    def _release(self, claim) -> int:
        """Drop consumers that are gone, deallocate a claim nobody uses, delete a generated
        claim whose pod is done."""
        gone = self.gone
        if claim.owner is not None and claim.owner[0] == "Pod" and claim.owner[2] in gone:
            return 1 if self.store.delete("ResourceClaim", claim.key) else 0
        reserved = [r for r in claim.reserved_for if r[2] not in gone]
        if len(reserved) == len(claim.reserved_for) and (reserved or claim.allocation is None):
            return 0
        current = self.store.get("ResourceClaim", claim.key)
        if current is None:
            return 0
        status = dict(current.get("status") or {})
        status["reservedFor"] = [r for r in status.get("reservedFor") or [] if r.get("uid") not in gone]
        if not status["reservedFor"]:
            status.pop("reservedFor")
            status.pop("allocation", None)
            status.pop("devices", None)
        current["status"] = status
        try:
            self.store.update_status(current)
        except Conflict:
            return 0  # its newer version's event looks again
        return 1


def _claim_from(template: dict, pod_name: str, ns: str, pod_uid: str, claim_name: str) -> dict:
    """The claim kube's controller makes for a pod's entry from its template."""
    spec = template["spec"]
    meta = spec.get("metadata") or {}
    return {"apiVersion": API_VERSION, "kind": "ResourceClaim",
            "metadata": {"name": generated_name(pod_name, claim_name, pod_uid), "namespace": ns,
                         "labels": dict(meta.get("labels") or {}),
                         "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_NAME: claim_name},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid,
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec["spec"]}


def _claim_key(claim: dict) -> str:
    return f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"


def _pod_uids(claim: dict) -> set:
    """The uids of the pods a claim document names: its owner, its consumers."""
    out = set()
    owner = _controller(claim)
    if owner is not None and owner.get("kind") == "Pod" and owner.get("uid"):
        out.add(owner["uid"])
    for r in (claim.get("status") or {}).get("reservedFor") or ():
        if isinstance(r, dict) and r.get("uid"):
            out.add(r["uid"])
    return out


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


def _to_release(claim: dict, gone: set) -> bool:
    """Whether a claim document has a consumer gone, an allocation nobody uses, or an owning
    pod gone (what `_release` acts on)."""
    owner = _controller(claim)
    if owner is not None and owner.get("kind") == "Pod" and owner.get("uid") in gone:
        return True
    status = claim.get("status") or {}
    reserved = status.get("reservedFor") or ()
    if any(isinstance(r, dict) and r.get("uid") in gone for r in reserved):
        return True
    return not reserved and bool(status.get("allocation"))
