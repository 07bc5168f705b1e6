"""The objects the tests build, and the harnesses over them.

Nodes and pods are written as the plain Kubernetes dicts a manifest would hold and parsed with
common.model.objects, so the tests exercise the same parsing the shard uses. The suite's node and pod
helpers all build through `node()` and `pod()`; the thin wrappers after them only fix the
defaults and argument order some modules' tests are written with (a store that assigns the uid
itself, the binder's namespace "ns", the parser's bare input).

`Cluster` puts them in a ShardCache behind a real Scheduler (default profile, threshold `all`
unless told otherwise) and offers two harnesses over one plugin:

* `filter(plugin, pod)` runs the plugin's PreFilter, then BOTH its per-node `filter` and its
  vectorised `filter_vec` (over a slice of rows and over an index array, the two forms the
  scan passes) and fails the test if they disagree on any node; when the plugin explains
  vectorised rejections itself (`reasons_vec`), those reasons must equal the per-node ones.
* `score(plugin, pod)` runs PreFilter, PreScore, `score` and/or `score_vec` (asserting they
  agree when both exist) and NormalizeScore, returning the final 0..100 score per node.
"""
from __future__ import annotations

import copy
import json
from collections import Counter
from functools import partial

import numpy as np

from binder.view import BinderView
from common import config as config_mod
from common.model.objects import POD_GROUP_LABEL, parse_node, parse_object, parse_pod
from shard.cache import ShardCache
from shard.framework import SKIP, CycleState, PreFilterResult, Status, implements
from shard.scheduler import Scheduler

SCHEDULER = "shardsched"
GI = 1024 ** 3
MI = 1024 ** 2
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
#: the image a real API server's tests give their pods
PAUSE = "registry.k8s.io/pause:3.10"
#: an extended resource
FOO = "example.com/foo"
#: filter status codes
UNRESOLVABLE = "UnschedulableAndUnresolvable"
UNSCHEDULABLE = "Unschedulable"


# --- objects ---------------------------------------------------------------------------------

def node(name: str = "n1", cpu="4", memory="8Gi", pods="110", labels: dict | None = None,
         taints=(), unschedulable: bool = False, images: dict | None = None,
         extra: dict | None = None, hostname_label: bool = True, *, ready: bool | None = None,
         capacity: bool = True, spec: dict | None = None, status: dict | None = None) -> dict:
    """A Node dict; `taints` as "key=value:Effect" strings or taint dicts, `images` as
    {name: bytes}; `ready` adds a Ready condition (True or False); `capacity=False` leaves
    status.capacity out. `spec` and `status`, when given, are used as they are instead of
    the sections built from the other arguments."""
    lab = {"kubernetes.io/hostname": name} if hostname_label else {}
    lab.update(labels or {})
    alloc = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods)}
    alloc.update({k: str(v) for k, v in (extra or {}).items()})
    if spec is None:
        spec = {}
        if taints:
            spec["taints"] = [_taint(t) for t in taints]
        if unschedulable:
            spec["unschedulable"] = True
    if status is None:
        status = {"allocatable": alloc}
        if capacity:
            status["capacity"] = dict(alloc)
        if images:
            status["images"] = [{"names": [n] if isinstance(n, str) else list(n), "sizeBytes": size}
                                for n, size in images.items()]
        if ready is not None:
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": lab}, "spec": spec, "status": status}


def _taint(text) -> dict:
    if isinstance(text, dict):
        return dict(text)
    kv, effect = text.rsplit(":", 1)
    key, _, value = kv.partition("=")
    t = {"key": key, "effect": effect}
    if value:
        t["value"] = value
    return t


def toleration(key: str = "", value: str = "", effect: str = "", operator: str | None = None) -> dict:
    t: dict = {}
    if key:
        t["key"] = key
    t["operator"] = operator or ("Equal" if value else "Exists")
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def pod(name: str, cpu: str | None = None, memory: str | None = None, *, ns: str = "default",
        labels: dict | None = None, node_name: str | None = None, priority: int | None = None,
        tolerations=(), node_selector: dict | None = None, affinity: dict | None = None,
        spread=(), ports=(), images=("pause",), owner: str | None = None,
        extra: dict | None = None, scheduler: str | None = SCHEDULER, phase: str | None = None,
        uid: str | None = "uid-{ns}-{name}", status: bool = True, spec: dict | None = None,
        meta: dict | None = None, volumes=()) -> dict:
    """A Pod dict. `ports` as (hostPort, protocol, hostIP) tuples (protocol/hostIP optional)
    or container port dicts; `owner` as "Kind/name" for a controller ownerReference; `extra`
    extra requests (extended resources' and hugepages' limits set equal, as kube requires); `volumes` spec.volumes entries (see claim_volume()).

    What an API server would fill in can be left out, as in a manifest a client writes:
    `uid=None` (`uid` is otherwise a template of {ns} and {name}), `scheduler=None` (no
    schedulerName), `status=False` (no status; otherwise phase `phase`, or Running when bound
    and Pending when not). `spec` and `meta` are merged last into spec and metadata, for the
    fields no argument covers."""
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update({k: str(v) for k, v in (extra or {}).items()})
    containers = []
    for i, image in enumerate(images):
        c: dict = {"name": f"c{i}", "image": image}
        if i == 0 and requests:
            c["resources"] = {"requests": requests}
            fixed = {k: v for k, v in requests.items() if "/" in k or k.startswith("hugepages-")}
            if fixed:  # the API server wants extended resources' and hugepages' limits
                c["resources"]["limits"] = fixed
        if i == 0 and ports:
            c["ports"] = [_port(p) for p in ports]
        containers.append(c)
    spec_: dict = {"containers": containers}
    if scheduler is not None:
        spec_["schedulerName"] = scheduler
    if node_name:
        spec_["nodeName"] = node_name
    if priority is not None:
        spec_["priority"] = priority
    if tolerations:
        spec_["tolerations"] = list(tolerations)
    if node_selector:
        spec_["nodeSelector"] = node_selector
    if affinity:
        spec_["affinity"] = affinity
    if spread:
        spec_["topologySpreadConstraints"] = list(spread)
    if volumes:
        spec_["volumes"] = list(volumes)
    spec_.update(spec or {})
    meta_: dict = {"name": name, "namespace": ns}
    if uid is not None:
        meta_["uid"] = uid.format(ns=ns, name=name)
    meta_["labels"] = dict(labels or {})
    if owner:
        kind, _, oname = owner.partition("/")
        meta_["ownerReferences"] = [{"apiVersion": "v1" if kind == "ReplicationController" else "apps/v1",
                                     "kind": kind, "name": oname, "uid": f"uid-{oname}", "controller": True}]
    meta_.update(meta or {})
    out = {"apiVersion": "v1", "kind": "Pod", "metadata": meta_, "spec": spec_}
    if status:
        out["status"] = {"phase": phase or ("Running" if node_name else "Pending")}
    return out


