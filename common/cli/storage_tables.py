"""`shardsched get` tables of the storage kinds, with kubectl's columns (abridged):

    pvc      NAMESPACE NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS AGE
    pv       NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS AGE
    sc       NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE AGE
    csinode  NAME DRIVERS AGE

`-o wide` adds what the scheduler reads: a claim's selected node, a volume's node affinity,
a class's allowed topologies, a CSINode's attach limits per driver.
"""
from __future__ import annotations

from ..model.resources import format_amount

#: kubectl's short forms of access modes
MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _size(amount: int) -> str:
    return format_amount("memory", amount) if amount else ""


def _modes(modes) -> str:
    return ",".join(MODES[m] for m in modes)


def pvc_rows(claims: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAMESPACE", "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"]
    if wide:
        header += ["SELECTED NODE"]
    rows = []
    for c in sorted(claims, key=lambda c: c.key):
        capacity = ((c.raw.get("status") or {}).get("capacity") or {}).get("storage", "")
        row = [c.namespace, c.name, "Terminating" if c.deleting else c.phase, c.volume_name, str(capacity),
               _modes(c.access_modes), c.class_name, age(c.raw)]
        if wide:
            row += [c.selected_node or "<none>"]
        rows.append(row)
    return header, rows


def pv_rows(volumes: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "AGE"]
    if wide:
        header += ["NODE AFFINITY"]
    rows = []
    for v in sorted(volumes, key=lambda v: v.name):
        policy = (v.raw.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        claim = f"{v.claim_ref.namespace}/{v.claim_ref.name}" if v.claim_ref is not None else ""
        row = [v.name, _size(v.capacity), _modes(v.access_modes), policy, v.phase, claim, v.class_name, age(v.raw)]
        if wide:
            row += ["yes" if v.node_affinity else "<none>"]
        rows.append(row)
    return header, rows


def storage_class_rows(classes: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "AGE"]
    if wide:
        header += ["ALLOWED TOPOLOGIES"]
    rows = []
    for sc in sorted(classes, key=lambda sc: sc.name):
        row = [sc.name, sc.provisioner, sc.raw.get("reclaimPolicy") or "Delete", sc.binding_mode, age(sc.raw)]
        if wide:
            row += [";".join(",".join(f"{k} in ({'|'.join(sorted(vs))})" for k, vs in term)
                             for term in sc.allowed_topologies) or "<none>"]
        rows.append(row)
    return header, rows


def csi_node_rows(nodes: list, wide: bool, age) -> tuple[list, list]:
    header = ["NAME", "DRIVERS", "AGE"]
    if wide:
        header += ["LIMITS"]
    rows = []
    for n in sorted(nodes, key=lambda n: n.name):
        drivers = (n.raw.get("spec") or {}).get("drivers") or []
        row = [n.name, str(len(drivers)), age(n.raw)]
        if wide:
            row += [",".join(f"{d}={c}" for d, c in sorted(n.limits.items())) or "<none>"]
        rows.append(row)
    return header, rows


#: kind -> its table
TABLES = {"PersistentVolumeClaim": pvc_rows, "PersistentVolume": pv_rows, "StorageClass": storage_class_rows,
          "CSINode": csi_node_rows}
