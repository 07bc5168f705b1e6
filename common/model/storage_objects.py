"""The storage kinds the volume plugins read: PersistentVolumeClaims, PersistentVolumes,
StorageClasses and CSINodes, and the volumes of a pod's spec, parsed once into slotted
classes as common.model.objects parses pods and nodes.

What the API server would default is read as its default here (a StorageClass without
volumeBindingMode is Immediate, a claim or volume without volumeMode is Filesystem), so an
object written by hand into the memory or Redis store means what it means on a cluster.
"""
from __future__ import annotations

from .parsing import object_field
from .resources import parse_amount
from .selectors import Field, parse_label_selector, parse_node_selector_term

#: kube's annotations and labels (component-helpers storage/volume, core/v1 well-known labels)
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", READ_WRITE_ONCE_POD)

#: In-tree volume plugins kube-scheduler counts against a CSI driver's limit (csi-translation-lib,
#: the ones nodevolumelimits.isCSIMigrationOn treats as migrated): pod/PV source field ->
#: (in-tree plugin name, CSI driver, field holding the volume's identity).
IN_TREE = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
}
#: in-tree provisioner name -> its CSI driver
IN_TREE_DRIVERS = {plugin: driver for plugin, driver, _ in IN_TREE.values()}


def _meta(d: dict, f: Field, namespaced: bool) -> tuple[dict, str, str]:
    meta = f.get_dict(d, "metadata", required=True)
    mf = f.at("metadata")
    name = mf.get_str(meta, "name", required=True)
    ns = mf.get_str(meta, "namespace", default="default") if namespaced else ""
    mf.get_str_map(meta, "labels")
    mf.get_str_map(meta, "annotations")
    return meta, ns, name


def _identity(obj, meta: dict, d: dict) -> None:
    """uid, labels, annotations, resourceVersion and the raw dict, as every kind keeps them."""
    obj.uid = meta.get("uid") or ""
    obj.labels = meta.get("labels") or {}
    obj.annotations = meta.get("annotations") or {}
    obj.resource_version = str(meta.get("resourceVersion") or "")
    obj.raw = d


def _storage(value, f: Field) -> int:
    """A storage quantity in bytes (0 when absent)."""
    if value is None:
        return 0
    try:
        amount, negative = parse_amount("storage", value)
    except ValueError as e:
        raise f.error(str(e)) from None
    if negative:
        raise f.error(f"must not be negative, got {value!r}")
    return amount


def _access_modes(d: dict, f: Field) -> tuple:
    modes = tuple(f.at("accessModes").at(i).str(m, required=True)
                  for i, m in enumerate(f.get_list(d, "accessModes")))
    for i, m in enumerate(modes):
        if m not in ACCESS_MODES:
            raise f.at("accessModes").at(i).error(f"must be one of {', '.join(ACCESS_MODES)}, got {m!r}")
    return modes


def _volume_mode(d: dict, f: Field) -> str:
    mode = f.get_str(d, "volumeMode", default="Filesystem")
    if mode not in ("Filesystem", "Block"):
        raise f.at("volumeMode").error(f"must be Filesystem or Block, got {mode!r}")
    return mode


def _in_tree_source(d: dict, f: Field) -> tuple | None:
    """(in-tree plugin, CSI driver, volume identity) of a migratable in-tree source, or None."""
    for field, (plugin, driver, id_field) in IN_TREE.items():
        src = d.get(field)
        if src is not None:
            sf = f.at(field)
            ident = sf.get_str(sf.dict(src), id_field, required=True)
            if field == "awsElasticBlockStore":
                ident = ident.rsplit("/", 1)[-1]  # aws://zone/vol-1 and vol-1 are one volume
            return plugin, driver, ident
    return None


# --- PersistentVolumeClaim ---------------------------------------------------------------------

class PersistentVolumeClaim:
    kind = "PersistentVolumeClaim"
    __slots__ = ("namespace", "name", "key", "uid", "labels", "annotations", "class_name", "access_modes",
                 "request", "selector", "volume_mode", "volume_name", "phase", "deleting", "owner_uid",
                 "resource_version", "raw")

    @property
    def selected_node(self) -> str | None:
        return self.annotations.get(SELECTED_NODE)

    @property
    def fully_bound(self) -> bool:
        """kube's isPVCFullyBound: a volume is named and the binding was completed."""
        return bool(self.volume_name) and BIND_COMPLETED in self.annotations

    def __repr__(self):
        return f"PersistentVolumeClaim({self.key})"


