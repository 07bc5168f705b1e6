"""VolumeBinding's PreBind, kube-scheduler's BindPodVolumes in two halves: write the bindings
(`write_bindings`: each chosen volume's claimRef, each claim to provision its
volume.kubernetes.io/selected-node annotation), then wait until the claims are bound
(`bindings_done`, asked again whenever the claims or volumes change, until the VolumeBinding
args' bindTimeoutSeconds run out).

The binder runs it for the shards' decisions, between the victims' eviction and the pod's
binding, without holding up anything else while it waits (binder/volume_waits.py); where no
binder runs (`simulate`, tests) the shard's StoreCommitter (shard/store_committer.py) runs it
in place.
"""
from __future__ import annotations

from ..errors import Conflict, ObjectError
from ..model.objects import parse_object
from ..config.plugin_args import profile_args
from ..config.plugin_names import VOLUME_BINDING
from ..model.storage_objects import BOUND_BY_CONTROLLER, SELECTED_NODE
from ..store.base import rv_order
from .volumes import PodVolumes, volume_fits

#: VolumeBindingArgs.bindTimeoutSeconds by default
BIND_TIMEOUT_S = 600
#: kube's words when the wait runs out (wait.PollUntilContextTimeout's context error, wrapped)
TIMED_OUT = "binding volumes: context deadline exceeded"


def bind_timeout(cfg, scheduler_name: str) -> float:
    """The bindTimeoutSeconds of the VolumeBinding args of the pod's profile."""
    for i, profile in enumerate(cfg.profiles):
        if profile.scheduler_name == scheduler_name:
            return float(profile_args(cfg, i)[VOLUME_BINDING]["bindTimeoutSeconds"])
    return float(BIND_TIMEOUT_S)


def write_bindings(store, plan: PodVolumes, node_name: str) -> tuple[dict, str | None]:
    """kube's bindAPIUpdate: update each volume to name its claim, then each claim to name its
    node, guarded by the versions the plan was made from. Returns ({kind/key: the written
    resourceVersion}, None) or (what was written, why it stopped)."""
    written: dict = {}
    for pv, claim in plan.static:
        obj = _copy(pv.raw)
        spec = obj.setdefault("spec", {})
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim.namespace,
                            "name": claim.name, "uid": claim.uid}
        if not pv.claim_ref or not pv.claim_ref.refers_to(claim):
            obj["metadata"].setdefault("annotations", {}).setdefault(BOUND_BY_CONTROLLER, "yes")
        why = _update(store, obj, written, f"PersistentVolume/{pv.name}")
        if why is not None:
            return written, why
    for claim in plan.provisions:
        obj = _copy(claim.raw)
        obj["metadata"].setdefault("annotations", {})[SELECTED_NODE] = node_name
        why = _update(store, obj, written, f"PersistentVolumeClaim/{claim.key}")
        if why is not None:
            return written, why
    return written, None


def _copy(raw: dict) -> dict:
    obj = dict(raw)
    obj["metadata"] = dict(raw["metadata"])
    if "annotations" in obj["metadata"]:
        obj["metadata"]["annotations"] = dict(obj["metadata"]["annotations"])
    obj["spec"] = dict(raw.get("spec") or {})
    return obj


def _update(store, obj: dict, written: dict, what: str) -> str | None:
    try:
        out = store.update(obj)
    except Conflict as e:
        kind, _, key = what.partition("/")
        return f"Operation cannot be fulfilled on {kind} {key}: {e.reason}"
    except ObjectError as e:
        return str(e)
    written[what] = out["metadata"]["resourceVersion"]
    return None


def bindings_done(node, plan: PodVolumes, written: dict, claim_of, volume_of) -> tuple[bool, str | None]:
    """kube's checkBindings: (True, None) once every claim is fully bound to a volume that
    admits the node; (False, None) while that is still to come; (False, why) when it cannot
    come any more (a provisioner gave up and removed the annotation, a claimRef was reset).
    `claim_of(key)` and `volume_of(name)` read the objects as the store has them (not as this
    process assumed them); versions older than what `written` recorded count as not yet seen."""
    for pv, claim in plan.static:
        current_pv, current_claim = volume_of(pv.name), claim_of(claim.key)
        if current_pv is None or current_claim is None:
            return False, f"binding volumes: failed to check binding: {pv.name if current_pv is None else claim.key} not found"
        if _older(current_pv, written.get(f"PersistentVolume/{pv.name}")):
            return False, None
        if not volume_fits(current_pv, node.labels):
            return False, (f'binding volumes: pv "{pv.name}" node affinity doesn\'t match node "{node.name}": '
                           "no matching NodeSelectorTerms")
        if current_pv.claim_ref is None or not current_pv.claim_ref.uid:
            return False, f'binding volumes: ClaimRef got reset for pv "{pv.name}"'
        if not current_claim.fully_bound:
            return False, None
    for claim in plan.provisions:
        current = claim_of(claim.key)
        if current is None:
            return False, f"binding volumes: failed to check provisioning pvc: {claim.key} not found"
        if _older(current, written.get(f"PersistentVolumeClaim/{claim.key}")):
            return False, None
        if current.selected_node is None:
            return False, f'binding volumes: selectedNode annotation reset for PVC "{claim.name}"'
        if current.selected_node != node.name:
            return False, f'binding volumes: provisioning failed for PVC "{claim.name}"'
        if current.volume_name:
            pv = volume_of(current.volume_name)
            if pv is None:
                return False, None
            if not volume_fits(pv, node.labels):
                return False, (f'binding volumes: pv "{pv.name}" node affinity doesn\'t match node '
                               f'"{node.name}": no matching NodeSelectorTerms')
        if not current.fully_bound:
            return False, None
    return True, None


def _older(obj, rv: str | None) -> bool:
    return rv is not None and bool(obj.resource_version) and rv_order(obj.resource_version) < rv_order(rv)


def store_lookups(store):
    """claim_of and volume_of reading the store directly (for callers without a watch)."""
    def get(kind, key):
        d = store.get(kind, key)
        return None if d is None else parse_object(d)

    return (lambda key: get("PersistentVolumeClaim", key)), (lambda name: get("PersistentVolume", name))