def _port(p) -> dict:
    if isinstance(p, dict):
        return dict(p)
    if isinstance(p, int):
        p = (p,)
    out = {"containerPort": p[0], "hostPort": p[0]}
    if len(p) > 1 and p[1]:
        out["protocol"] = p[1]
    if len(p) > 2 and p[2]:
        out["hostIP"] = p[2]
    return out


def expr(key: str, op: str, *values) -> dict:
    e: dict = {"key": key, "operator": op}
    if values:
        e["values"] = [str(v) for v in values]
    return e


def node_affinity(*required_terms, preferred=()) -> dict:
    """required_terms: each a list of matchExpressions, or a dict term; preferred: (weight, term)."""
    na: dict = {}
    if required_terms:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [t if isinstance(t, dict) else {"matchExpressions": list(t)}
                                  for t in required_terms]}
    if preferred:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t if isinstance(t, dict) else {"matchExpressions": list(t)}}
            for w, t in preferred]
    return {"nodeAffinity": na}


def pod_term(match_labels: dict, topology_key: str = "kubernetes.io/hostname", **extra) -> dict:
    t = {"labelSelector": {"matchLabels": match_labels}, "topologyKey": topology_key}
    t.update(extra)
    return t


def pod_affinity(required=(), preferred=(), anti_required=(), anti_preferred=()) -> dict:
    """Each required entry is a pod_term(); each preferred entry is (weight, pod_term())."""
    out: dict = {}
    for key, req, pref in (("podAffinity", required, preferred),
                           ("podAntiAffinity", anti_required, anti_preferred)):
        section: dict = {}
        if req:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = list(req)
        if pref:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref]
        if section:
            out[key] = section
    return out


def spread(max_skew: int, key: str, labels: dict, hard: bool = True, **extra) -> dict:
    c = {"maxSkew": max_skew, "topologyKey": key,
         "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
         "labelSelector": {"matchLabels": labels}}
    c.update(extra)
    return c


# --- other shapes, through node() and pod() -------------------------------------------------
# Each fixes only the defaults and argument order its tests call it with.

def bare_node(name: str = "n1", status: dict | None = None, spec: dict | None = None,
              labels: dict | None = None) -> dict:
    """Only what is given, for the parser's own tests: no allocatable (unless in `status`),
    no taints, no hostname label."""
    return node(name, labels=labels, hostname_label=False, spec=spec or {}, status=status or {})


def bare_pod(name: str = "web", namespace: str = "default", spec: dict | None = None,
             labels: dict | None = None, **meta) -> dict:
    """One nginx:1.25 container and only the fields given, for the parser's own tests: no uid,
    schedulerName or status; `spec` merged into the spec, `meta` into the metadata."""
    return pod(name, ns=namespace, labels=labels, images=("nginx:1.25",), uid=None, scheduler=None,
               status=False, spec=spec, meta=meta)


#: The binder view's node: 2 cpu, 4Gi, 3 pods, no hostname label.
small_node = partial(node, cpu="2", memory="4Gi", pods="3", hostname_label=False, capacity=False)


def ns_pod(name: str, node_name: str | None = None, cpu: str = "500m", port: int | None = None,
           uid: str | None = None, phase: str | None = None, **spec) -> dict:
    """A 500m pod in namespace "ns" with uid "uid-NAME" (the binder view's and common.tools.verify's
    tests name victims by it), no schedulerName, and a status only when `phase` is given;
    `port` a host port; `spec` raw spec fields."""
    return pod(name, cpu, ns="ns", node_name=node_name, images=("x",),
               ports=[{"containerPort": 1, "hostPort": port}] if port else (),
               uid=uid or "uid-{name}", scheduler=None, status=phase is not None, phase=phase, spec=spec)


def verify_node(name: str = "n1", cpu: str = "2", pods: str = "110", taints=(), labels: dict | None = None):
    """A parsed 2 cpu, 4Gi node in zone "a" (label `zone`), as common.tools.verify takes them."""
    return parse_node(node(name, cpu, "4Gi", pods, labels or {"zone": "a"}, taints, hostname_label=False,
                           capacity=False))


def verify_pod(name: str, node_name: str | None = "n1", cpu: str = "500m", port: int | None = None,
               uid: str | None = None, phase: str | None = None, **spec):
    """ns_pod() bound to n1 unless told otherwise, parsed, as common.tools.verify takes them."""
    return parse_pod(ns_pod(name, node_name, cpu, port, uid, phase, **spec))