def parse_pvc(d: dict) -> PersistentVolumeClaim:
    f = object_field(d, "PersistentVolumeClaim", True)
    meta, ns, name = _meta(d, f, True)
    spec = f.get_dict(d, "spec")
    sf = f.at("spec")
    status = f.get_dict(d, "status")
    c = PersistentVolumeClaim()
    c.namespace, c.name, c.key = ns, name, f"{ns}/{name}"
    _identity(c, meta, d)
    # kube's GetPersistentVolumeClaimClass: the beta annotation wins over the field
    if BETA_STORAGE_CLASS in c.annotations:
        c.class_name = c.annotations[BETA_STORAGE_CLASS]
    else:
        c.class_name = sf.get_str(spec, "storageClassName")
    c.access_modes = _access_modes(spec, sf)
    resources = sf.get_dict(spec, "resources")
    rf = sf.at("resources")
    c.request = _storage(rf.get_dict(resources, "requests").get("storage"), rf.at("requests.storage"))
    c.selector = parse_label_selector(spec.get("selector"), sf.at("selector"))
    c.volume_mode = _volume_mode(spec, sf)
    c.volume_name = sf.get_str(spec, "volumeName")
    c.phase = f.at("status").get_str(status, "phase", default="Pending")
    c.deleting = bool(meta.get("deletionTimestamp"))
    owner = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")]
    c.owner_uid = owner[0].get("uid") if owner else None
    return c


# --- PersistentVolume ------------------------------------------------------------------------------

class ClaimRef:
    __slots__ = ("namespace", "name", "uid")

    def __init__(self, namespace: str, name: str, uid: str):
        self.namespace, self.name, self.uid = namespace, name, uid

    def refers_to(self, claim) -> bool:
        """kube's IsVolumeBoundToClaim: same name and namespace, and the uid if set."""
        return (self.name == claim.name and self.namespace == claim.namespace
                and (not self.uid or self.uid == claim.uid))


class PersistentVolume:
    kind = "PersistentVolume"
    __slots__ = ("name", "key", "uid", "labels", "annotations", "class_name", "capacity", "access_modes",
                 "volume_mode", "claim_ref", "node_affinity", "phase", "deleting", "csi", "has_attributes_class",
                 "resource_version", "raw")

    def __repr__(self):
        return f"PersistentVolume({self.name})"


def parse_pv(d: dict) -> PersistentVolume:
    f = object_field(d, "PersistentVolume", False)
    meta, _, name = _meta(d, f, False)
    spec = f.get_dict(d, "spec")
    sf = f.at("spec")
    status = f.get_dict(d, "status")
    v = PersistentVolume()
    v.name = v.key = name
    _identity(v, meta, d)
    v.class_name = v.annotations.get(BETA_STORAGE_CLASS) or sf.get_str(spec, "storageClassName")
    v.capacity = _storage(sf.get_dict(spec, "capacity").get("storage"), sf.at("capacity.storage"))
    v.access_modes = _access_modes(spec, sf)
    v.volume_mode = _volume_mode(spec, sf)
    ref = spec.get("claimRef")
    if ref is not None:
        rf = sf.at("claimRef")
        ref = rf.dict(ref)
        v.claim_ref = ClaimRef(rf.get_str(ref, "namespace", default="default"), rf.get_str(ref, "name"),
                               rf.get_str(ref, "uid"))
    else:
        v.claim_ref = None
    v.node_affinity = None
    required = (sf.get_dict(spec, "nodeAffinity")).get("required")
    if required is not None:
        af = sf.at("nodeAffinity.required")
        v.node_affinity = tuple(parse_node_selector_term(t, af.at("nodeSelectorTerms").at(i))
                                for i, t in enumerate(af.get_list(af.dict(required), "nodeSelectorTerms")))
    v.phase = f.at("status").get_str(status, "phase", default="Pending")
    v.deleting = bool(meta.get("deletionTimestamp"))
    csi = spec.get("csi")
    if csi is not None:
        cf = sf.at("csi")
        csi = cf.dict(csi)
        v.csi = (cf.get_str(csi, "driver", required=True), cf.get_str(csi, "volumeHandle", required=True))
    else:
        in_tree = _in_tree_source(spec, sf)
        v.csi = in_tree  # (plugin, driver, identity): counted only on nodes with a CSINode
    v.has_attributes_class = bool(spec.get("volumeAttributesClassName"))
    return v


# --- StorageClass -----------------------------------------------------------------------------------

class StorageClass:
    kind = "StorageClass"
    __slots__ = ("name", "key", "uid", "labels", "annotations", "provisioner", "binding_mode", "allowed_topologies",
                 "resource_version", "raw")

    def allows(self, labels: dict) -> bool:
        """kube's MatchTopologySelectorTerms: no terms allow every node; else some term's
        every expression must hold (the label's value among its values)."""
        if not self.allowed_topologies:
            return True
        return any(all(labels.get(key) in values for key, values in term) for term in self.allowed_topologies)

    def __repr__(self):
        return f"StorageClass({self.name})"


