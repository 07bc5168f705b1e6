"""What kube-scheduler's four volume plugins decide, over the storage objects a process keeps.

The shard's plugins (shard/plugins/volume_*.py, node_volume_limits.py), the binder's checks
(common/scheduling/checks.py) and `verify` all call these functions, so the three judge volumes alike.
The rules and messages are kube-scheduler v1.37's (pkg/scheduler/framework/plugins/
volumebinding, volumerestrictions, volumezone, nodevolumelimits and component-helpers'
storage/volume), function by function; where kube returns a status, these return a
`Refusal` (code and reasons), None meaning "passes".

`VolumeState` keeps the claims, volumes, classes and CSINodes, plus the bindings a scheduler
has decided but not yet seen land (kube's PV and PVC assume caches): an assumed claim or
volume is what every read returns until the watch brings a newer version of it.

Not modelled: CSIStorageCapacity and CSIDriver objects (capacity is never short, as kube
decides when no CSIDriver asks for capacity tracking), VolumeAttachments (NodeVolumeLimits
counts the volumes of the pods on the node only), VolumeAttributesClasses (GA since v1.34,
not modelled: a volume naming one is never matched), and the CSI translation of
in-tree volumes beyond the driver name and the volume's identity.
"""
from __future__ import annotations

import copy

from ..model.storage_objects import (BOUND_BY_CONTROLLER, IN_TREE_DRIVERS, NO_PROVISIONER,
                                     READ_WRITE_ONCE_POD, SELECTED_NODE, WAIT_FOR_FIRST_CONSUMER, ClaimRef)

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

# VolumeBinding
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# VolumeRestrictions
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
                 "in-use by another pod")
# VolumeZone
ZONE_CONFLICT = "node(s) had no available volume zone"
# NodeVolumeLimits
MAX_VOLUME_COUNT = "node(s) exceed max volume count"

ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
               "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
GA_LABEL = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}
#: Multi-zone label values ("a__b") as cloud-provider's LabelZonesToSet splits them.
ZONE_DELIMITER = "__"


class Refusal:
    """A plugin's verdict against a pod: its status code and reasons (kube's Status)."""

    __slots__ = ("code", "reasons")

    def __init__(self, code: str, *reasons: str):
        self.code, self.reasons = code, reasons

    def message(self) -> str:
        return ", ".join(self.reasons)

    def __repr__(self):
        return f"Refusal({self.code}, {self.reasons!r})"


def not_found(resource: str, name: str) -> str:
    """The API's NotFound message, as kube-scheduler passes it on."""
    return f'{resource} "{name}" not found'


def claim_volumes(pod) -> list:
    """The pod's volumes that mount a claim (persistentVolumeClaim or ephemeral)."""
    return [v for v in pod.volumes if v.claim is not None]


