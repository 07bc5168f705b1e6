"""The Services and controllers a shard keeps for default topology spreading.

A pod that states no spread constraints is spread by the profile's default constraints over
the pods "of its workload", which kube-scheduler works out as helper.DefaultSelector does:
the labels every Service of the pod's namespace selecting it asks for, and the selector of
the ReplicaSet, StatefulSet or ReplicationController named by the pod's controller reference
(found by name in the pod's namespace), all of which a counted pod must match. A pod with
none of these (no Service selects it, its controller is not known) gets no default spreading.

These kinds matter to scoring only, so kube registers no queueing hints for them, and
neither does the shard: a change to a Service wakes no pod.
"""
from __future__ import annotations

from ..model.selectors import LabelSelector
from ..model.workloads import CONTROLLER_KINDS


class Workloads:
    """Services by namespace and controllers by (kind, key), kept from the store's events."""

    def __init__(self):
        self.services: dict[str, dict] = {}     # namespace -> key -> Service
        self.controllers: dict[tuple, object] = {}  # (kind, "ns/name") -> Controller

    def set(self, obj) -> None:
        if obj.kind == "Service":
            self.services.setdefault(obj.namespace, {})[obj.key] = obj
        else:
            self.controllers[(obj.kind, obj.key)] = obj

    def remove(self, kind: str, key: str) -> None:
        if kind == "Service":
            ns = key.partition("/")[0]
            kept = self.services.get(ns)
            if kept is not None:
                kept.pop(key, None)
                if not kept:
                    del self.services[ns]
        else:
            self.controllers.pop((kind, key), None)

    def clear(self) -> None:
        self.services.clear()
        self.controllers.clear()

    def default_selector(self, pod) -> LabelSelector | None:
        """The selector of `pod`'s workload (see the module doc), None when it has none."""
        labels: dict[str, str] = {}
        for s in self.services.get(pod.namespace, {}).values():
            if s.selects(pod.labels):
                labels.update(s.selector)
        expressions: tuple = ()
        owner = pod.controller()
        if owner is not None and CONTROLLER_KINDS.get(owner.kind) == owner.api_version:
            c = self.controllers.get((owner.kind, f"{pod.namespace}/{owner.name}"))
            if c is not None and c.kind == "ReplicationController":
                labels.update(c.selector.match_labels)  # a plain map, merged as kube merges it
            elif c is not None:
                # matchLabels as requirements of their own: they add to the Services' labels
                # (kube's selector.Add) rather than replace one of the same key
                expressions = (tuple((k, "In", frozenset((v,))) for k, v in c.selector.match_labels.items())
                               + c.selector.expressions)
        if not labels and not expressions:
            return None
        return LabelSelector(labels, expressions)