def manifest_node(name: str, cpu: str = "4", taints=None, unschedulable: bool = False,
                  ready: bool | None = True, zone: str | None = None, gpus: str | None = None) -> dict:
    """A Node as `shardsched create` reads it: 8Gi, 10 pods, Ready unless told otherwise, the
    zone label and nvidia.com/gpu when given; no capacity, no hostname label."""
    return node(name, cpu, "8Gi", "10", {ZONE: zone} if zone else None, taints or (), unschedulable,
                extra={"nvidia.com/gpu": gpus} if gpus else None, hostname_label=False, ready=ready,
                capacity=False)


def overflowing_pod(name: str = "huge") -> dict:
    """A pod whose two containers' memory requests (2^62 bytes each) sum past int64."""
    half = str(1 << 62)
    d = pod(name, memory=half, images=("a", "b"))
    d["spec"]["containers"][1]["resources"] = {"requests": {"memory": half}}
    return d


def too_wide_node(name: str = "wide") -> dict:
    """A node with one extended resource more than a process may track at once."""
    from common.model.resources import MAX_EXTENDED_RESOURCES

    return node(name, extra={f"example.com/many-{i}": "1" for i in range(MAX_EXTENDED_RESOURCES + 1)})


def anchor_bomb(name: str = "bomb", levels: int = 7, fan_out: int = 9) -> str:
    """A billion-laughs Pod as YAML text: each level lists the one before `fan_out` times.
    About 500 bytes that PyYAML builds at once (as shared lists) and that expand to 9^7
    strings, 38 MB of JSON, wherever the pod is serialised."""
    lines = ["apiVersion: v1", "kind: Pod", f"metadata: {{name: {name}}}", "spec:",
             "  containers: [{name: c, image: x}]", "  x:",
             "    l0: &l0 [" + ", ".join(["lol"] * fan_out) + "]"]
    for i in range(1, levels):
        lines.append(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def manifest_pod(name: str, ns: str = "default", cpu: str = "500m", node_name: str | None = None,
                 host_port: int | None = None, priority_class: str | None = None, tolerations=None) -> dict:
    """A 500m/256Mi Pod as `shardsched create` reads it: no uid, schedulerName or status."""
    return pod(name, cpu, "256Mi", ns=ns, node_name=node_name, tolerations=tolerations or (),
               ports=[{"containerPort": 8080, "hostPort": host_port}] if host_port else (),
               uid=None, scheduler=None, status=False,
               spec={"priorityClassName": priority_class} if priority_class else None)


def api_pod(name: str, cpu: str | None = "1", **spec) -> dict:
    """A pod a client creates on a store (a real API server too): the pause image, no uid (the
    store assigns it), no schedulerName, no status; `spec` raw spec fields, kept as given."""
    return pod(name, cpu, images=(PAUSE,), uid=None, scheduler=None, status=False, spec=spec)


def labelled_api_pod(name: str, labels: dict | None = None) -> dict:
    """api_pod() without requests, labelled."""
    return pod(name, labels=labels, images=(PAUSE,), uid=None, scheduler=None, status=False)


#: The store suite's node: 8 cpu, 16Gi; no capacity, no hostname label.
api_node = partial(node, cpu="8", memory="16Gi", hostname_label=False, capacity=False)


def numbered_pod(i: int, cpu: str = "100m", port: int | None = None, name: str = "p") -> dict:
    """Pod NAME-I of the multi-process runs: 64Mi, this scheduler's; no uid or status (the
    store assigns them)."""
    return pod(f"{name}-{i}", cpu, "64Mi", ports=[{"containerPort": 80, "hostPort": port}] if port else (),
               uid=None, status=False)


def running(name, node_name, cpu, priority, start="2026-01-01T00:00:00Z", **kw):
    """A pod bound to `node_name` and running since `start`: a potential preemption victim."""
    d = pod(name, cpu, node_name=node_name, priority=priority, **kw)
    d["status"]["startTime"] = start
    return d


# --- other kinds ----------------------------------------------------------------------------

def pdb(name: str, labels: dict, min_available=None, max_unavailable=None, allowed=None) -> dict:
    """A PodDisruptionBudget in "default" over pods with `labels`; `allowed` its status."""
    spec: dict = {"selector": {"matchLabels": labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    d = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    if allowed is not None:
        d["status"] = {"disruptionsAllowed": allowed}
    return d


def namespace(name: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}


def service(name: str, selector: dict | None, ns: str = "default") -> dict:
    """A ClusterIP Service over pods with `selector` (None: a Service without a selector)."""
    spec: dict = {"ports": [{"port": 80, "protocol": "TCP"}]}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def controller(kind: str, name: str, labels: dict, ns: str = "default", replicas: int = 0,
               selector: dict | None = None) -> dict:
    """A ReplicaSet, StatefulSet or ReplicationController whose pods carry `labels`, as an API
    server accepts it (a pause template); `selector` its label selector (default: matchLabels
    `labels`; a ReplicationController's is a plain map)."""
    template = {"metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "c0", "image": PAUSE}], "terminationGracePeriodSeconds": 0}}
    if kind == "ReplicationController":
        spec: dict = {"replicas": replicas, "selector": dict(selector or labels), "template": template}
        api = "v1"
    else:
        spec = {"replicas": replicas, "selector": selector or {"matchLabels": dict(labels)}, "template": template}
        api = "apps/v1"
        if kind == "StatefulSet":
            spec["serviceName"] = name
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def with_priority_classes(docs: list) -> list:
    """Manifests as Priority admission accepts them: a pod stating spec.priority (and a
    preemptionPolicy) gets a PriorityClass granting exactly that, added to the documents."""
    classes, out = {}, []
    for d in docs:
        spec = d.get("spec") or {}
        if d.get("kind") == "Pod" and spec.get("priority") is not None and not spec.get("priorityClassName"):
            policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
            name = f"priority-{spec['priority']}-{policy.lower()}"
            classes.setdefault(name, priority_class(name, spec["priority"], policy=policy))
            d = {**d, "spec": {**spec, "priorityClassName": name}}
        out.append(d)
    return list(classes.values()) + out


def priority_class(name: str, value: int, global_default: bool | None = None, policy: str | None = None) -> dict:
    d = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
         "value": value}
    if global_default is not None:
        d["globalDefault"] = global_default
    if policy:
        d["preemptionPolicy"] = policy
    return d


def pod_group(name: str, min_member: int | None = None, ns: str = "default", min_resources: dict | None = None,
              timeout: int | None = None, uid: str | None = "uid-pg-{ns}-{name}", created: str | None = None) -> dict:
    """A PodGroup (scheduling.x-k8s.io/v1alpha1); `uid=None` leaves it to the store."""
    spec: dict = {}
    if min_member is not None:
        spec["minMember"] = min_member
    if min_resources:
        spec["minResources"] = dict(min_resources)
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    meta: dict = {"name": name, "namespace": ns}
    if uid is not None:
        meta["uid"] = uid.format(ns=ns, name=name)
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def group_pod(name: str, group: str, cpu: str | None = "1", labels: dict | None = None, **kw) -> dict:
    """A pod in PodGroup `group` (label scheduling.x-k8s.io/pod-group) of its namespace."""
    return pod(name, cpu, labels={POD_GROUP_LABEL: group, **(labels or {})}, **kw)


def native_pod_group(name: str, min_count: int | None = None, ns: str = "default", basic: bool = False,
                     uid: str | None = "uid-npg-{ns}-{name}") -> dict:
    """kube's own PodGroup (scheduling.k8s.io/v1beta1): a gang of `min_count`, or `basic`."""
    policy = {"basic": {}} if basic else {"gang": {} if min_count is None else {"minCount": min_count}}
    meta: dict = {"name": name, "namespace": ns}
    if uid is not None:
        meta["uid"] = uid.format(ns=ns, name=name)
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": {"schedulingPolicy": policy}}


def native_group_pod(name: str, group: str, cpu: str | None = "1", **kw) -> dict:
    """A pod joining kube's PodGroup `group` of its namespace (spec.schedulingGroup.podGroupName)."""
    d = pod(name, cpu, **kw)
    d["spec"]["schedulingGroup"] = {"podGroupName": group}
    return d


# --- storage -----------------------------------------------------------------------------------

WFFC = "WaitForFirstConsumer"


def claim_volume(claim: str, name: str | None = None, ephemeral: bool = False) -> dict:
    """A spec.volumes entry mounting claim `claim` (for `ephemeral`, an ephemeral volume
    named `claim`, whose claim is "<pod>-<claim>")."""
    if ephemeral:
        return {"name": name or claim, "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}
    return {"name": name or f"vol-{claim}", "persistentVolumeClaim": {"claimName": claim}}


def storage_class(name: str, provisioner: str = "example.com/fake", mode: str | None = WFFC,
                  topologies: dict | None = None) -> dict:
    """A StorageClass; `topologies` {label: [values]} as one allowedTopologies term.
    (kube's tests give classes that cannot provision an empty provisioner, which the API
    rejects: "kubernetes.io/no-provisioner" means the same to the scheduler.)"""
    d = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
         "provisioner": provisioner}
    if mode is not None:
        d["volumeBindingMode"] = mode
    if topologies:
        d["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)}
                                                             for k, v in topologies.items()]}]
    return d


def pvc(name: str, cls: str | None = None, size: str | None = "1Gi", modes=("ReadWriteOnce",),
        volume_name: str | None = None, bound: bool = False, phase: str | None = None, ns: str = "default",
        annotations: dict | None = None, owner_uid: str | None = None, uid: str | None = "uid-pvc-{ns}-{name}",
        selector: dict | None = None) -> dict:
    """A PersistentVolumeClaim; `bound` adds pv.kubernetes.io/bind-completed (with
    `volume_name`, kube's withBoundPV); `owner_uid` a controller ownerReference to a pod."""
    spec: dict = {"accessModes": list(modes)}
    if cls is not None:
        spec["storageClassName"] = cls
    if size is not None:
        spec["resources"] = {"requests": {"storage": size}}
    if volume_name:
        spec["volumeName"] = volume_name
    if selector is not None:
        spec["selector"] = selector
    meta: dict = {"name": name, "namespace": ns, "annotations": dict(annotations or {})}
    if uid is not None:
        meta["uid"] = uid.format(ns=ns, name=name)
    if bound:
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid,
                                    "controller": True}]
    d = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase:
        d["status"] = {"phase": phase}
    return d


