"""The kinds a real cluster has that the scheduler reads only a little of: Namespaces (their
labels, for pod affinity's namespaceSelector), and Services, ReplicaSets, StatefulSets and
ReplicationControllers (their selectors, for the default topology spreading of pods that
state no constraints: kube's helper.DefaultSelector).

Each is parsed lean: its key, what the scheduler reads and its resourceVersion, no raw
document (a cluster has as many ReplicaSets as Deployments, and every shard keeps them).
What the API server defaults is read as its default: a Namespace always carries the
`kubernetes.io/metadata.name` label, a ReplicationController without a selector selects
its template's labels.
"""
from __future__ import annotations

from .parsing import object_field
from .selectors import Field, LabelSelector, parse_label_selector

#: The label the API server sets on every Namespace (its name).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: The controllers whose selector a pod's default spreading takes, by kind -> apiVersion
#: (kube matches the controller reference's group, version and kind).
CONTROLLER_KINDS = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "ReplicationController": "v1"}


def _meta(d: dict, f: Field, namespaced: bool) -> tuple[dict, str, str]:
    meta = f.get_dict(d, "metadata", required=True)
    mf = f.at("metadata")
    name = mf.get_str(meta, "name", required=True)
    ns = mf.get_str(meta, "namespace", default="default") if namespaced else ""
    return meta, ns, name


class Namespace:
    kind = "Namespace"
    __slots__ = ("name", "key", "labels", "resource_version")

    def __repr__(self):
        return f"Namespace({self.name}, {self.labels})"


def parse_namespace(d: dict) -> Namespace:
    f = object_field(d, "Namespace", False)
    meta, _, name = _meta(d, f, False)
    n = Namespace()
    n.name = n.key = name
    n.labels = {**f.at("metadata.labels").str_map(meta.get("labels")), NAMESPACE_NAME_LABEL: name}
    n.resource_version = str(meta.get("resourceVersion") or "")
    return n


class Namespaces:
    """The Namespaces the watch shows, for pod affinity's namespaceSelector: a namespace's
    labels, and a generation bumped on every change (counts cached per selector key add it,
    so they are recounted when a label moves). A namespace with no Namespace object (the
    embedded stores do not require one) reads as the API server would have labelled it."""

    def __init__(self):
        self.by_name: dict[str, Namespace] = {}
        self.generation = 0

    def set(self, ns: Namespace) -> None:
        self.by_name[ns.name] = ns
        self.generation += 1

    def remove(self, name: str) -> None:
        if self.by_name.pop(name, None) is not None:
            self.generation += 1

    def clear(self) -> None:
        self.by_name.clear()
        self.generation += 1

    def labels(self, name: str) -> dict:
        ns = self.by_name.get(name)
        return ns.labels if ns is not None else {NAMESPACE_NAME_LABEL: name}


class Service:
    """A Service's selector: None for a Service without one (it selects no pod, not every pod)."""

    kind = "Service"
    __slots__ = ("namespace", "name", "key", "selector", "resource_version")

    def selects(self, labels: dict) -> bool:
        return self.selector is not None and all(labels.get(k) == v for k, v in self.selector.items())


def parse_service(d: dict) -> Service:
    f = object_field(d, "Service", True)
    meta, ns, name = _meta(d, f, True)
    spec = f.at("spec").dict(d.get("spec"))
    s = Service()
    s.namespace, s.name, s.key = ns, name, f"{ns}/{name}"
    sel = spec.get("selector")
    s.selector = None if sel is None else f.at("spec.selector").str_map(sel)
    s.resource_version = str(meta.get("resourceVersion") or "")
    return s


class Controller:
    """A ReplicaSet, StatefulSet or ReplicationController: its selector as a LabelSelector
    (a ReplicationController's map as matchLabels)."""

    __slots__ = ("kind", "namespace", "name", "key", "selector", "resource_version")

    def __repr__(self):
        return f"{self.kind}({self.key})"


def _controller(d: dict, kind: str) -> Controller:
    f = object_field(d, kind, True)
    meta, ns, name = _meta(d, f, True)
    spec = f.at("spec").dict(d.get("spec"), required=True)
    c = Controller()
    c.kind, c.namespace, c.name, c.key = kind, ns, name, f"{ns}/{name}"
    if kind == "ReplicationController":
        sel = spec.get("selector")
        if sel is None:  # the API server defaults it to the template's labels
            template = f.at("spec.template").dict(spec.get("template"))
            sel = (template.get("metadata") or {}).get("labels")
        c.selector = LabelSelector(f.at("spec.selector").str_map(sel), ())
    else:
        c.selector = parse_label_selector(spec.get("selector"), f.at("spec.selector"))
        if c.selector is None:
            raise f.at("spec.selector").error("is required")
    c.resource_version = str(meta.get("resourceVersion") or "")
    return c


def parse_replica_set(d: dict) -> Controller:
    return _controller(d, "ReplicaSet")


def parse_stateful_set(d: dict) -> Controller:
    return _controller(d, "StatefulSet")


def parse_replication_controller(d: dict) -> Controller:
    return _controller(d, "ReplicationController")
