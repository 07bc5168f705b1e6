"""The object model: lean slotted classes built from Kubernetes JSON/YAML dicts.

Objects are parsed once (from orjson output) and every field the scheduler reads is kept in
a form that plugins use directly: resource vectors, compiled selectors, taint objects.
The original dict stays in `raw` so stores and reports can round-trip it unchanged, except
for a bound pod parsed `lean` (what the roles keep of their running pods: see Pod).
"""
from __future__ import annotations

import sys
import weakref
from operator import attrgetter

import orjson

from ..errors import ObjectError
# TERMINAL_PHASES (common/model/parsing.py) and POD_GROUP_LABEL (common/model/podgroup.py) are defined
# below the object model and importable from here too, as they always were.
from .parsing import (TERMINAL_PHASES, cached_time, parse_metadata, parse_resource_list, parse_time,
                      resource_vector_at)
from .dra import (parse_claim_statuses, parse_device_class, parse_pod_claims, parse_resource_claim,
                  parse_resource_claim_template, parse_resource_slice)
from .podgroup import NATIVE_KIND, POD_GROUP_LABEL, is_native, parse_native_pod_group, parse_pod_group
from .interning import shared_map, shared_refs, shared_str
from .resources import INT64_MAX
from .selectors import (Field, LabelSelector, parse_label_selector, parse_node_selector_term, parse_taint,
                        parse_toleration)
from .storage_objects import parse_csi_node, parse_pod_volumes, parse_pv, parse_pvc, parse_storage_class
from .workloads import (NAMESPACE_NAME_LABEL, parse_namespace, parse_replica_set, parse_replication_controller,
                        parse_service, parse_stateful_set)

#: The store kinds. A kind whose name has a dot is a document kind of another API group than
#: the one that first took the name: "PodGroup.scheduling.k8s.io" is a document of kind
#: PodGroup and apiVersion scheduling.k8s.io/v1beta1 (kube's own), "PodGroup"
#: scheduler-plugins' (document_kind, store_kind).
KINDS = ("Node", "Pod", "PodDisruptionBudget", "PriorityClass", "PodGroup", NATIVE_KIND, "PersistentVolumeClaim",
         "PersistentVolume", "StorageClass", "CSINode", "Namespace", "Service", "ReplicaSet", "StatefulSet",
         "ReplicationController", "DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim")
#: The kinds in dependency order, for creating and for listing: a pod never comes before the
#: PriorityClass it names, the node it is pinned to, the PodGroup it joins or the claims it
#: mounts, so no reader sees it half-defined.
CREATE_ORDER = ("Namespace", "PriorityClass", "StorageClass", "DeviceClass", "Node", "CSINode", "ResourceSlice",
                "PersistentVolume", "PersistentVolumeClaim", "ResourceClaimTemplate", "ResourceClaim", "PodDisruptionBudget", "PodGroup", NATIVE_KIND, "Service",
                "ReplicationController", "ReplicaSet", "StatefulSet", "Pod")
NAMESPACED = {"Pod", "PodDisruptionBudget", "PodGroup", NATIVE_KIND, "PersistentVolumeClaim", "Service",
              "ReplicaSet", "StatefulSet", "ReplicationController", "ResourceClaim", "ResourceClaimTemplate"}
#: kube-apiserver's built-in classes, present on every cluster.
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def document_kind(kind: str) -> str:
    """The `kind` a document of store kind `kind` carries (see KINDS)."""
    return kind.partition(".")[0]


def store_kind(d: dict):
    """The store kind of a document: its kind, qualified by API group where KINDS has two
    kinds of one name (a PodGroup of scheduling.k8s.io is NATIVE_KIND)."""
    kind = d.get("kind")
    if kind == "PodGroup" and is_native(d):
        return NATIVE_KIND
    return kind


