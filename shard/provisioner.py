"""A stand-in for what binds claims on a real cluster: kube-controller-manager's
PersistentVolume controller and a dynamic provisioner, for stores that have neither
(`simulate`'s memory store, and tests on an API server without a controller manager).

`step()` looks at every claim and volume once and does what those controllers would:
* a volume nobody claims that is still Pending becomes Available (the PV controller);
* a volume whose claimRef names a claim not yet bound (the scheduler's static binding, or a
  pre-bound volume) completes the binding: the claim gets its volumeName and the
  pv.kubernetes.io/bind-completed annotation, both become Bound (the PV controller);
* a claim annotated volume.kubernetes.io/selected-node (the scheduler's PreBind for a
  WaitForFirstConsumer claim) whose class has a provisioner gets a new volume of its size,
  pinned to that node by its hostname label, bound to it (the provisioner, then the PV
  controller);
* an unbound claim of an Immediate class (or of no class) is bound to the smallest
  Available volume of its class that fits it, else provisioned without a node when its class
  has a provisioner (the PV controller and the provisioner).
The volumes it creates have a CSI source of the provisioner's driver (a hostPath when the
provisioner's name is not a valid CSI driver name).
"""
from __future__ import annotations

from common.errors import Conflict, ObjectError
from common.model.objects import parse_object
from common.model.storage_objects import (BIND_COMPLETED, BOUND_BY_CONTROLLER, NO_PROVISIONER, PROVISIONED_BY,
                                          STORAGE_PROVISIONER, WAIT_FOR_FIRST_CONSUMER)

HOSTNAME = "kubernetes.io/hostname"


class Provisioner:
    def __init__(self, store):
        self.store = store

    def step(self) -> int:
        """One pass over the claims and volumes; returns the number of writes."""
        claims = self._parsed("PersistentVolumeClaim")
        volumes = self._parsed("PersistentVolume")
        classes = {c.name: c for c in self._parsed("StorageClass")}
        writes = 0
        for pv in volumes:
            if pv.claim_ref is None and pv.phase == "Pending":
                writes += self._write(pv.raw, status={"phase": "Available"})
        by_claim = {(v.claim_ref.namespace, v.claim_ref.name): v for v in volumes if v.claim_ref is not None}
        taken = {v.name for v in volumes if v.claim_ref is not None}
        for claim in claims:
            if claim.fully_bound or claim.deleting:
                continue
            pv = by_claim.get((claim.namespace, claim.name))
            if pv is not None and pv.claim_ref.refers_to(claim):
                writes += self._bind(claim, pv)
                continue
            sc = classes.get(claim.class_name)
            if claim.selected_node is not None:
                if sc is not None and sc.provisioner not in ("", NO_PROVISIONER):
                    writes += self._provision(claim, sc, claim.selected_node)
                continue
            if sc is not None and sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue  # waits for its first consumer
            match = self._available(claim, volumes, taken)
            if match is not None:
                taken.add(match.name)
                writes += self._claim_volume(claim, match)
            elif sc is not None and sc.provisioner not in ("", NO_PROVISIONER):
                writes += self._provision(claim, sc, None)
        return writes

    def settle(self) -> int:
        """Steps until one writes nothing (a binding can take two: claimRef, then claim)."""
        total = 0
        while True:
            writes = self.step()
            if not writes:
                return total
            total += writes

    def _parsed(self, kind: str) -> list:
        out = []
        for d in self.store.list(kind)[0]:
            try:
                out.append(parse_object(d))
            except ObjectError:
                continue  # an object nobody can read: the real controllers would skip it too
        return out

    @staticmethod
    def _available(claim, volumes, taken):
        best = None
        for pv in volumes:
            if (pv.name in taken or pv.claim_ref is not None or pv.phase != "Available" or pv.deleting
                    or pv.class_name != claim.class_name or pv.capacity < claim.request
                    or pv.volume_mode != claim.volume_mode or not set(claim.access_modes) <= set(pv.access_modes)
                    or (claim.selector is not None and not claim.selector.matches(pv.labels))):
                continue
            if best is None or pv.capacity < best.capacity:
                best = pv
        return best

    def _claim_volume(self, claim, pv) -> int:
        """Point the volume at the claim; the next step completes the binding."""
        raw = dict(pv.raw, spec=dict(pv.raw.get("spec") or {}))
        raw["spec"]["claimRef"] = _claim_ref(claim)
        return self._write(raw, annotations={BOUND_BY_CONTROLLER: "yes"})

    def _provision(self, claim, sc, node_name: str | None) -> int:
        name = f"pvc-{claim.uid}"
        spec = {"capacity": {"storage": str(claim.request)}, "accessModes": list(claim.access_modes),
                "volumeMode": claim.volume_mode, "storageClassName": sc.name,
                "persistentVolumeReclaimPolicy": sc.raw.get("reclaimPolicy") or "Delete",
                "claimRef": _claim_ref(claim)}
        if "/" in sc.provisioner:
            spec["hostPath"] = {"path": f"/tmp/{name}"}
        else:
            spec["csi"] = {"driver": sc.provisioner, "volumeHandle": name}
        if node_name is not None:
            node = self.store.get("Node", node_name)
            host = ((node or {}).get("metadata", {}).get("labels") or {}).get(HOSTNAME, node_name)
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [host]}]}]}}
        pv = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": name, "annotations": {PROVISIONED_BY: sc.provisioner}}, "spec": spec}
        try:
            created = self.store.create(pv)
        except Conflict:
            return 0  # made by an earlier step; its binding completes in the next one
        return 1 + self._bind(claim, parse_object(created))

    def _bind(self, claim, pv) -> int:
        """Complete a binding the volume already states: the claim names the volume."""
        raw = dict(claim.raw, spec=dict(claim.raw.get("spec") or {}))
        raw["spec"]["volumeName"] = pv.name
        annotations = {BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
        if PROVISIONED_BY in pv.annotations:
            annotations[STORAGE_PROVISIONER] = pv.annotations[PROVISIONED_BY]
        writes = self._write(raw, annotations=annotations, status={"phase": "Bound"})
        current = self.store.get("PersistentVolume", pv.name)
        if writes and current is not None and (current.get("status") or {}).get("phase") != "Bound":
            writes += self._write(current, status={"phase": "Bound"})
        return writes

    def _write(self, raw: dict, annotations: dict | None = None, status: dict | None = None) -> int:
        obj = dict(raw)
        obj["metadata"] = dict(raw["metadata"])
        if annotations:
            obj["metadata"]["annotations"] = {**(raw["metadata"].get("annotations") or {}), **annotations}
        if status:
            obj["status"] = {**(raw.get("status") or {}), **status}
        try:
            out = self.store.update(obj)
        except Conflict:
            return 0  # changed meanwhile: the next step looks again
        # An API server ignores status in such an update: nothing written, nothing counted.
        return int(out["metadata"]["resourceVersion"] != raw["metadata"].get("resourceVersion"))


def _claim_ref(claim) -> dict:
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim.namespace,
            "name": claim.name, "uid": claim.uid}