def pv(name: str, cls: str | None = None, size: str = "1Gi", modes=("ReadWriteOnce",), claim=None,
       affinity: dict | None = None, phase: str | None = "Available", labels: dict | None = None,
       csi: tuple | None = None, source: dict | None = None) -> dict:
    """A PersistentVolume; `claim` "ns/name" or (ns, name, uid) for its claimRef; `affinity`
    {label: [values]} as one required node selector term (kube's withNodeAffinity); `csi`
    (driver, handle); `source` any other volume source (default hostPath)."""
    spec: dict = {"capacity": {"storage": size}, "accessModes": list(modes)}
    if cls is not None:
        spec["storageClassName"] = cls
    if claim is not None:
        ns, cname, *uid = claim.split("/") if isinstance(claim, str) else claim
        spec["claimRef"] = {"namespace": ns, "name": cname, **({"uid": uid[0]} if uid else {})}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": list(v)} for k, v in affinity.items()]}]}}
    if csi:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    else:
        spec.update(source or {"hostPath": {"path": f"/tmp/{name}"}})
    d = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": dict(labels or {})},
         "spec": spec}
    if phase:
        d["status"] = {"phase": phase}
    return d


def csi_node(name: str, limits: dict) -> dict:
    """A CSINode for node `name`: driver -> allocatable count (None: no count)."""
    drivers = [{"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
               for d, c in limits.items()]
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": drivers}}


# --- Dynamic Resource Allocation (resource.k8s.io/v1) -----------------------------------------

GPU_DRIVER = "gpu.example.com"


def device_class(name: str = "gpu", driver: str | None = GPU_DRIVER, selectors=()) -> dict:
    """A DeviceClass selecting `driver`'s devices (None: any), plus CEL `selectors`."""
    exprs = ([f'device.driver == "{driver}"'] if driver else []) + list(selectors)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]}}