def parse_storage_class(d: dict) -> StorageClass:
    f = object_field(d, "StorageClass", False)
    meta, _, name = _meta(d, f, False)
    sc = StorageClass()
    sc.name = sc.key = name
    _identity(sc, meta, d)
    sc.provisioner = f.get_str(d, "provisioner", required=True)
    sc.binding_mode = f.get_str(d, "volumeBindingMode", default="Immediate")
    if sc.binding_mode not in ("Immediate", WAIT_FOR_FIRST_CONSUMER):
        raise f.at("volumeBindingMode").error(f"must be Immediate or WaitForFirstConsumer, got {sc.binding_mode!r}")
    terms = []
    tf = f.at("allowedTopologies")
    for i, term in enumerate(f.get_list(d, "allowedTopologies")):
        ef = tf.at(i).at("matchLabelExpressions")
        exprs = []
        for j, e in enumerate(ef.list(tf.at(i).dict(term).get("matchLabelExpressions"))):
            e = ef.at(j).dict(e)
            key = ef.at(j).get_str(e, "key", required=True)
            values = frozenset(ef.at(j).at("values").at(k).str(v, required=True)
                               for k, v in enumerate(ef.at(j).get_list(e, "values")))
            exprs.append((key, values))
        terms.append(tuple(exprs))
    sc.allowed_topologies = tuple(terms)
    return sc


# --- CSINode ----------------------------------------------------------------------------------------

class CSINode:
    kind = "CSINode"
    __slots__ = ("name", "key", "uid", "labels", "annotations", "limits", "resource_version", "raw")

    def __repr__(self):
        return f"CSINode({self.name})"


def parse_csi_node(d: dict) -> CSINode:
    f = object_field(d, "CSINode", False)
    meta, _, name = _meta(d, f, False)
    spec = f.get_dict(d, "spec")
    df = f.at("spec.drivers")
    n = CSINode()
    n.name = n.key = name
    _identity(n, meta, d)
    n.limits = {}
    for i, drv in enumerate(f.at("spec").get_list(spec, "drivers")):
        drv = df.at(i).dict(drv)
        driver = df.at(i).get_str(drv, "name", required=True)
        allocatable = df.at(i).get_dict(drv, "allocatable")
        count = df.at(i).at("allocatable").get_int(allocatable, "count", minimum=0)
        if count is not None:
            n.limits[driver] = count
    return n


# --- a pod's volumes ------------------------------------------------------------------------------

class PodVolume:
    """One entry of spec.volumes, as the volume plugins read it.

    `claim`: the claim it mounts (persistentVolumeClaim.claimName, or for an ephemeral
    volume the claim kube's ephemeral controller creates, "<pod>-<volume>"); `disk`: the
    identity of an inline disk two pods on one node may conflict over (VolumeRestrictions);
    `in_tree`: (plugin, CSI driver, identity) of an inline in-tree disk counted against its
    CSI driver's limit on nodes with a CSINode (NodeVolumeLimits)."""

    __slots__ = ("name", "claim", "ephemeral", "disk", "in_tree")

    def __init__(self, name, claim=None, ephemeral=False, disk=None, in_tree=None):
        self.name, self.claim, self.ephemeral, self.disk, self.in_tree = name, claim, ephemeral, disk, in_tree


def _disk(v: dict, f: Field) -> tuple | None:
    """The conflict identity of an inline GCE PD, AWS EBS, iSCSI or RBD volume (kube's
    isVolumeConflict compares these), or None."""
    if v.get("gcePersistentDisk") is not None:
        g = f.at("gcePersistentDisk").dict(v["gcePersistentDisk"])
        return ("gce", g.get("pdName"), bool(g.get("readOnly")))
    if v.get("awsElasticBlockStore") is not None:
        return ("aws", f.at("awsElasticBlockStore").dict(v["awsElasticBlockStore"]).get("volumeID"))
    if v.get("iscsi") is not None:
        i = f.at("iscsi").dict(v["iscsi"])
        return ("iscsi", i.get("iqn"), bool(i.get("readOnly")))
    if v.get("rbd") is not None:
        r = f.at("rbd").dict(v["rbd"])
        return ("rbd", frozenset(r.get("monitors") or ()), r.get("pool") or "rbd", r.get("image"),
                bool(r.get("readOnly")))
    return None


def parse_pod_volumes(spec: dict, sf: Field, pod_name: str) -> tuple:
    """The PodVolumes of spec.volumes that any volume plugin looks at (claims, ephemeral
    claims, inline disks); config maps, secrets and the like are left out."""
    out = []
    vf = sf.at("volumes")
    for i, v in enumerate(sf.get_list(spec, "volumes")):
        f = vf.at(i)
        v = f.dict(v)
        name = f.get_str(v, "name", required=True)
        if v.get("persistentVolumeClaim") is not None:
            pf = f.at("persistentVolumeClaim")
            out.append(PodVolume(name, claim=pf.get_str(pf.dict(v["persistentVolumeClaim"]), "claimName")))
        elif v.get("ephemeral") is not None:
            out.append(PodVolume(name, claim=f"{pod_name}-{name}", ephemeral=True))
        else:
            disk = _disk(v, f)
            in_tree = _in_tree_source(v, f)
            if disk is not None or in_tree is not None:
                out.append(PodVolume(name, disk=disk, in_tree=in_tree))
    return tuple(out)
