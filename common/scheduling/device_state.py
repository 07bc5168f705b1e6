"""What a process knows of Dynamic Resource Allocation's objects, with the allocations it has
in flight laid over them (kube's assume cache plus inFlightAllocations): the shard's
DynamicResources plugin reads it, the binder's device check and its PreBind write through it.

`allocated()` is every device some claim holds: the claims' allocations as the store has
them, plus the allocations this process assumed and has not seen written back yet. A device
is in it until every holder let go of it (the claim deallocated or deleted, the assumption
reverted), so nothing gives it twice. Holders are counted, not just noted: an assumption
that lost its device to another claim (two shards took the same one; the watch showed the
other's allocation before the binder refused ours) must leave the device taken when it is
reverted, or the shard chose it again on every retry and was refused every time.
`free_matching` counts, per node, the free devices a class and a request's selectors accept,
kept in step with every device given or given back, so Filter can turn away the nodes
without enough of them in one numpy pass instead of trying an allocation on each. A device
counts once per holder there: two claims holding one device (ours in flight, another
shard's written meanwhile) will hold two once the binder, which allocates again in its own
view, has given ours another one, so the node has two fewer free, not one (counted once,
the shard sent pods to nodes already full and the binder refused them).
`pod_claims` is kube's foreachPodResourceClaim, with its messages.
"""
from __future__ import annotations

from .dra import CelCache, Inventory, allocated_devices, matching_by_node, selector_key

#: Selector sets whose per-node counts are kept at once (more: all are dropped and rebuilt).
MATCHING_LIMIT = 64


class Matching:
    """One selector set's devices on node-local slices: the node of each accepted device, the
    free ones per node (a device less per holder), and the nodes where a selector failed
    (their Filter is an Error)."""
    __slots__ = ("node_of", "free", "broken")

    def __init__(self, node_of: dict, total: dict, broken: set, holders: dict):
        self.node_of, self.broken = node_of, broken
        self.free = dict(total)
        for d, n in holders.items():
            node = node_of.get(d)
            if node is not None:
                self.free[node] -= n


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
        self._holders: dict = {}       # device id -> how many claims and assumptions hold it
        self._inventory = None
        self._matching: dict = {}      # selector_key -> Matching (while the inventory lasts)

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
            self._new_inventory()

    def remove(self, kind: str, key: str) -> None:
        if kind == "ResourceClaim":
            self.claims.pop(key, None)
            self._forget_assumed(key)
            self._hold(key, [])
        elif kind == "DeviceClass":
            self.classes.pop(key, None)
        elif kind == "ResourceSlice":
            if self.slices.pop(key, None) is not None:
                self._new_inventory()

    def _new_inventory(self) -> None:
        self._inventory = None
        self._matching = {}

    def _hold(self, key: str, devices: list) -> None:
        for d in self._held.pop(key, ()):
            self._drop(d)
        if devices:
            self._held[key] = devices
            self._take(devices)

    def _take(self, devices) -> None:
        holders = self._holders
        for d in devices:
            holders[d] = holders.get(d, 0) + 1
            if holders[d] == 1:
                self._allocated.add(d)
            for m in self._matching.values():
                node = m.node_of.get(d)
                if node is not None:
                    m.free[node] -= 1

    def _drop(self, d) -> None:
        """One holder of `d` let go; it is free once none is left."""
        held = self._holders.get(d)
        if held is None:
            return
        for m in self._matching.values():
            node = m.node_of.get(d)
            if node is not None:
                m.free[node] += 1
        if held > 1:
            self._holders[d] = held - 1
            return
        del self._holders[d]
        self._allocated.discard(d)

    # --- reads ---------------------------------------------------------------------------------

    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = Inventory(self.slices.values())
        return self._inventory

    def allocated(self) -> set:
        return self._allocated

    def free_matching(self, cls, request, claim_key: str) -> Matching:
        """The per-node counts of the free node-local devices `cls` and `request` accept
        (`claim_key` names the claim in a selector's error), built on first use."""
        key = selector_key(cls, request)
        got = self._matching.get(key)
        if got is None:
            if len(self._matching) >= MATCHING_LIMIT:
                self._matching = {}
            got = self._matching[key] = Matching(*matching_by_node(self.inventory(), cls, request, self.cel, claim_key),
                                                 self._holders)
        return got

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
        self._forget_assumed(claim.key)  # (one assumption per claim: a replaced one lets go)
        self.assumed[claim.key] = (claim.uid, allocation)
        self._take(allocated_devices(allocation))

    def revert(self, claim_key: str) -> None:
        """Forget an allocation in flight that was not written (its pod was not bound)."""
        self._forget_assumed(claim_key)

    def _forget_assumed(self, key: str) -> None:
        got = self.assumed.pop(key, None)
        if got is None:
            return
        for d in allocated_devices(got[1]):
            self._drop(d)


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