def gpu(index: int, model: str = "A100", memory: str = "80Gi", root: str | None = None, **attrs) -> dict:
    """A device entry of a slice: gpu-<index> with model, index and a PCIe root attribute."""
    attributes = {"model": {"string": model}, "index": {"int": index},
                  "resource.kubernetes.io/pcieRoot": {"string": root or f"pci{index // 4}"}}
    attributes.update({k: ({"int": v} if isinstance(v, int) and not isinstance(v, bool) else
                           {"bool": v} if isinstance(v, bool) else {"string": v}) for k, v in attrs.items()})
    return {"name": f"gpu-{index}", "attributes": attributes, "capacity": {"memory": {"value": memory}}}


def resource_slice(node: str, devices=None, driver: str = GPU_DRIVER, name: str | None = None,
                   pool: str | None = None, generation: int = 0, count: int = 1, **spec) -> dict:
    """A node-local ResourceSlice (pool named after the node): `devices` entries (default: 2 gpus)."""
    devices = [gpu(i) for i in range(2)] if devices is None else list(devices)
    body = {"driver": driver, "nodeName": node, "devices": devices,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count}}
    if spec:
        body.pop("nodeName")
        body.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node}-{driver}"}, "spec": body}


def device_request(name: str = "gpu", cls: str = "gpu", count: int | None = None, mode: str | None = None,
                   selectors=(), admin: bool = False, first_available=None) -> dict:
    """A claim's device request: `exactly` from the arguments, or `first_available`
    [(subrequest name, class, count)] alternatives."""
    if first_available is not None:
        return {"name": name, "firstAvailable": [{"name": n, "deviceClassName": c, "count": k}
                                                 for n, c, k in first_available]}
    exactly: dict = {"deviceClassName": cls}
    if count is not None:
        exactly["count"] = count
    if mode is not None:
        exactly["allocationMode"] = mode
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


def claim_spec(*requests, match=None) -> dict:
    """A claim spec of `requests` (default: one gpu) and `match` [(attribute, requests)]."""
    devices: dict = {"requests": list(requests) or [device_request()]}
    if match:
        devices["constraints"] = [{"matchAttribute": a, **({"requests": list(r)} if r else {})} for a, r in match]
    return {"devices": devices}


def resource_claim(name: str, *requests, ns: str = "default", match=None, owner_pod: str | None = None,
                   allocation: dict | None = None, reserved_for=()) -> dict:
    """A ResourceClaim; `owner_pod` a pod name that controls it (as a template's claim);
    `reserved_for` pod names."""
    meta: dict = {"name": name, "namespace": ns, "uid": f"uid-claim-{ns}-{name}"}
    if owner_pod:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_pod,
                                    "uid": f"uid-{ns}-{owner_pod}", "controller": True}]
    out = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
           "spec": claim_spec(*requests, match=match)}
    status: dict = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved_for:
        status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{ns}-{p}"} for p in reserved_for]
    if status:
        out["status"] = status
    return out


def allocation(node: str, *devices, request: str = "gpu", driver: str = GPU_DRIVER) -> dict:
    """A claim's status.allocation of `devices` (names) of the node's pool."""
    return {"devices": {"results": [{"request": request, "driver": driver, "pool": node, "device": d}
                                    for d in devices]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def claim_template(name: str, *requests, ns: str = "default", match=None) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns}, "spec": {"spec": claim_spec(*requests, match=match)}}


def claim_pod(name: str, claims=(), templates=(), statuses: dict | None = None, **kw) -> dict:
    """A pod whose spec.resourceClaims name `claims` (claim names; the pod's entry named
    after it) and `templates` ((entry name, template name)); `statuses` its
    status.resourceClaimStatuses {entry: generated claim name}."""
    entries = [{"name": c, "resourceClaimName": c} for c in claims]
    entries += [{"name": n, "resourceClaimTemplateName": t} for n, t in templates]
    d = pod(name, **kw)
    d["spec"]["resourceClaims"] = entries
    d["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": e["name"]} for e in entries]
    if statuses:
        d.setdefault("status", {})["resourceClaimStatuses"] = [
            {"name": k, "resourceClaimName": v} for k, v in statuses.items()]
    return d


# --- configuration ---------------------------------------------------------------------------

def make_config(mode: str = "all", plugin_config: dict | None = None, disabled=(), enabled=(),
                extra_profiles=(), **sections) -> config_mod.Config:
    """A validated config: threshold `mode`, pluginConfig {plugin: args} and disabled and
    enabled plugins (names or entries) for the first profile, then `extra_profiles`, plus any
    top-level section overrides, as the file writes them (e.g. shards={...},
    threshold={...})."""
    profile: dict = {"schedulerName": SCHEDULER}
    if plugin_config:
        profile["pluginConfig"] = [{"name": n, "args": a} for n, a in plugin_config.items()]
    if disabled or enabled:
        profile["plugins"] = {"disabled": [e if isinstance(e, dict) else {"name": e} for e in disabled],
                              "enabled": [e if isinstance(e, dict) else {"name": e} for e in enabled]}
    doc: dict = {"threshold": {"mode": mode}, "profiles": [profile, *extra_profiles]}
    for k, v in sections.items():
        doc.setdefault(k, {}).update(v)
    return config_mod.validate(copy.deepcopy(doc))


