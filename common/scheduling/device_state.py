"""What a process knows of Dynamic Resource Allocation's objects, with the allocations it has
in flight laid over them (kube's assume cache plus inFlightAllocations): the shard's
DynamicResources plugin reads it, the binder's device check and its PreBind write through it.

`allocated()` is every device some claim holds: the claims' allocations as the store has
them, plus the allocations this process assumed and has not seen written back yet. A device
is in it until the claim holding it is deallocated or deleted, so nothing gives it twice.
`pod_claims` is kube's foreachPodResourceClaim, with its messages.
"""
from __future__ import annotations

from .dra import CelCache, Inventory, allocated_devices


class DeviceState:
    def __init__(self):
        self.clear()
        self.cel = CelCache()

    def clear(self) -> None:
        self.claims: dict = {}         # key -> ResourceClaim as the store has it
        self.classes: dict = {}        # name -> DeviceClass
        self.slices: dict = {}         # name -> ResourceSlice
        self.assumed: dict = {}        # claim key -> (claim uid, allocation document) in flight
        self._held: dict = {}          # claim key -> device ids the store's allocation holds
        self._allocated: set = set()   # every device held, stored or assumed
        self._inventory = None

    # --- following the store -----------------------------------------------------------------

    def set(self, obj) -> None:
        kind = obj.kind
        if kind == "ResourceClaim":
            self.claims[obj.key] = obj
            assumed = self.assumed.get(obj.key)
            if assumed is not None and (obj.uid != assumed[0] or obj.allocation is not None):
                self._forget_assumed(obj.key)  # written back (or the claim is another one now)
            self._hold(obj.key, obj.allocation.devices() if obj.allocation is not None else [])
        elif kind == "DeviceClass":
            self.classes[obj.name] = obj
        elif kind == "ResourceSlice":
            self.slices[obj.name] = obj
            self._inventory = None

    def remove(self, kind: str, key: str) -> None:
        if kind == "ResourceClaim":
            self.claims.pop(key, None)
            self._forget_assumed(key)
            self._hold(key, [])
        elif kind == "DeviceClass":
            self.classes.pop(key, None)
        elif kind == "ResourceSlice":
            if self.slices.pop(key, None) is not None:
                self._inventory = None

    def _hold(self, key: str, devices: list) -> None:
        for d in self._held.pop(key, ()):
            self._allocated.discard(d)
        if devices:
            self._held[key] = devices
            self._allocated.update(devices)
        assumed = self.assumed.get(key)
        if assumed is not None:  # (its devices stay held while in flight)
            self._allocated.update(allocated_devices(assumed[1]))

    # --- reads ---------------------------------------------------------------------------------

    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = Inventory(self.slices.values())
        return self._inventory

    def allocated(self) -> set:
        return self._allocated

    def allocation_of(self, claim):
        """The claim's allocation document: the store's, else the one in flight, else None."""
        if claim.allocation is not None:
            return claim.allocation.raw
        assumed = self.assumed.get(claim.key)
        return assumed[1] if assumed is not None and assumed[0] == claim.uid else None

    def in_flight(self, claim) -> bool:
        return claim.key in self.assumed and claim.allocation is None

    # --- allocations in flight -----------------------------------------------------------------

    def assume(self, claim, allocation: dict) -> None:
        self.assumed[claim.key] = (claim.uid, allocation)
        self._allocated.update(allocated_devices(allocation))

    def revert(self, claim_key: str) -> None:
        """Forget an allocation in flight that was not written (its pod was not bound)."""
        self._forget_assumed(claim_key)

    def _forget_assumed(self, key: str) -> None:
        got = self.assumed.pop(key, None)
        if got is None:
            return
        held = set(self._held.get(key, ()))
        for d in allocated_devices(got[1]):
            if d not in held:
                self._allocated.discard(d)


def claim_name(pod, pc) -> tuple[str | None, bool, str | None]:
    """kube's resourceclaim.Name: (claim name or None when none is needed, whether the claim
    must be the pod's own, error message)."""
    if pc.claim_name:
        return pc.claim_name, False, None
    if pc.name in pod.claim_statuses:
        return pod.claim_statuses[pc.name], True, None
    return None, True, f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'


def pod_claims(pod, claims: dict) -> tuple[list, str | None]:
    """The pod's claims in spec order (kube's foreachPodResourceClaim), or the message of the
    first that keeps it from being scheduled (missing, being deleted, not the pod's own)."""
    out = []
    for pc in pod.resource_claims:
        name, own, why = claim_name(pod, pc)
        if why is not None:
            return [], why
        if name is None:
            continue
        claim = claims.get(f"{pod.namespace}/{name}")
        if claim is None:
            return [], f'resourceclaim.resource.k8s.io "{name}" not found'
        if claim.deleting:
            return [], f'resourceclaim "{name}" is being deleted'
        if own and (claim.owner is None or claim.owner[2] != pod.uid):
            return [], (f"ResourceClaim {claim.key} was not created for pod {pod.namespace}/{pod.name} "
                        "(pod is not owner)")
        out.append(claim)
    return out, None
