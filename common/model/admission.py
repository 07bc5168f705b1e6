"""Admission of manifests: what the API server checks before it stores an object.

`shardsched create -f` and `shardsched simulate` both take Kubernetes manifests; both run them
through `admit`, so an object one accepts the other accepts too: the limits on any object
(size, nesting, JSON values), the store's own parse, the API server's validation of what it
refuses (validation.py), the kind's apiVersion, Priority admission, and one object per kind
and name.

Priority admission works as the API server's plugin: a pod's priority and preemptionPolicy
come from its PriorityClass (the global default class when it names none, then 0), and a pod
that states another priority or policy itself is refused, so nobody gives a pod a priority
its class does not grant. (Clients of the store itself are trusted, as clients of etcd are:
the store's credentials are the cluster's; see the README's threat model.)
"""
from __future__ import annotations

import contextlib

from ..errors import ObjectError
from .limits import check_object
from .dra import API_VERSION as DRA_API_VERSION
from .podgroup import NATIVE_API_VERSION, NATIVE_KIND
from .objects import CREATE_ORDER, SYSTEM_PRIORITY_CLASSES, document_kind, parse_object, parse_priority_class
from .validation import validate

#: store kind -> apiVersion (a PodGroup's apiVersion chooses its store kind: see objects.KINDS)
API_VERSIONS = {
    "PriorityClass": "scheduling.k8s.io/v1",
    "Node": "v1",
    "PodDisruptionBudget": "policy/v1",
    "PodGroup": "scheduling.x-k8s.io/v1alpha1",
    NATIVE_KIND: NATIVE_API_VERSION,
    "Pod": "v1",
    "PersistentVolumeClaim": "v1",
    "PersistentVolume": "v1",
    "StorageClass": "storage.k8s.io/v1",
    "CSINode": "storage.k8s.io/v1",
    "Namespace": "v1",
    "Service": "v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicationController": "v1",
    "DeviceClass": DRA_API_VERSION,
    "ResourceSlice": DRA_API_VERSION,
    "ResourceClaimTemplate": DRA_API_VERSION,
    "ResourceClaim": DRA_API_VERSION,
}


def check_document(doc, classes: dict):
    """Validate one object as the API server would before storing it: the limits on any
    object, the store's own parse, the API server's validation, the kind's apiVersion, and Priority admission (which fills
    in a pod's spec.priority and preemptionPolicy in `doc`). Returns the parsed object;
    raises ObjectError naming the object and field."""
    check_object(doc)
    obj = parse_object(doc, classes)
    validate(doc, obj.kind, f"{obj.kind} {obj.key}")
    if obj.kind == "Pod":
        _admit_priority(obj, doc, classes)
    api_version = doc.get("apiVersion")
    want = API_VERSIONS[obj.kind]
    if api_version is not None and api_version != want:
        kind = document_kind(obj.kind)
        raise ObjectError(f"{kind} {obj.key}", "apiVersion", f"must be {want} for {kind}, got {api_version!r}")
    return obj


def _admit_priority(pod, doc: dict, classes: dict) -> None:
    """Priority admission (see the module doc): fills in spec.priority, spec.preemptionPolicy
    and (from a global default) spec.priorityClassName, or raises ObjectError with the
    API server's words."""
    spec = doc.get("spec")
    name = pod.priority_class_name
    where = f"Pod {pod.key}"
    if name:
        pc = classes.get(name)
        if pc is None and name not in SYSTEM_PRIORITY_CLASSES:
            raise ObjectError(where, "spec.priorityClassName", f"no PriorityClass named {name!r}")
        value = pc.value if pc is not None else SYSTEM_PRIORITY_CLASSES[name]
        policy = pc.preemption_policy if pc is not None else "PreemptLowerPriority"
    else:
        default = min((pc for pc in classes.values() if pc.global_default), key=lambda pc: pc.value, default=None)
        name = default.name if default is not None else ""
        value = default.value if default is not None else 0
        policy = default.preemption_policy if default is not None else None
    stated = spec.get("priority")
    if stated is not None and stated != value:
        raise ObjectError(where, "spec.priority", f"the integer value of priority ({stated}) must not be provided "
                          f"in pod spec; priority admission controller computed {value} from the given "
                          "PriorityClass name")
    if policy is not None and spec.get("preemptionPolicy") not in (None, policy):
        raise ObjectError(where, "spec.preemptionPolicy", f"the string value of PreemptionPolicy "
                          f"({spec['preemptionPolicy']}) must not be provided in pod spec; priority admission "
                          f"controller computed {policy} from the given PriorityClass name")
    spec["priority"] = value
    if name:
        spec["priorityClassName"] = name
    if policy is not None:
        spec["preemptionPolicy"] = policy


def stored_classes(store) -> dict:
    """PriorityClasses already in the store, by name, for the priorityClassName check."""
    classes = {}
    for d in store.list("PriorityClass")[0]:
        with contextlib.suppress(ObjectError):
            pc = parse_priority_class(d)
            classes[pc.name] = pc
    return classes


def admit(docs: list, classes: dict) -> tuple[list, list]:
    """Split input into (creatable (kind, key, doc), ObjectErrors), in CREATE_ORDER (pods
    keep their order in the input).

    Accepted PriorityClasses of this input count for its pods; a second object with the same
    kind and key is rejected here, as the API server would reject its create. Accepted pods
    come out as Priority admission leaves them (copies; the input is not changed).
    """
    order = {k: i for i, k in enumerate(CREATE_ORDER)}
    docs = sorted(docs, key=lambda d: order.get(d.get("kind") if isinstance(d, dict) else None, len(order)))
    accepted, errors, seen = [], [], set()
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "Pod" and isinstance(doc.get("spec"), dict):
            doc = {**doc, "spec": dict(doc["spec"])}
        try:
            obj = check_document(doc, classes)
        except ObjectError as e:
            errors.append(e)
            continue
        if (obj.kind, obj.key) in seen:
            errors.append(ObjectError(f"{obj.kind} {obj.key}", "metadata.name",
                                      "already exists (given twice in the input)"))
            continue
        seen.add((obj.kind, obj.key))
        if obj.kind == "PriorityClass":
            classes.setdefault(obj.name, obj)
        doc = doc if doc.get("apiVersion") else {"apiVersion": API_VERSIONS[obj.kind], **doc}
        accepted.append((obj.kind, obj.key, doc))
    return accepted, errors