def with_out_of_tree_plugins(cfg: config_mod.Config, *names: str) -> config_mod.Config:
    """`cfg` whose first profile also enables the plugins `names` (weight 0) that a test
    registers beside the known ones; unchecked, as validation knows only the known ones."""
    first = cfg.profiles[0]
    added = tuple(config_mod.PluginEntry.of({"name": n, "weight": 0}) for n in names)
    first = first.replace(plugins={"enabled": (*first.plugins.enabled, *added)})
    return cfg.replace(profiles=(first, *cfg.profiles[1:]))


def stack_config(**sections) -> config_mod.Config:
    """The default config (profile shardsched, adaptive threshold) for processes run on this
    machine beside others: every gRPC port any free one and metrics off, plus `sections`
    overrides as the file writes them (e.g. shards={"count": 4}; profiles=[...]), validated."""
    doc: dict = {"shards": {"basePort": 0, "metricsBasePort": None},
                 "binders": {"basePort": 0, "metricsBasePort": None},
                 "dispatcher": {"port": 0, "metricsPort": None}}
    for k, v in sections.items():
        if isinstance(v, dict):
            doc.setdefault(k, {}).update(v)
        else:
            doc[k] = v
    return config_mod.validate(copy.deepcopy(doc))


# --- a cluster behind a real scheduler -------------------------------------------------------

def outcome(st: Status | None):
    """(code, message) of a filter status, None when the node passes."""
    return None if st is None else (st.code, st.message())


class Cluster:
    def __init__(self, nodes=(), pods=(), cfg: config_mod.Config | None = None, seed: int = 0, storage=(),
                 workloads=(), devices=(), **opts):
        """`storage`: claims, volumes, storage classes and CSINodes the scheduler knows;
        `workloads`: its Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers;
        `devices`: its ResourceClaims, DeviceClasses and ResourceSlices."""
        self.cache = ShardCache()
        for n in nodes:
            self.cache.set_node(parse_node(n))
        for p in pods:
            self.cache.set_pod(parse_pod(p))
        self.sched = Scheduler(cfg or make_config(), self.cache, None, seed, **opts)
        for obj in storage:
            self.sched.volumes.set(parse_object(obj))
        for obj in workloads:
            parsed = parse_object(obj)
            (self.sched.namespaces if parsed.kind == "Namespace" else self.sched.workloads).set(parsed)
        for obj in devices:
            self.sched.devices.set(parse_object(obj))
        self.sched.refresh()

    # cluster changes --------------------------------------------------------------------------

    def add_node(self, n: dict) -> None:
        self.cache.set_node(parse_node(n))
        self.sched.refresh()

    def add_pod(self, p: dict) -> None:
        self.cache.set_pod(parse_pod(p))
        self.sched.refresh()

    @property
    def table(self):
        return self.sched.table

    @property
    def profile(self):
        return self.sched.profiles[SCHEDULER]

    def plugin(self, name: str):
        for p in self.profile.plugins:
            if p.name == name:
                return p
        raise KeyError(name)

    # whole cycles -----------------------------------------------------------------------------

    def schedule(self, p, **kw):
        """One cycle; accepts a dict or a parsed Pod."""
        pod_ = parse_pod(p) if isinstance(p, dict) else p
        self.sched.refresh()
        return self.sched.schedule(pod_, **kw)

    def explain(self, p) -> str:
        """kube-scheduler's unschedulable message for `p` (the pod must not fit)."""
        result = self.schedule(p)
        assert not result.scheduled, f"{p['metadata']['name']} was scheduled on {result.node}"
        return self.sched.explain(result)

    # one plugin -------------------------------------------------------------------------------

    def pre_filter(self, name: str, p: dict):
        plugin = self.plugin(name)
        state = CycleState()
        return plugin.pre_filter(state, parse_pod(p)) if implements(plugin, "pre_filter") else None

    def filter(self, name: str, p: dict) -> dict:
        """node name -> (code, message) or None, agreed by the per-node and vectorised forms."""
        plugin = self.plugin(name)
        pod_ = parse_pod(p)
        table = self.table
        table.fit_width()  # as a cycle starts: a column for every resource the pod names
        n = len(table)
        state = CycleState()
        if implements(plugin, "pre_filter"):
            out = plugin.pre_filter(state, pod_)
            if isinstance(out, Status):
                if out.code == SKIP:
                    return {nm: None for nm in table.names}
                return {nm: outcome(out) for nm in table.names}
            assert out is None or isinstance(out, PreFilterResult)
        per_node = vec = None
        statuses = {}
        if implements(plugin, "filter"):
            statuses = {nm: plugin.filter(state, pod_, table.infos[row]) for row, nm in enumerate(table.names)}
            per_node = {nm: outcome(st) for nm, st in statuses.items()}
        if implements(plugin, "filter_vec"):
            ok_slice = np.asarray(plugin.filter_vec(state, pod_, table, slice(0, n)), dtype=bool)
            ok_rows = np.asarray(plugin.filter_vec(state, pod_, table, np.arange(n)), dtype=bool)
            assert ok_slice.tolist() == ok_rows.tolist(), "filter_vec: slice and index forms differ"
            vec = dict(zip(table.names, ok_slice.tolist()))
        if per_node is None:
            return {nm: None if ok else ("vectorised", "") for nm, ok in vec.items()}
        if vec is not None:
            assert {nm: ok for nm, ok in vec.items()} == {nm: o is None for nm, o in per_node.items()}, \
                f"{name}: vectorised {vec} vs per-node {per_node}"
            if hasattr(plugin, "reasons_vec"):
                failed = np.array([row for row, nm in enumerate(table.names) if not vec[nm]], dtype=np.int64)
                expected = Counter(r for row in failed for r in statuses[table.names[row]].reasons)
                got = plugin.reasons_vec(state, pod_, table, failed) if len(failed) else Counter()
                assert Counter(got) == expected, f"{name}: reasons_vec {got} vs per-node {expected}"
        return per_node

    def passing(self, name: str, p: dict) -> set:
        return {nm for nm, o in self.filter(name, p).items() if o is None}

    def score(self, name: str, p: dict, nodes=None, normalize: bool = True) -> dict:
        """node name -> score after NormalizeScore (raw scores with normalize=False).

        A plugin whose PreScore says Skip scores 0 everywhere: the framework leaves it out."""
        plugin = self.plugin(name)
        pod_ = parse_pod(p)
        table = self.table
        table.fit_width()
        names = list(nodes) if nodes is not None else list(table.names)
        rows = np.array([table.row_of[nm] for nm in names], dtype=np.int64)
        state = CycleState()
        if implements(plugin, "pre_filter"):
            plugin.pre_filter(state, pod_)
        if implements(plugin, "pre_score"):
            st = plugin.pre_score(state, pod_, rows)
            if st is not None and st.code == SKIP:
                return {nm: 0 for nm in names}
        scores = None
        if implements(plugin, "score_vec"):
            scores = np.asarray(plugin.score_vec(state, pod_, table, rows), dtype=np.int64)
        if implements(plugin, "score"):
            per = np.array([plugin.score(state, pod_, table.infos[r]) for r in rows], dtype=np.int64)
            if scores is not None:
                assert scores.tolist() == per.tolist(), f"{name}: score_vec {scores} vs score {per}"
            scores = per
        scores = scores.copy()
        if normalize and implements(plugin, "normalize"):
            plugin.normalize(state, pod_, scores)
        return dict(zip(names, scores.tolist()))


