"""Admission of manifests: what the API server checks before it stores an object.

`shardsched create -f` and `shardsched simulate` both take Kubernetes manifests; both run them
through `admit`, so an object one accepts the other accepts too: the store's own parse, the
kind's apiVersion, a pod's priorityClassName (Priority admission), and one object per kind
and name.
"""
from __future__ import annotations

import contextlib

from .errors import ObjectError
from .objects import CREATE_ORDER, parse_object, parse_priority_class

#: kind -> apiVersion
API_VERSIONS = {
    "PriorityClass": "scheduling.k8s.io/v1",
    "Node": "v1",
    "PodDisruptionBudget": "policy/v1",
    "Pod": "v1",
    "PersistentVolumeClaim": "v1",
    "PersistentVolume": "v1",
    "StorageClass": "storage.k8s.io/v1",
    "CSINode": "storage.k8s.io/v1",
}


def check_document(doc, classes: dict):
    """Validate one object as the API server would before storing it: the store's own
    parse, the kind's apiVersion, and (Priority admission) a pod's priorityClassName.
    Returns the parsed object; raises ObjectError naming the object and field."""
    obj = parse_object(doc, classes)
    api_version = doc.get("apiVersion")
    want = API_VERSIONS[obj.kind]
    if api_version is not None and api_version != want:
        raise ObjectError(f"{obj.kind} {obj.key}", "apiVersion", f"must be {want} for {obj.kind}, got {api_version!r}")
    return obj


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
    kind and key is rejected here, as the API server would reject its create.
    """
    order = {k: i for i, k in enumerate(CREATE_ORDER)}
    docs = sorted(docs, key=lambda d: order.get(d.get("kind") if isinstance(d, dict) else None, len(order)))
    accepted, errors, seen = [], [], set()
    for doc in docs:
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