class VolumeState:
    """Claims (by "namespace/name"), volumes, classes and CSINodes (by name), as the watch
    shows them, with the bindings assumed by this process laid over them."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """Forget everything (before a relist brings it back)."""
        self.claims: dict = {}
        self.volumes: dict = {}
        self.classes: dict = {}
        self.csi_nodes: dict = {}
        self._by_class: dict[str, dict] = {}   # class name -> {volume name: PV}
        self._assumed_volumes: dict = {}       # name -> PV as this process bound it
        self._assumed_claims: dict = {}        # key -> PVC as this process annotated it

    # --- following the store -----------------------------------------------------------------

    def set(self, obj) -> None:
        """A parsed storage object was added or changed (a newer version than any assumed)."""
        kind = obj.kind
        if kind == "PersistentVolumeClaim":
            self.claims[obj.key] = obj
            self._assumed_claims.pop(obj.key, None)
        elif kind == "PersistentVolume":
            self.remove("PersistentVolume", obj.name)
            self.volumes[obj.name] = obj
            self._by_class.setdefault(obj.class_name, {})[obj.name] = obj
        elif kind == "StorageClass":
            self.classes[obj.name] = obj
        elif kind == "CSINode":
            self.csi_nodes[obj.name] = obj

    def remove(self, kind: str, key: str) -> None:
        if kind == "PersistentVolumeClaim":
            self.claims.pop(key, None)
            self._assumed_claims.pop(key, None)
        elif kind == "PersistentVolume":
            old = self.volumes.pop(key, None)
            self._assumed_volumes.pop(key, None)
            if old is not None:
                same = self._by_class.get(old.class_name, {})
                same.pop(key, None)
                if not same:
                    self._by_class.pop(old.class_name, None)
        elif kind == "StorageClass":
            self.classes.pop(key, None)
        elif kind == "CSINode":
            self.csi_nodes.pop(key, None)

    # --- reads (assumed versions first) ---------------------------------------------------------

    def claim(self, namespace: str, name: str):
        key = f"{namespace}/{name}"
        return self._assumed_claims.get(key) or self.claims.get(key)

    def volume(self, name: str):
        return self._assumed_volumes.get(name) or self.volumes.get(name)

    def volumes_of_class(self, class_name: str) -> list:
        """The volumes of a class (kube's PV assume cache by class index), by name."""
        names = self._by_class.get(class_name, {})
        return [self.volume(n) for n in sorted(names)]

    # --- assumptions -------------------------------------------------------------------------

    def assume(self, plan: "PodVolumes", node_name: str) -> None:
        """kube's AssumePodVolumes: each chosen volume bound to its claim, each claim to
        provision annotated with the node, until the watch shows newer versions of them."""
        for pv, claim in plan.static:
            bound = copy.copy(pv)
            bound.claim_ref = ClaimRef(claim.namespace, claim.name, claim.uid)
            if BOUND_BY_CONTROLLER not in pv.annotations:
                bound.annotations = dict(pv.annotations, **{BOUND_BY_CONTROLLER: "yes"})
            self._assumed_volumes[pv.name] = bound
        for claim in plan.provisions:
            annotated = copy.copy(claim)
            annotated.annotations = dict(claim.annotations, **{SELECTED_NODE: node_name})
            self._assumed_claims[claim.key] = annotated

    def revert(self, plan: "PodVolumes") -> None:
        """kube's RevertAssumedPodVolumes."""
        for pv, _ in plan.static:
            self._assumed_volumes.pop(pv.name, None)
        for claim in plan.provisions:
            self._assumed_claims.pop(claim.key, None)


# --- VolumeRestrictions ---------------------------------------------------------------------------

def rwop_claims(pod, vs: VolumeState):
    """(names of the pod's ReadWriteOncePod claims, None), or (None, Refusal) when a claim of a
    persistentVolumeClaim volume does not exist (ephemeral volumes are not looked at)."""
    names = set()
    for v in pod.volumes:
        if v.claim is None or v.ephemeral:
            continue
        claim = vs.claim(pod.namespace, v.claim)
        if claim is None:
            return None, Refusal(UNRESOLVABLE, not_found("persistentvolumeclaim", v.claim))
        if READ_WRITE_ONCE_POD in claim.access_modes:
            names.add(claim.name)
    return names, None


def rwop_conflicts(pod, names, claims_in_use) -> int:
    """How many of those claims pods placed anywhere use (kube's usedPVCSet)."""
    return sum(1 for name in names if claims_in_use.get(f"{pod.namespace}/{name}"))


def rwop_uses(other, names) -> int:
    """What `other` adds to that count (kube's conflictingPVCRefCountForPod, which compares
    claim names only)."""
    return sum(1 for v in other.volumes if v.claim is not None and not v.ephemeral and v.claim in names)


def has_inline_disks(pod) -> bool:
    return any(v.disk is not None for v in pod.volumes)


def disks_conflict(pod, node_pods) -> bool:
    """kube's isVolumeConflict over the pods on a node: the same GCE PD unless both read
    only, the same EBS volume, the same iSCSI IQN unless both read only, the same RBD image
    with a monitor in common unless both read only."""
    mine = [v.disk for v in pod.volumes if v.disk is not None]
    for other in node_pods:
        for theirs in (v.disk for v in other.volumes if v.disk is not None):
            for disk in mine:
                if _conflict(disk, theirs):
                    return True
    return False


def _conflict(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "aws":
        return a[1] == b[1]
    if a[0] == "rbd":
        return bool(a[1] & b[1]) and a[2:4] == b[2:4] and not (a[4] and b[4])
    return a[1] == b[1] and not (a[2] and b[2])  # gce, iscsi


# --- NodeVolumeLimits ---------------------------------------------------------------------------

def counts_volumes(pod) -> bool:
    """kube's CSILimits PreFilter: only pods with claims or migratable inline disks."""
    return any(v.claim is not None or v.in_tree is not None for v in pod.volumes)


def attachable(pod, vs: VolumeState, csi_node, new: bool, out: dict, handle_prefix: str):
    """kube's filterAttachableVolumes: fill `out` (unique volume name -> CSI driver) with the
    pod's volumes that count against a driver's limit. For the pod being placed (`new`) a
    missing claim is a Refusal; for pods already there it is skipped."""
    for v in pod.volumes:
        if v.claim is None:
            if v.in_tree is not None:
                plugin, driver, ident = v.in_tree
                if csi_node is not None:  # kube's isCSIMigrationOn: on for these plugins with a CSINode
                    out[f"{driver}/{ident}"] = driver
            continue
        claim = vs.claim(pod.namespace, v.claim)
        if claim is None:
            if new:
                return Refusal(UNRESOLVABLE, f"looking up PVC {pod.namespace}/{v.claim}: "
                                             f"{not_found('persistentvolumeclaim', v.claim)}")
            continue
        if v.ephemeral and (claim.owner_uid != pod.uid or claim.namespace != pod.namespace):
            return Refusal(UNRESOLVABLE, _not_for_pod(claim, pod))
        driver, handle = _csi_driver_info(claim, vs, csi_node, handle_prefix)
        if driver and handle:
            out[f"{driver}/{handle}"] = driver
    return None


def _csi_driver_info(claim, vs: VolumeState, csi_node, handle_prefix: str) -> tuple:
    pv = vs.volume(claim.volume_name) if claim.volume_name else None
    if pv is not None:
        if pv.csi is None:
            return "", ""
        if len(pv.csi) == 2:
            return pv.csi
        _, driver, ident = pv.csi
        return (driver, ident) if csi_node is not None else ("", "")
    sc = vs.classes.get(claim.class_name) if claim.class_name else None
    if sc is None:
        return "", ""
    handle = f"{handle_prefix}-{claim.namespace}/{claim.name}"
    if sc.provisioner in IN_TREE_DRIVERS:
        return (IN_TREE_DRIVERS[sc.provisioner], handle) if csi_node is not None else ("", "")
    return sc.provisioner, handle


def volume_limits(pod, node_name: str, node_pods, vs: VolumeState, handle_prefix: str):
    """kube's CSILimits Filter on one node: a Refusal when the pod's new volumes would take a
    driver past the node's CSINode allocatable count, else None."""
    if not pod.volumes:
        return None
    csi_node = vs.csi_nodes.get(node_name)
    new: dict = {}
    refusal = attachable(pod, vs, csi_node, True, new, handle_prefix)
    if refusal is not None or not new:
        return refusal
    limits = csi_node.limits if csi_node is not None else {}
    if not limits:
        return None
    attached: dict = {}
    for other in node_pods:
        if other.volumes:
            attachable(other, vs, csi_node, False, attached, handle_prefix)
    in_use: dict = {}
    for name, driver in attached.items():
        new.pop(name, None)
        in_use[driver] = in_use.get(driver, 0) + 1
    adding: dict = {}
    for driver in new.values():
        adding[driver] = adding.get(driver, 0) + 1
    for driver, count in adding.items():
        limit = limits.get(driver)
        if limit is not None and in_use.get(driver, 0) + count > limit:
            return Refusal(UNSCHEDULABLE, MAX_VOLUME_COUNT)
    return None


# --- VolumeBinding -------------------------------------------------------------------------------

def _not_for_pod(claim, pod) -> str:
    return (f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} "
            f"(pod is not owner)")


class PodVolumeClaims:
    """kube's PodVolumeClaims: the pod's claims sorted by what binding them still needs."""

    __slots__ = ("bound", "delayed", "immediate")

    def __init__(self):
        self.bound, self.delayed, self.immediate = [], [], []


class PodVolumes:
    """What placing a pod on one node takes (kube's PodVolumes): volumes to bind to claims
    (static) and claims to provision there (dynamic)."""

    __slots__ = ("static", "provisions")

    def __init__(self, static=(), provisions=()):
        self.static = list(static)          # [(PV, claim)]
        self.provisions = list(provisions)  # [claim]

    def __bool__(self) -> bool:
        return bool(self.static or self.provisions)


def delay_binding(claim, vs: VolumeState) -> bool:
    """kube's IsDelayBindingMode: the claim's class exists and waits for the first consumer."""
    sc = vs.classes.get(claim.class_name) if claim.class_name else None
    return sc is not None and sc.binding_mode == WAIT_FOR_FIRST_CONSUMER


def binding_claims(pod, vs: VolumeState):
    """kube's VolumeBinding PreFilter: (claims, None), (None, Refusal), or (None, None) when
    the pod mounts no claim (the plugin skips it)."""
    volumes = claim_volumes(pod)
    if not volumes:
        return None, None
    claims = []
    for v in volumes:
        claim = vs.claim(pod.namespace, v.claim)
        if claim is None:
            why = (f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{v.claim}"'
                   if v.ephemeral else not_found("persistentvolumeclaim", v.claim))
            return None, Refusal(UNRESOLVABLE, why)
        if claim.phase == "Lost":
            return None, Refusal(UNRESOLVABLE, f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                                               f'persistentvolume "{claim.volume_name}"')
        if claim.deleting:
            return None, Refusal(UNRESOLVABLE, f'persistentvolumeclaim "{claim.name}" is being deleted')
        if v.ephemeral and (claim.owner_uid != pod.uid or claim.namespace != pod.namespace):
            return None, Refusal(UNRESOLVABLE, _not_for_pod(claim, pod))
        claims.append(claim)
    out = PodVolumeClaims()
    for claim in claims:
        if claim.fully_bound:
            out.bound.append(claim)
        elif delay_binding(claim, vs) and not claim.volume_name:
            out.delayed.append(claim)
        else:
            out.immediate.append(claim)
    if out.immediate:
        return None, Refusal(UNRESOLVABLE, UNBOUND_IMMEDIATE)
    return out, None


def volume_fits(pv, labels: dict) -> bool:
    """kube's CheckNodeAffinity: the volume's required node affinity admits the node."""
    if not pv.node_affinity:
        return True
    return any(t.matches(labels, "") for t in pv.node_affinity)


def matching_volume(claim, volumes, node, chosen: set):
    """kube's FindMatchingVolume for a claim that waits for its first consumer, on `node`:
    a volume already bound to it, else the smallest available one of its class that is big
    enough, of its volume mode and access modes, matching its selector and the node."""
    best = None
    for pv in volumes:
        if pv.name in chosen:
            continue
        if pv.claim_ref is not None and not pv.claim_ref.refers_to(claim):
            continue
        if pv.capacity < claim.request or pv.volume_mode != claim.volume_mode:
            continue
        if pv.has_attributes_class or pv.deleting:
            continue
        fits = volume_fits(pv, node.labels)
        if pv.claim_ref is not None:  # pre-bound to this claim
            return pv if fits else None
        if pv.phase != "Available" or (claim.selector is not None and not claim.selector.matches(pv.labels)):
            continue
        if pv.class_name != claim.class_name or not fits:
            continue
        if not set(claim.access_modes) <= set(pv.access_modes):
            continue
        if best is None or pv.capacity < best.capacity:
            best = pv
    return best


def find_pod_volumes(claims: PodVolumeClaims, node, vs: VolumeState):
    """kube's FindPodVolumes on one node: (PodVolumes, reasons); no reasons means it fits."""
    bound_ok = unbound_ok = pv_found = True
    for claim in claims.bound:
        pv = vs.volume(claim.volume_name)
        if pv is None:
            pv_found = False
            break
        if not volume_fits(pv, node.labels):
            bound_ok = False
            break
    static, provisions = [], []
    if claims.delayed:
        to_provision, to_match = [], []
        for claim in claims.delayed:
            selected = claim.selected_node
            if selected is not None and selected != node.name:
                unbound_ok = False
                break
            (to_provision if selected is not None else to_match).append(claim)
        else:
            chosen: set = set()
            for claim in sorted(to_match, key=lambda c: c.request):  # kube's byPVCSize
                pv = matching_volume(claim, vs.volumes_of_class(claim.class_name), node, chosen)
                if pv is None:
                    to_provision.append(claim)
                    unbound_ok = False
                else:
                    chosen.add(pv.name)
                    static.append((pv, claim))
            if to_provision:
                unbound_ok = _can_provision(to_provision, node, vs)
                provisions = to_provision if unbound_ok else []
    reasons = [r for r, ok in ((NODE_CONFLICT, bound_ok), (BIND_CONFLICT, unbound_ok), (PV_NOT_EXIST, pv_found))
               if not ok]
    return PodVolumes(static, provisions), reasons


def _can_provision(claims, node, vs: VolumeState) -> bool:
    """kube's checkVolumeProvisions: every claim's class has a provisioner whose allowed
    topologies admit the node (capacity is not tracked: always enough)."""
    for claim in claims:
        sc = vs.classes.get(claim.class_name)
        if sc is None or sc.provisioner in ("", NO_PROVISIONER) or not sc.allows(node.labels):
            return False
    return True


def binding_refusal(reasons) -> Refusal | None:
    return Refusal(UNRESOLVABLE, *reasons) if reasons else None


def waiting_for_provisioning(pod, vs: VolumeState) -> bool:
    """Whether a claim of the pod was handed to a provisioner for a node (the annotation
    written in PreBind) and is not bound yet: the pod waits for storage, not for a node."""
    for v in claim_volumes(pod):
        claim = vs.claim(pod.namespace, v.claim)
        if claim is not None and claim.selected_node is not None and not claim.fully_bound:
            return True
    return False


# --- VolumeZone ---------------------------------------------------------------------------------

def zone_topologies(pod, vs: VolumeState):
    """kube's VolumeZone PreFilter: ([(label key, allowed values)], None) from the bound
    volumes' zone and region labels, or (None, Refusal)."""
    out = []
    for v in pod.volumes:
        if v.claim is None or v.ephemeral:
            continue
        if not v.claim:
            return None, Refusal(UNRESOLVABLE, "PersistentVolumeClaim had no name")
        claim = vs.claim(pod.namespace, v.claim)
        if claim is None:
            return None, Refusal(UNRESOLVABLE, not_found("persistentvolumeclaim", v.claim))
        if not claim.volume_name:
            if not claim.class_name:
                return None, Refusal(UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name")
            sc = vs.classes.get(claim.class_name)
            if sc is None:
                return None, Refusal(UNRESOLVABLE, not_found("storageclass.storage.k8s.io", claim.class_name))
            if sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            return None, Refusal(UNRESOLVABLE, "PersistentVolume had no name")
        pv = vs.volume(claim.volume_name)
        if pv is None:
            return None, Refusal(UNRESOLVABLE, not_found("persistentvolume", claim.volume_name))
        for key in ZONE_LABELS:
            value = pv.labels.get(key)
            if value is None:
                continue
            zones = [z.strip() for z in value.split(ZONE_DELIMITER)]
            if all(zones):  # kube ignores a label with an empty zone in it
                out.append((key, frozenset(zones)))
    return out, None


def zone_fits(topologies, labels: dict) -> bool:
    """kube's VolumeZone Filter: a node without any zone or region label fits; else each
    volume's label (or its GA form) must name one of the volume's zones."""
    if not any(key in labels for key in ZONE_LABELS):
        return True
    for key, values in topologies:
        value = labels.get(key)
        if value is None:
            value = labels.get(GA_LABEL.get(key, key))
        if value is None or value not in values:
            return False
    return True