def differently_sized_nodes(cfg: config_mod.Config | None = None, pods=()) -> Cluster:
    """kube's "differently sized nodes": 4000m/10000 and 6000m/10000 (memory in bytes)."""
    return Cluster([node("n1", cpu="4", memory="10000"), node("n2", cpu="6", memory="10000")], pods, cfg=cfg)


# --- other harnesses -------------------------------------------------------------------------

def binder_view(*objs, names=(SCHEDULER,)) -> BinderView:
    """A BinderView (serving schedulerName `names`) that has seen `objs` ADDED."""
    v = BinderView(names)
    for o in objs:
        v.apply("ADDED", o["kind"], o)
    return v


def decision(pod_key: str, node: str, victims=(), uid: str | None = None, rv: str = ""):
    """A shard's Decision; `uid` defaults to the builders' uid of the pod, `victims` are keys
    (their builders' uids) or (key, uid) pairs."""
    from proto import shardsched_pb2 as pb

    if uid is None:
        uid = "uid-{}-{}".format(*pod_key.split("/"))
    refs = [v if isinstance(v, tuple) else (v, "uid-{}-{}".format(*v.split("/"))) for v in victims]
    return pb.Decision(pod_key=pod_key, node=node, pod_uid=uid,
                       victims=[pb.Victim(key=k, uid=u) for k, u in refs], pod_resource_version=rv)


class LiveBinder:
    """A BinderServer on `store` serving on a free loopback port, holding every partition,
    and one shard's Decide stream to it: what a shard (or an attacker) can send."""

    def __init__(self, store, cfg: config_mod.Config | None = None, timeout: float = 10.0):
        import queue
        import threading
        import time

        from binder.server import BinderServer
        from proto import shardsched_pb2_grpc as rpc

        cfg = (cfg or make_config()).replace(binders={"base_port": 0, "metrics_base_port": None})  # any free port; no metrics
        self.server = BinderServer(cfg, store, 0)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        partitions = self.server.partition_count
        while len(self.server.partitions.held_now()) < partitions:
            assert time.monotonic() < deadline, "the binder took no partitions"
            time.sleep(0.02)
        self.channel = self.server.security.channel(self.server.address)
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.responses = rpc.BinderStub(self.channel).Decide(iter(self.requests.get, None))
        self.timeout = timeout

    def sync(self) -> None:
        """Let the binder's watch catch up with the store."""
        import time

        deadline = time.monotonic() + self.timeout
        while self.server.informer.rv != self.server.store.list("Pod")[1]:
            assert time.monotonic() < deadline, "the binder's watch did not catch up"
            time.sleep(0.02)

    def decide(self, *decisions, shard: str = "0", groups=()) -> dict:
        """Send one batch (`groups`: GroupDecisions); pod key -> its Outcome once every
        decision is answered."""
        from proto import shardsched_pb2 as pb

        self.requests.put(pb.DecisionBatch(shard=shard, decisions=list(decisions), groups=list(groups)))
        wanted = {d.pod_key for d in decisions} | {m.pod_key for g in groups for m in g.members}
        got = {}
        for batch in self.responses:
            got.update((o.pod_key, o) for o in batch.outcomes)
            if wanted <= got.keys():
                return got
        raise AssertionError(f"the stream ended with {wanted - got.keys()} unanswered")

    def close(self) -> None:
        self.requests.put(None)
        self.channel.close()
        self.server.stop_event.set()
        self.thread.join(10)