def object_key(kind: str, namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if kind in NAMESPACED else name


def raw_pod_key(obj: dict) -> str:
    """"namespace/name" of a pod dict as a watch delivers it, without parsing the pod (the
    dispatcher, the binder and the shard read it from every event)."""
    meta = obj.get("metadata") or {}
    return sys.intern(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


def _describe(d, kind: str) -> tuple[str, str, dict]:
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    ns = meta.get("namespace") or "default"
    name = meta.get("name") if isinstance(meta.get("name"), str) else "<unnamed>"
    return ns, name, meta


class OwnerRef:
    __slots__ = ("kind", "name", "uid", "controller", "api_version")

    def __init__(self, kind, name, uid, controller, api_version=""):
        self.kind, self.name, self.uid, self.controller = kind, name, uid, controller
        self.api_version = api_version


class PodAffinityTerm:
    """A (anti-)affinity term: pods matching `selector` in `namespaces` within `topology_key`.

    `namespaces` is None for "all namespaces" (an empty namespaceSelector). A namespaceSelector
    with terms is evaluated against the labels of the namespace of the pod matched
    (common.model.workloads.Namespaces; without them, only its `kubernetes.io/metadata.name`).
    """

    __slots__ = ("selector", "namespaces", "namespace_selector", "topology_key")

    def __init__(self, selector, namespaces, namespace_selector, topology_key):
        self.selector = selector
        self.namespaces = namespaces
        self.namespace_selector = namespace_selector
        self.topology_key = topology_key

    @property
    def key(self) -> tuple:
        return (self.namespaces, self.namespace_selector.key if self.namespace_selector else None,
                self.selector.key if self.selector else None)

    def matches(self, pod: "Pod", namespaces=None) -> bool:
        """Whether `pod` is one this term selects; `namespaces` (a Namespaces) gives the labels
        its namespaceSelector reads."""
        if self.selector is None:
            return False
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            if self.namespace_selector is None or not self.namespace_selector.matches(
                    namespaces.labels(pod.namespace) if namespaces is not None
                    else {NAMESPACE_NAME_LABEL: pod.namespace}):
                return False
        return self.selector.matches(pod.labels)

    def cache_key(self, namespaces=None) -> tuple:
        """`key`, plus the Namespaces' generation when what the term selects depends on
        namespace labels: counts cached under it are recounted when those change."""
        if namespaces is None or self.namespace_selector is None or self.namespaces is None:
            return self.key
        return (*self.key, namespaces.generation)


def _affinity_term(value, f: Field, own_ns: str) -> PodAffinityTerm:
    d = f.dict(value)
    topology_key = f.at("topologyKey").str(d.get("topologyKey"), required=True)
    selector = parse_label_selector(d.get("labelSelector"), f.at("labelSelector"))
    names = [f.at("namespaces").at(i).str(n, required=True)
             for i, n in enumerate(f.at("namespaces").list(d.get("namespaces")))]
    ns_sel = parse_label_selector(d.get("namespaceSelector"), f.at("namespaceSelector"))
    if ns_sel is not None and ns_sel.is_empty():
        namespaces = None  # {} selects every namespace
    else:
        namespaces = frozenset(names) if (names or ns_sel is not None) else frozenset([own_ns])
    return PodAffinityTerm(selector, namespaces, ns_sel, topology_key)


def _affinity_terms(d: dict, f: Field, own_ns: str):
    required = tuple(
        _affinity_term(t, f.at("requiredDuringSchedulingIgnoredDuringExecution").at(i), own_ns)
        for i, t in enumerate(f.at("requiredDuringSchedulingIgnoredDuringExecution").list(
            d.get("requiredDuringSchedulingIgnoredDuringExecution"))))
    preferred = []
    pf = f.at("preferredDuringSchedulingIgnoredDuringExecution")
    for i, w in enumerate(pf.list(d.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        wf = pf.at(i)
        w = wf.dict(w)
        weight = wf.at("weight").int(w.get("weight"), default=None, minimum=1)
        if weight is None or weight > 100:
            raise wf.at("weight").error("must be between 1 and 100")
        preferred.append((weight, _affinity_term(w.get("podAffinityTerm"), wf.at("podAffinityTerm"), own_ns)))
    return required, tuple(preferred)


class SpreadConstraint:
    __slots__ = ("max_skew", "topology_key", "hard", "selector", "min_domains",
                 "honor_affinity", "honor_taints")

    def __init__(self, max_skew, topology_key, hard, selector, min_domains, honor_affinity, honor_taints):
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.hard = hard
        self.selector = selector
        self.min_domains = min_domains
        self.honor_affinity = honor_affinity
        self.honor_taints = honor_taints


def _spread_constraint(value, f: Field, labels: dict) -> SpreadConstraint:
    d = f.dict(value)
    max_skew = f.at("maxSkew").int(d.get("maxSkew"), minimum=1)
    if max_skew is None:
        raise f.at("maxSkew").error("is required")
    key = f.at("topologyKey").str(d.get("topologyKey"), required=True)
    when = f.at("whenUnsatisfiable").str(d.get("whenUnsatisfiable"), required=True)
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise f.at("whenUnsatisfiable").error(f"must be DoNotSchedule or ScheduleAnyway, got {when!r}")
    selector = parse_label_selector(d.get("labelSelector"), f.at("labelSelector"))
    match_keys = [f.at("matchLabelKeys").at(i).str(k, required=True)
                  for i, k in enumerate(f.at("matchLabelKeys").list(d.get("matchLabelKeys")))]
    if match_keys and selector is not None:
        extra = tuple((k, "In", frozenset([labels[k]])) for k in match_keys if k in labels)
        selector = LabelSelector(selector.match_labels, selector.expressions + extra)
    policies = []
    for field, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        p = f.at(field).str(d.get(field), default=default)
        if p not in ("Honor", "Ignore"):
            raise f.at(field).error(f"must be Honor or Ignore, got {p!r}")
        policies.append(p == "Honor")
    min_domains = f.at("minDomains").int(d.get("minDomains"), default=1, minimum=1)
    if min_domains > 1 and when != "DoNotSchedule":
        raise f.at("minDomains").error("can only be set with whenUnsatisfiable: DoNotSchedule")
    return SpreadConstraint(max_skew, key, when == "DoNotSchedule", selector, min_domains, *policies)


def _host_ports(containers, f: Field) -> tuple:
    ports = []
    for i, c in enumerate(containers):
        if c.get("ports") is None:
            continue
        cf = f.at(i).at("ports")
        for j, p in enumerate(cf.list(c.get("ports"))):
            pf = cf.at(j)
            p = pf.dict(p)
            host_port = pf.at("hostPort").int(p.get("hostPort"), default=0, minimum=0)
            if host_port > 65535:
                raise pf.at("hostPort").error(f"must be at most 65535, got {host_port}")
            if host_port:
                proto = pf.at("protocol").str(p.get("protocol"), default="TCP")
                if proto not in ("TCP", "UDP", "SCTP"):
                    raise pf.at("protocol").error(f"must be TCP, UDP or SCTP, got {proto!r}")
                ports.append((pf.at("hostIP").str(p.get("hostIP"), default="0.0.0.0"), proto, host_port))
    return tuple(ports)


def _container_requests(c: dict, f: Field, missing: dict | None = None) -> dict[str, int]:
    """The container's requests; `missing` fills in resources it does not request at all."""
    res = f.get_dict(c, "resources")
    reqs = {}
    if res:
        rf = f.at("resources")
        reqs = parse_resource_list(res.get("requests"), rf.at("requests"))
        if res.get("limits") is not None:
            for name, amount in parse_resource_list(res["limits"], rf.at("limits")).items():
                reqs.setdefault(name, amount)  # API defaulting: a limit alone is also the request
    for name, amount in (missing or {}).items():
        reqs.setdefault(name, amount)
    return reqs


def _add(acc: dict, more: dict, where=None) -> None:
    """acc += more; with `where` (resource name -> the Field it came from), refuse a sum past
    the largest amount a resource vector holds, naming that field."""
    for k, v in more.items():
        total = acc.get(k, 0) + v
        if where is not None and total > INT64_MAX:
            unit = "m" if k == "cpu" else ""
            raise where(k).error(f"the pod's total {k} request would be more than {INT64_MAX}{unit}, "
                                 "the most a resource amount can be")
        acc[k] = total


def _max(acc: dict, other: dict) -> None:
    for k, v in other.items():
        if v > acc.get(k, 0):
            acc[k] = v


def _request_field(c: dict, f: Field):
    """resource name -> the field of container `c` its request comes from (for errors)."""
    requests = ((c.get("resources") or {}).get("requests")) or {}
    return lambda name: f.at("resources").at("requests" if name in requests else "limits").at(name)


#: What kube-scheduler's scoring assumes a container asks for when it requests no cpu or no
#: memory at all (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest).
NONZERO_DEFAULTS = {"cpu": 100, "memory": 200 * 1024 * 1024}


def effective_requests(spec: dict, f: Field, missing: dict | None = None) -> dict[str, int]:
    """A pod's scheduling request by Kubernetes' rules (component-helpers PodRequests).

    Sum of the containers; sidecars (init containers with restartPolicy Always) add to that
    sum and stay running while later init containers run; the result is the max of the sum
    and every init container's peak; then pod overhead is added. `missing` (kube's
    NonMissingContainerRequests) fills in, per container, resources it does not request.
    Each quantity is capped at 2^63-1 as Kubernetes caps it, but a sum past that cannot be
    counted in the int64 columns every process keeps: it is refused, naming the field that
    crossed it (found by a second, checked pass, so the usual parse pays nothing for it).
    """
    total = _effective_requests(spec, f, missing, checked=False)
    if total and max(total.values()) > INT64_MAX:
        _effective_requests(spec, f, missing, checked=True)
    return total


def _effective_requests(spec: dict, f: Field, missing: dict | None, checked: bool) -> dict[str, int]:
    containers = f.get_list(spec, "containers")
    total: dict[str, int] = {}
    for i, c in enumerate(containers):
        cf = f.at("containers").at(i)
        c = cf.dict(c)
        _add(total, _container_requests(c, cf, missing), _request_field(c, cf) if checked else None)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    inits = f.get_list(spec, "initContainers")
    for i, c in enumerate(inits):
        cf = f.at("initContainers").at(i)
        c = cf.dict(c)
        req = _container_requests(c, cf, missing)
        where = _request_field(c, cf) if checked else None
        if c.get("restartPolicy") == "Always":
            _add(total, req, where)
            _add(sidecars, req, where)
            peak = dict(sidecars)
        else:
            peak = dict(req)
            _add(peak, sidecars, where)
        _max(init_peak, peak)
    _max(total, init_peak)
    if spec.get("overhead") is not None:
        overhead = f.at("overhead")
        _add(total, parse_resource_list(spec["overhead"], overhead), overhead.at if checked else None)
    return total


class SharedSpec:
    """What a pod's spec parses to, its nodeName aside: one object for the pods of one spec.

    A cluster's running pods are replicas of a few thousand Deployments, Jobs and
    StatefulSets, and every process keeps every one of them; the fields parsed from a spec
    (requests, tolerations, terms, ...) were already shared value by value, and holding
    them here, one reference per pod instead of one per field, saves each pod eighteen slots.
    Read-only: it is shared. `priority` and `preemption_policy` are the spec's own (None or
    empty when unset); the pod's resolved ones are its own (resolve_priority). `hold` (a
    common.model.resources.SlotHold, or None) keeps the extended slots of `requests`
    assigned for as long as a pod of this spec lives."""

    __slots__ = ("images", "scheduler_name", "priority_class_name", "priority", "preemption_policy", "nonzero",
                 "host_ports", "tolerations", "node_selector", "required_node_terms", "preferred_node_terms",
                 "affinity", "anti_affinity", "spread_constraints", "scheduling_gates", "scheduling_group",
                 "resource_claims", "requests", "hold", "spec_json", "__weakref__")

    #: the fields _parse_spec gives, in this order (requests, hold and spec_json are set apart)
    PARSED = __slots__[:17]

    def same_spec(self, spec: dict) -> bool:
        """Whether `spec` (a pod's, nodeName aside) is the one this was parsed from. What is
        kept to tell is the spec's JSON, the spec memo's key (`spec_json`, None for a spec
        not remembered: then never), not the spec as a document: its objects took four
        times the bytes, for every distinct spec."""
        if self.spec_json is None:
            return False
        try:
            return _spec_json(spec) == self.spec_json
        except TypeError:  # not JSON-serialisable: not a spec that was remembered
            return False


def _shared_field(name: str) -> property:
    return property(attrgetter(f"shared.{name}"), doc=f"SharedSpec.{name} of the pod's spec")


class Pod:
    """A parsed pod. Everything parsed from its spec but nodeName is in `shared`, a
    SharedSpec the pods of one spec share, and read through properties of the same names
    (`requests`, its resource vector; `hold`; `tolerations`; ...); the pod itself keeps
    what is its own: identity, labels, node, priority, times, status.

    A bound pod parsed `lean` (as every role parses pods: each keeps every running pod) has
    no `raw` document: it holds only the fields the plugins, checks and accounting read, its
    labels and annotations shared with the other pods that have the same (FrozenMaps,
    common.model.interning), its owner references, namespace and node name shared too, and
    its name read from its key, and no resourceVersion (`resource_version` is ""): what
    reads a pod's version is the pending pod's decision and the check that an event is not
    one already applied, and an event of a bound pod applied twice changes nothing (it is a
    status-only update, below, that keeps the pod as it is). Its SharedSpec keeps the spec's
    JSON (one per distinct spec, its nodeName aside): enough to tell a status-only update
    (`status_only`) without the pod's own document. A pending pod keeps `raw` and
    its resourceVersion (the queue and the pod's own scheduling cycle read them)."""

    kind = "Pod"
    __slots__ = (
        "namespace", "uid", "key", "labels", "annotations", "owner_refs", "node_name", "priority",
        "preemption_policy", "creation_time", "start_time", "phase", "nominated_node", "deleting",
        "resource_version", "volumes", "claim_statuses", "raw", "shared",
    )

    (images, scheduler_name, priority_class_name, nonzero, host_ports, tolerations, node_selector,
     required_node_terms, preferred_node_terms, affinity, anti_affinity, spread_constraints, scheduling_gates,
     scheduling_group, resource_claims, requests, hold) = (
        _shared_field(n) for n in ("images", "scheduler_name", "priority_class_name", "nonzero", "host_ports",
                                   "tolerations", "node_selector", "required_node_terms", "preferred_node_terms",
                                   "affinity", "anti_affinity", "spread_constraints", "scheduling_gates",
                                   "scheduling_group", "resource_claims", "requests", "hold"))

    @property
    def name(self) -> str:
        """The pod's name, from its key (one string less per running pod)."""
        return self.key[len(self.namespace) + 1:]

    @property
    def bound(self) -> bool:
        return bool(self.node_name)

    def controller(self) -> OwnerRef | None:
        for ref in self.owner_refs:
            if ref.controller:
                return ref
        return None

    def has_cross_node_constraints(self) -> bool:
        """Whether one node's feasibility depends on pods elsewhere (affinity, spread)."""
        return bool(self.affinity[0] or self.anti_affinity[0] or any(c.hard for c in self.spread_constraints))

    def counts_like(self, other: "Pod") -> bool:
        """Whether a node holding `other` instead of this pod looks the same to a scheduling
        cycle: the same requests, ports, priority and age, labels and (anti-)affinity terms.
        True for a bound_copy. Affinity terms compare by identity: a pod parsed again from a
        changed spec has new ones, so it is counted anew (correct, just not free)."""
        return (self.uid == other.uid and self.requests == other.requests
                and self.host_ports == other.host_ports and self.priority == other.priority
                and self.start_time == other.start_time and self.deleting == other.deleting
                and self.labels == other.labels and self.affinity == other.affinity
                and self.anti_affinity == other.anti_affinity)

    def bound_copy(self, d: dict) -> "Pod":
        """This pod as `d`, the event of its own binding, shows it, without parsing it again.

        A binding writes spec.nodeName and status only, so a process that already parsed the
        pending pod (a shard or binder that assumed it) takes everything else from here: the
        second parse would cost as much as the scheduling cycle.
        """
        status = d.get("status") or {}
        return self.bound_to(d["spec"]["nodeName"], status.get("phase"), status.get("nominatedNodeName"))

    def bound_to(self, node: str, phase: str | None, nominated: str | None) -> "Pod":
        """This pending pod bound to `node`, with the phase and nominated node its binding
        shows: `bound_copy` after reading them from the document, or the binding's patch
        alone (common.runtime.intake.bound_from_patch), the document never decoded."""
        p = self.with_hinted_status(phase, self.start_time, nominated)
        p.node_name = shared_str(node)
        return p

    def with_status(self, d: dict) -> "Pod":
        """This bound pod as `d`, an update of its status only (`status_only`), shows it:
        phase and start time from `d`, everything else as parsed before. Raises ObjectError
        when the new start time does not parse.

        When nothing the pod keeps changes (new IPs, conditions, container states: most of
        a running pod's updates), it is this pod itself: nothing is allocated or kept for
        the update."""
        status = d.get("status") or {}
        started = status.get("startTime")
        start_time = self.start_time
        if started:
            start_time = cached_time(started)  # (a Field only for the error, rare)
            if start_time is None:
                start_time = parse_time(started, Field(f"Pod {self.key}").at("status").at("startTime"))
        if (self.raw is None and start_time == self.start_time
                and (status.get("phase") or self.phase) == self.phase
                and (status.get("nominatedNodeName") or None) == (self.nominated_node or None)):
            return self
        return self.with_hinted_status(status.get("phase"), start_time, status.get("nominatedNodeName"))

    def with_hinted_status(self, phase: str | None, start_time: float, nominated: str | None) -> "Pod":
        """A copy of this bound pod with the phase (kept when empty), start time and
        nominated node a status write shows, read already: the store's status hint
        (common.runtime.intake.status_hinted) comes here directly, without a document to
        build and read again; `with_status` and `bound_copy` after reading theirs."""
        p = self._copy()
        p.phase = shared_str(phase or self.phase)
        p.start_time = start_time
        p.nominated_node = nominated or None
        p.raw = None  # a bound pod keeps no document (see the class doc)
        p.resource_version = ""  # nor its version
        return p

    def _copy(self) -> "Pod":
        """A new Pod with every slot of this one (tests/common/model/test_objects.py checks
        that none is missed). Assigned one by one in the code: every bound pod's events in
        every process copy one, and a getattr/setattr loop over the slot names cost four
        times as much (copy.copy ten times)."""
        p = object.__new__(Pod)
        p.namespace, p.uid, p.key, p.labels = self.namespace, self.uid, self.key, self.labels
        p.annotations, p.owner_refs, p.node_name = self.annotations, self.owner_refs, self.node_name
        p.priority, p.preemption_policy = self.priority, self.preemption_policy
        p.creation_time, p.start_time, p.phase = self.creation_time, self.start_time, self.phase
        p.nominated_node, p.deleting, p.resource_version = self.nominated_node, self.deleting, self.resource_version
        p.volumes, p.claim_statuses, p.raw, p.shared = self.volumes, self.claim_statuses, self.raw, self.shared
        return p

    def status_only(self, new: dict) -> bool:
        """Whether `new` is a status update of this bound pod that leaves what it holds as it
        was (common.model.changes.pod_status_only, judged against what the pod keeps rather
        than its document): the same uid, node, spec, labels and annotations, not being
        deleted, and its phase on the same side of terminal."""
        nm = new.get("metadata") or {}
        spec = new.get("spec")
        if (self.uid != nm.get("uid") or nm.get("deletionTimestamp") or spec.__class__ is not dict
                or spec.get("nodeName") != self.node_name
                or self.labels != (nm.get("labels") or {}) or self.annotations != (nm.get("annotations") or {})
                or not self.shared.same_spec(spec)):
            return False
        new_phase = (new.get("status") or {}).get("phase")
        return (self.phase in TERMINAL_PHASES) == (new_phase in TERMINAL_PHASES)

    def __repr__(self):
        return f"Pod({self.key})"


EMPTY_AFFINITY = ((), ())
_NO_CLAIM_STATUSES: dict = {}


def _spec_json(spec: dict) -> bytes:
    """A pod spec's JSON but for nodeName: the spec memo's key. Raises TypeError when the
    spec is not JSON-serialisable (odd YAML input)."""
    return orjson.dumps(spec if "nodeName" not in spec else {k: v for k, v in spec.items() if k != "nodeName"})


def parse_pod(d: dict, priority_classes: dict | None = None, lean: bool = False) -> Pod:
    """`d` parsed; `lean`: a bound pod keeps no `raw` document (see Pod), and is read first
    by `_bound_pod`, which takes the plain well-formed case only."""
    if lean:
        p = _bound_pod(d, priority_classes)
        if p is not None:
            return p
    ns, name, _ = _describe(d, "Pod")
    f = Field(f"Pod {ns}/{name}")
    meta, ns, name, labels = parse_metadata(d, f, namespaced=True)
    mf = f.at("metadata")
    spec = f.get_dict(d, "spec", required=True)
    sf = f.at("spec")
    status = f.get_dict(d, "status")
    p = Pod()
    ns = shared_str(ns)
    # interned: the one string for the key in the pod and in every dict keyed by it
    p.namespace, p.key = ns, sys.intern(f"{ns}/{name}")
    p.uid = mf.get_str(meta, "uid")
    annotations = mf.get_str_map(meta, "annotations")
    refs = []
    for i, r in enumerate(mf.get_list(meta, "ownerReferences")):
        rf = mf.at("ownerReferences").at(i)
        r = rf.dict(r)
        refs.append((rf.get_str(r, "kind", required=True), rf.get_str(r, "name", required=True),
                     rf.get_str(r, "uid"), bool(r.get("controller")), rf.get_str(r, "apiVersion")))
    p.owner_refs = shared_refs(tuple(refs), OwnerRef)
    shared = p.shared = _spec_fields(spec, sf, ns, labels).shared(spec, sf)
    p.labels = shared_map(labels)
    p.annotations = shared_map(annotations)
    p.priority, p.preemption_policy = shared.priority, shared.preemption_policy
    p.node_name = shared_str(sf.get_str(spec, "nodeName"))
    p.volumes = parse_pod_volumes(spec, sf, name) if spec.get("volumes") else ()  # names depend on the pod
    p.claim_statuses = (parse_claim_statuses(status, f.at("status")) if status.get("resourceClaimStatuses")
                        else _NO_CLAIM_STATUSES)
    if priority_classes is not None:
        resolve_priority(p, priority_classes, sf)
    elif p.priority is None:  # no classes known (e.g. store validation): lenient default
        p.priority = SYSTEM_PRIORITY_CLASSES.get(p.priority_class_name, 0)
    p.creation_time = parse_time(meta.get("creationTimestamp"), mf.at("creationTimestamp"))
    p.start_time = parse_time(status.get("startTime"), f.at("status").at("startTime")) or p.creation_time
    p.phase = shared_str(f.at("status").get_str(status, "phase", default="Pending"))
    p.nominated_node = f.at("status").get_str(status, "nominatedNodeName")
    p.deleting = bool(meta.get("deletionTimestamp"))
    kept = not (lean and p.node_name)
    p.resource_version = str(meta.get("resourceVersion") or "") if kept else ""
    p.raw = d if kept else None
    return p


def _str_or_empty(value):
    """A string field as parse_pod's checks read it ("" when absent or empty), or None
    when they would refuse it."""
    if value.__class__ is str:
        return value
    return "" if value is None else None


def _bound_pod(d: dict, priority_classes: dict | None) -> Pod | None:
    """A bound pod parsed lean without a Field per field, or None for parse_pod's full
    reading: every initial list brings every running pod to every role (a million, in the
    issue's cluster), and the Fields made for the errors that almost never come were most
    of a parse. It reads the same fields under the same checks as parse_pod, and anything
    else (a pending pod, volumes, claim statuses, a spec not parsed yet, a value of an
    unexpected type, a PriorityClass not found) goes to the full reading, which parses it
    or raises the ObjectError naming the object and the field, so the Pod and the errors
    are parse_pod's."""
    meta, spec, status = d.get("metadata"), d.get("spec"), d.get("status")
    if status is None:
        status = {}
    if meta.__class__ is not dict or spec.__class__ is not dict or status.__class__ is not dict:
        return None
    node, name, ns = spec.get("nodeName"), meta.get("name"), _str_or_empty(meta.get("namespace"))
    if (node.__class__ is not str or not node or name.__class__ is not str or not name
            or ns is None or spec.get("volumes") or status.get("resourceClaimStatuses")):
        return None
    ns = ns or "default"
    labels, annotations = meta.get("labels"), meta.get("annotations")
    labels = {} if labels is None else labels
    annotations = {} if annotations is None else annotations
    if labels.__class__ is not dict or annotations.__class__ is not dict:
        return None
    for value in (*labels.values(), *annotations.values()):
        if value.__class__ is not str:
            return None
    refs = _owner_refs(meta.get("ownerReferences"))
    uid, phase = _str_or_empty(meta.get("uid")), _str_or_empty(status.get("phase"))
    nominated = _str_or_empty(status.get("nominatedNodeName"))
    created = cached_time(meta.get("creationTimestamp"))
    started = cached_time(status.get("startTime"))
    if None in (refs, uid, phase, nominated, created, started):
        return None
    fields = _spec_memo_get(spec, ns, labels)
    ref = fields.built if fields is not None else None
    shared = ref() if ref is not None else None
    if shared is None:
        return None  # a spec parsed afresh: parse_pod knows where to blame its errors
    p = Pod()
    intern = sys.intern  # (every value here is a str already: no shared_str call per field)
    ns = intern(ns)
    p.namespace, p.key = ns, intern(f"{ns}/{name}")
    p.uid = uid
    p.owner_refs = shared_refs(refs, OwnerRef)
    p.shared = shared
    p.labels, p.annotations = shared_map(labels), shared_map(annotations)
    p.priority, p.preemption_policy = shared.priority, shared.preemption_policy
    p.node_name = intern(node)
    p.volumes, p.claim_statuses = (), _NO_CLAIM_STATUSES
    if priority_classes is not None:
        if p.priority is None and p.priority_class_name and p.priority_class_name not in priority_classes \
                and p.priority_class_name not in SYSTEM_PRIORITY_CLASSES:
            return None  # refused: parse_pod says why
        resolve_priority(p, priority_classes)
    elif p.priority is None:
        p.priority = SYSTEM_PRIORITY_CLASSES.get(p.priority_class_name, 0)
    p.creation_time, p.start_time = created, started or created
    p.phase = intern(phase or "Pending")
    p.nominated_node = nominated
    p.deleting = bool(meta.get("deletionTimestamp"))
    p.resource_version, p.raw = "", None
    return p


def _owner_refs(refs) -> tuple | None:
    """metadata.ownerReferences as parse_pod reads them, (kind, name, uid, controller,
    apiVersion) each, or None when its checks would refuse them."""
    if not refs:
        return () if refs is None or refs.__class__ is list else None
    if refs.__class__ is not list:
        return None
    out = []
    for r in refs:
        if r.__class__ is not dict:
            return None
        kind, name = r.get("kind"), r.get("name")
        uid, api = _str_or_empty(r.get("uid")), _str_or_empty(r.get("apiVersion"))
        if kind.__class__ is not str or not kind or name.__class__ is not str or not name or uid is None or api is None:
            return None
        out.append((kind, name, uid, bool(r.get("controller")), api))
    return tuple(out)


class _SpecParse:
    """One parse of a pod spec: the SharedSpec fields parse_pod takes (SharedSpec.PARSED),
    the effective requests by resource name, and the SharedSpec last made of them, by weak
    reference. Pods share that SharedSpec (and its vector and hold) while any of them
    lives; once they are all gone its hold's slots may be another resource's, so the next
    pod gets a new one with a new vector."""

    __slots__ = ("fields", "amounts", "built", "spec_json")

    def __init__(self, fields: tuple, amounts: dict):
        self.fields, self.amounts, self.built = fields, amounts, None
        #: the JSON of the spec it was parsed from (nodeName aside: the spec memo's key),
        #: SharedSpec.spec_json; None until remembered
        self.spec_json = None

    def shared(self, spec: dict, sf: Field) -> SharedSpec:
        """The SharedSpec for a pod of this spec (`spec`, `sf`: that pod's, for errors)."""
        ref = self.built  # read once: another thread may replace it
        out = None if ref is None else ref()
        if out is not None:
            return out
        out = SharedSpec()
        for name, value in zip(SharedSpec.PARSED, self.fields):
            setattr(out, name, value)
        out.requests, out.hold = resource_vector_at(self.amounts, lambda name: _request_origin(spec, sf, name))
        out.spec_json = self.spec_json
        self.built = weakref.ref(out)
        return out


def _request_origin(spec: dict, sf: Field, name: str) -> Field:
    """The first field of a (valid) spec that requests resource `name`, for errors."""
    for section in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(section) or ()):
            res = c.get("resources") or {}
            for kind in ("requests", "limits"):
                if name in (res.get(kind) or {}):
                    return sf.at(section).at(i).at("resources").at(kind).at(name)
    return sf.at("overhead").at(name)


def _scheduling_gates(spec: dict, sf: Field) -> tuple:
    """The names of spec.schedulingGates, in order."""
    gf = sf.at("schedulingGates")
    return tuple(gf.at(i).get_str(gf.at(i).dict(g), "name", required=True)
                 for i, g in enumerate(sf.get_list(spec, "schedulingGates")))


def _scheduling_group(spec: dict, sf: Field) -> str | None:
    """spec.schedulingGroup.podGroupName: the kube PodGroup (scheduling.k8s.io) the pod joins.
    The API server requires exactly one field of the union, hence the name."""
    gf = sf.at("schedulingGroup")
    return gf.get_str(gf.dict(spec.get("schedulingGroup")), "podGroupName", required=True)


_SPEC_MEMO: dict = {}
_SPEC_MEMO_SIZE = 4096


def _spec_fields(spec: dict, sf: Field, ns: str, labels: dict) -> _SpecParse:
    """What parse_pod reads from the spec (all but nodeName), memoised by the spec's JSON.

    Pods of one Deployment, Job or benchmark share their spec, and every pod is parsed by
    several processes (the store's validation, its shard, other shards once it is bound,
    the binder), so most parses repeat one another. The namespace is part of the key
    (affinity terms default to it), and so are the labels when there are spread constraints
    (matchLabelKeys reads them). Only specs that parsed cleanly are remembered: a bad one is
    parsed again, and its error names its own pod. The values are shared and never modified.
    """
    key = _spec_memo_key(spec, ns, labels)
    if key is None:
        return _parse_spec(spec, sf, ns, labels)
    fields = _SPEC_MEMO.get(key)
    if fields is None:
        fields = _parse_spec(spec, sf, ns, labels)
        key = tuple(_exact(b) for b in key)
        fields.spec_json = key[1]
        if len(_SPEC_MEMO) >= _SPEC_MEMO_SIZE:
            _SPEC_MEMO.clear()
        _SPEC_MEMO[key] = fields
    return fields


def _spec_memo_key(spec: dict, ns: str, labels: dict) -> tuple | None:
    """The spec memo's key for a pod's spec, or None when it cannot be remembered."""
    try:
        body = _spec_json(spec)
        key = (ns, body, orjson.dumps(labels) if spec.get("topologySpreadConstraints") else None)
    except TypeError:  # not JSON-serialisable (odd YAML input): just parse it
        return None
    if b"null" in body:  # orjson writes YAML's .nan and .inf as null too: keep them apart
        return None
    return key


def _spec_memo_get(spec: dict, ns: str, labels: dict) -> _SpecParse | None:
    """The memo's parse of a spec seen before, else None."""
    key = _spec_memo_key(spec, ns, labels)
    return _SPEC_MEMO.get(key) if key is not None else None


def _exact(b):
    """`b` (bytes from orjson.dumps, or not) in a bytes object of its own size: orjson's
    output keeps its whole write buffer (4-8 KB for a spec of 900 bytes) as long as it lives."""
    return bytes(memoryview(b)) if b.__class__ is bytes else b


def _parse_spec(spec: dict, sf: Field, ns: str, labels: dict) -> _SpecParse:
    containers = sf.get_list(spec, "containers")
    cf = sf.at("containers")
    if not containers:
        raise cf.error("must have at least one container")
    for i, c in enumerate(containers):
        if c.__class__ is not dict:
            cf.at(i).dict(c)
    images = tuple(c["image"] for c in containers if isinstance(c.get("image"), str))
    scheduler_name = sf.get_str(spec, "schedulerName", default="default-scheduler")
    priority_class_name = sf.get_str(spec, "priorityClassName")
    priority = sf.get_int(spec, "priority")
    policy = sf.get_str(spec, "preemptionPolicy")
    if policy and policy not in ("PreemptLowerPriority", "Never"):
        raise sf.at("preemptionPolicy").error(f"must be PreemptLowerPriority or Never, got {policy!r}")
    amounts = effective_requests(spec, sf)
    amounts["pods"] = 1  # every pod takes one pod slot
    nonzero = effective_requests(spec, sf, NONZERO_DEFAULTS)  # what scoring counts
    nonzero = (nonzero.get("cpu", 0), nonzero.get("memory", 0))
    host_ports = _host_ports(containers, cf)
    tolerations = tuple(parse_toleration(t, sf.at("tolerations").at(i))
                        for i, t in enumerate(sf.get_list(spec, "tolerations")))
    node_selector = sf.get_str_map(spec, "nodeSelector")
    aff = sf.get_dict(spec, "affinity")
    af = sf.at("affinity")
    na = af.get_dict(aff, "nodeAffinity")
    naf = af.at("nodeAffinity")
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    required_terms = None
    if req is not None:
        rf = naf.at("requiredDuringSchedulingIgnoredDuringExecution")
        terms = rf.get_list(rf.dict(req), "nodeSelectorTerms")
        if not terms:
            raise rf.at("nodeSelectorTerms").error("must have at least one term")
        required_terms = tuple(parse_node_selector_term(t, rf.at("nodeSelectorTerms").at(i))
                               for i, t in enumerate(terms))
    preferred = []
    pf = naf.at("preferredDuringSchedulingIgnoredDuringExecution")
    for i, w in enumerate(naf.get_list(na, "preferredDuringSchedulingIgnoredDuringExecution")):
        wf = pf.at(i)
        w = wf.dict(w)
        weight = wf.get_int(w, "weight", minimum=1)
        if weight is None or weight > 100:
            raise wf.at("weight").error("must be between 1 and 100")
        preferred.append((weight, parse_node_selector_term(w.get("preference"), wf.at("preference"))))
    affinity = (_affinity_terms(af.get_dict(aff, "podAffinity"), af.at("podAffinity"), ns)
                if aff.get("podAffinity") else EMPTY_AFFINITY)
    anti_affinity = (_affinity_terms(af.get_dict(aff, "podAntiAffinity"), af.at("podAntiAffinity"), ns)
                     if aff.get("podAntiAffinity") else EMPTY_AFFINITY)
    spread = tuple(_spread_constraint(c, sf.at("topologySpreadConstraints").at(i), labels)
                   for i, c in enumerate(sf.get_list(spec, "topologySpreadConstraints")))
    gates = _scheduling_gates(spec, sf) if spec.get("schedulingGates") else ()
    group = _scheduling_group(spec, sf) if spec.get("schedulingGroup") is not None else None
    claims = parse_pod_claims(spec, sf) if spec.get("resourceClaims") else ()
    return _SpecParse((images, scheduler_name, priority_class_name, priority, policy, nonzero, host_ports,
                       tolerations, node_selector, required_terms, tuple(preferred), affinity,
                       anti_affinity, spread, gates, group, claims), amounts)


def resolve_priority(p: Pod, priority_classes: dict, f: Field | None = None) -> None:
    """spec.priority, else the named PriorityClass, else the global default, else 0.

    `priority_classes` maps name -> PriorityClass. An unknown class name is an error, as the
    Priority admission plugin would reject the pod.
    """
    if p.priority is not None:
        return
    if p.priority_class_name:
        pc = priority_classes.get(p.priority_class_name)
        if pc is not None:
            p.priority = pc.value
            if not p.preemption_policy:
                p.preemption_policy = pc.preemption_policy
            return
        value = SYSTEM_PRIORITY_CLASSES.get(p.priority_class_name)
        if value is None:
            f = f or Field(f"Pod {p.key}", "spec")
            raise f.at("priorityClassName").error(f"no PriorityClass named {p.priority_class_name!r}")
        p.priority = value
        return
    for pc in priority_classes.values():
        if pc.global_default:
            p.priority = pc.value
            if not p.preemption_policy:
                p.preemption_policy = pc.preemption_policy
            return
    p.priority = 0


class Node:
    """A parsed node; `hold` keeps the extended slots of `allocatable`, as Pod's does."""

    kind = "Node"
    __slots__ = ("name", "key", "uid", "labels", "annotations", "taints", "unschedulable",
                 "allocatable", "images", "resource_version", "raw", "hold")

    def __repr__(self):
        return f"Node({self.name})"


def parse_node(d: dict) -> Node:
    _, name, _ = _describe(d, "Node")
    f = Field(f"Node {name}")
    meta, _, name, labels = parse_metadata(d, f, namespaced=False)
    spec = f.at("spec").dict(d.get("spec"))
    status = f.at("status").dict(d.get("status"))
    n = Node()
    n.name = n.key = name
    n.uid = f.at("metadata.uid").str(meta.get("uid"))
    n.labels = labels
    n.annotations = f.at("metadata.annotations").str_map(meta.get("annotations"))
    n.taints = tuple(parse_taint(t, f.at("spec.taints").at(i))
                     for i, t in enumerate(f.at("spec.taints").list(spec.get("taints"))))
    n.unschedulable = bool(spec.get("unschedulable"))
    alloc_src = "allocatable" if status.get("allocatable") is not None else "capacity"
    alloc_field = f.at(f"status.{alloc_src}")
    allocatable = parse_resource_list(status.get(alloc_src), alloc_field)
    images = {}
    for i, img in enumerate(f.at("status.images").list(status.get("images"))):
        imf = f.at("status.images").at(i)
        img = imf.dict(img)
        size = imf.at("sizeBytes").int(img.get("sizeBytes"), default=0, minimum=0)
        for j, nm in enumerate(imf.at("names").list(img.get("names"))):
            images.setdefault(imf.at("names").at(j).str(nm, required=True), size)  # the first is kube's
    n.images = images
    n.resource_version = str(meta.get("resourceVersion") or "")
    n.raw = d
    n.allocatable, n.hold = resource_vector_at(allocatable, alloc_field.at)
    return n


class IntOrPercent:
    """minAvailable / maxUnavailable: an absolute count or a percentage of expected pods."""

    __slots__ = ("value", "percent")

    def __init__(self, value: int, percent: bool):
        self.value, self.percent = value, percent

    def resolve(self, total: int, round_up: bool) -> int:
        if not self.percent:
            return self.value
        scaled = self.value * total
        return -(-scaled // 100) if round_up else scaled // 100


def _int_or_percent(value, f: Field) -> IntOrPercent | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return IntOrPercent(value, False)
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return IntOrPercent(int(value[:-1]), True)
    raise f.error(f"must be a non-negative integer or a percentage like '50%', got {value!r}")


class PodDisruptionBudget:
    kind = "PodDisruptionBudget"
    __slots__ = ("namespace", "name", "key", "selector", "min_available", "max_unavailable",
                 "disruptions_allowed", "resource_version", "raw")

    def matches(self, pod: Pod) -> bool:
        return pod.namespace == self.namespace and self.selector is not None and self.selector.matches(pod.labels)


def parse_pdb(d: dict) -> PodDisruptionBudget:
    ns, name, _ = _describe(d, "PodDisruptionBudget")
    f = Field(f"PodDisruptionBudget {ns}/{name}")
    meta, ns, name, _ = parse_metadata(d, f, namespaced=True)
    spec = f.at("spec").dict(d.get("spec"), required=True)
    status = f.at("status").dict(d.get("status"))
    b = PodDisruptionBudget()
    b.namespace, b.name, b.key = ns, name, f"{ns}/{name}"
    b.selector = parse_label_selector(spec.get("selector"), f.at("spec.selector"))
    b.min_available = _int_or_percent(spec.get("minAvailable"), f.at("spec.minAvailable"))
    b.max_unavailable = _int_or_percent(spec.get("maxUnavailable"), f.at("spec.maxUnavailable"))
    if b.min_available is not None and b.max_unavailable is not None:
        raise f.at("spec").error("minAvailable and maxUnavailable cannot both be set")
    b.disruptions_allowed = f.at("status.disruptionsAllowed").int(status.get("disruptionsAllowed"))
    b.resource_version = str(meta.get("resourceVersion") or "")
    b.raw = d
    return b


class PriorityClass:
    kind = "PriorityClass"
    __slots__ = ("name", "key", "value", "global_default", "preemption_policy", "raw")


def parse_priority_class(d: dict) -> PriorityClass:
    _, name, _ = _describe(d, "PriorityClass")
    f = Field(f"PriorityClass {name}")
    meta, _, name, _ = parse_metadata(d, f, namespaced=False)
    pc = PriorityClass()
    pc.name = pc.key = name
    value = f.at("value").int(d.get("value"))
    if value is None:
        raise f.at("value").error("is required")
    if value > 1000000000 and name not in SYSTEM_PRIORITY_CLASSES:
        raise f.at("value").error("must be at most 1000000000 for user-defined classes")
    pc.value = value
    pc.global_default = bool(d.get("globalDefault"))
    policy = f.at("preemptionPolicy").str(d.get("preemptionPolicy"), default="PreemptLowerPriority")
    if policy not in ("PreemptLowerPriority", "Never"):
        raise f.at("preemptionPolicy").error(f"must be PreemptLowerPriority or Never, got {policy!r}")
    pc.preemption_policy = policy
    pc.raw = d
    return pc


_PARSERS = {"Pod": parse_pod, "Node": parse_node, "PodDisruptionBudget": parse_pdb,
            "PriorityClass": parse_priority_class, "PodGroup": parse_pod_group, NATIVE_KIND: parse_native_pod_group,
            "PersistentVolumeClaim": parse_pvc, "PersistentVolume": parse_pv,
            "StorageClass": parse_storage_class, "CSINode": parse_csi_node, "Namespace": parse_namespace,
            "Service": parse_service, "ReplicaSet": parse_replica_set, "StatefulSet": parse_stateful_set,
            "ReplicationController": parse_replication_controller, "DeviceClass": parse_device_class,
            "ResourceSlice": parse_resource_slice, "ResourceClaimTemplate": parse_resource_claim_template,
            "ResourceClaim": parse_resource_claim}


_DOCUMENT_KINDS = tuple(dict.fromkeys(document_kind(k) for k in KINDS))


def parse_object(d, priority_classes: dict | None = None, lean: bool = False):
    """Parse any supported kind; raises ObjectError naming the object and field. `lean`: a
    bound pod keeps no raw document (Pod)."""
    if not isinstance(d, dict):
        raise ObjectError("<object>", "<root>", f"must be a mapping, got {type(d).__name__}")
    kind = d.get("kind")
    if kind not in _DOCUMENT_KINDS:
        meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        raise ObjectError(f"{kind or '<no kind>'} {meta.get('name', '<unnamed>')}", "kind",
                          f"unsupported kind {kind!r} (one of {', '.join(_DOCUMENT_KINDS)})")
    kind = store_kind(d)
    if kind == "Pod":
        return parse_pod(d, priority_classes, lean)
    return _PARSERS[kind](d)