class Clock:
    """A fake clock the tests move by hand (`clock.now += 1`)."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


#: TestExtender refuses every node to a pod carrying this label with the value "all".
REFUSE_LABEL = "test-extender/refuse"


class TestExtender:
    """A small scheduler extender over HTTP (kube's extender/v1 documents) for the tests of
    the client, the shard and the binder, and for kube-scheduler beside shardsched: filter
    refuses nodes whose names contain `reject` (message `message`; those containing
    `unresolvable` as FailedAndUnresolvable), and every node to a pod labelled REFUSE_LABEL=all, prioritize gives `favour`'s nodes 10 and others
    `base`, preempt keeps the candidates on nodes named in `preempt_keep`, bind records (and
    with `bind_store` writes) the binding. `status` answers every call with that HTTP status;
    `delay` sleeps first; `error` is put in the answers' Error. `calls` records (verb, args
    document); with `tls` (certificate and key files) it serves HTTPS."""

    __test__ = False  # not a test class for pytest

    def __init__(self, reject: str = "", favour: str = "", base: int = 0, message: str = "rejected by the test extender",
                 unresolvable: str = "", preempt_keep=(), bind_store=None, tls: tuple | None = None):
        import http.server
        import json
        import threading
        self.reject, self.favour, self.base, self.message = reject, favour, base, message
        self.unresolvable, self.preempt_keep, self.bind_store = unresolvable, tuple(preempt_keep), bind_store
        self.status, self.delay, self.error = 200, 0.0, ""
        self.calls: list[tuple[str, dict]] = []
        self.bound: list[tuple[str, str]] = []
        ext = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                verb = self.path.rstrip("/").rsplit("/", 1)[-1]
                ext.calls.append((verb, body))
                if ext.delay:
                    import time
                    time.sleep(ext.delay)
                answer = json.dumps(ext.answer(verb, body)).encode()
                self.send_response(ext.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:  # (certificate file, key file): serve HTTPS
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/scheduler"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    def answer(self, verb: str, body: dict):
        if verb == "filter":
            return self._filter(body)
        if verb == "prioritize":
            names = body.get("NodeNames") or [n["metadata"]["name"] for n in (body.get("Nodes") or {}).get("items") or ()]
            return [{"Host": n, "Score": 10 if self.favour and self.favour in n else self.base} for n in names]
        if verb == "preempt":
            got = body.get("NodeNameToMetaVictims") or {
                node: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]], "NumPDBViolations": v["NumPDBViolations"]}
                for node, v in (body.get("NodeNameToVictims") or {}).items()}
            return {"NodeNameToMetaVictims": {n: v for n, v in got.items() if n in self.preempt_keep}}
        if verb == "bind":
            self.bound.append((f"{body['PodNamespace']}/{body['PodName']}", body["Node"]))
            if self.bind_store is not None:
                self.bind_store(body)
            return {"Error": self.error}
        return {}

    def _filter(self, body: dict) -> dict:
        cache_capable = "NodeNames" in body and body["NodeNames"] is not None
        nodes = body["NodeNames"] if cache_capable else (body.get("Nodes") or {}).get("items") or []
        name = (lambda n: n) if cache_capable else (lambda n: n["metadata"]["name"])
        failed, unresolvable, kept = {}, {}, []
        refuse_all = ((body.get("Pod") or {}).get("metadata", {}).get("labels") or {}).get(REFUSE_LABEL) == "all"
        for n in nodes:
            if refuse_all:
                failed[name(n)] = self.message
            elif self.unresolvable and self.unresolvable in name(n):
                unresolvable[name(n)] = self.message
            elif self.reject and self.reject in name(n):
                failed[name(n)] = self.message
            else:
                kept.append(n)
        out = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable, "Error": self.error}
        out["NodeNames" if cache_capable else "Nodes"] = kept if cache_capable else {"items": kept}
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_cli(capsys, *argv, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `shardsched ARGV` run in this process; `stdin` fed
    through `monkeypatch` when given."""
    import io
    import sys

    from common.cli import main

    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


# --- status-only writes on the Redis store (the status hint) --------------------------------

def status_write(store, key: str, **status) -> None:
    """A kubelet-like write of pod `key`'s status fields `status`, the rest as stored."""
    obj = store.get("Pod", key)
    obj["status"].update(status)
    store.update_status(obj)


def forge_status_hint(store, redis_url: str, key: str, hint: str) -> None:
    """A stream entry for pod `key` with status hint `hint` and a document that does not
    decode: what a reader takes from the hint alone, never reading the document."""
    import redis as redis_py

    r = redis_py.Redis.from_url(redis_url)
    try:
        head = r.xrevrange(store._stream, count=1)[0][0].decode()
        r.xadd(store._stream, {"prev": head, "t": "MODIFIED", "k": "Pod", "n": key, "o": "{not json", "s": hint})
    finally:
        r.close()


def forge_pod_event(store, redis_url: str, key: str, type_: str, document: str, patch: dict | None = None) -> None:
    """A stream entry of pod `key` (`type_`, ADDED or MODIFIED) with the stored `document` as
    it is (one that looks like a pod's JSON but does not decode, say) and the pending
    `patch`: what a reader that takes such events undecoded reads only if it ever needs the
    document. BINDING_PATCH is the patch of a binding to n1."""
    import redis as redis_py

    r = redis_py.Redis.from_url(redis_url)
    try:
        head = r.xrevrange(store._stream, count=1)[0][0].decode()
        fields = {"prev": head, "t": type_, "k": "Pod", "n": key, "o": document}
        if patch is not None:
            fields["p"] = json.dumps(patch, separators=(",", ":"))  # compact, as the scripts write it
        r.xadd(store._stream, fields)
    finally:
        r.close()


#: what the store's binding script writes as the pending patch of a pod it binds to n1
BINDING_PATCH = {"node": "n1", "phase": "Running", "nominated": "",
                 "cond": {"status": "True", "time": "2026-01-01T00:00:00Z"}}


def after_status_write(store, key: str, then: str, terminal: str = "Failed") -> None:
    """What may follow a status-only write of pod `key`: "finished" (phase `terminal`),
    "deleted", or "relabelled" (a label change written with a status change: no hint)."""
    if then == "finished":
        status_write(store, key, phase=terminal)
    elif then == "deleted":
        store.delete("Pod", key)
    else:
        obj = store.get("Pod", key)
        obj["metadata"]["labels"]["app"] = "db"
        obj["status"]["podIP"] = "10.0.0.8"
        store.update_status(obj)
