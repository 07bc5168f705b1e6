"""The object model: effective requests, error reporting, priority, what a pod's parse holds
(node terms, pod affinity, spread), nodes, PDBs. (Selectors themselves:
tests/common/model/test_selectors.py.)"""
from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings, strategies as st

from common.errors import ObjectError
from common.model.objects import (Node, Pod, PodDisruptionBudget, PriorityClass, parse_node, parse_object,
                                  parse_pdb, parse_pod, parse_priority_class, resolve_priority)
from common.model.resources import CPU, MEMORY, PODS, RESOURCES, ZERO, resource_index, vector_to_map
from common.model.selectors import Field, Taint, parse_taint
from builders import bare_node as node
from builders import bare_pod as pod
from builders import priority_class

WIDGET = "example.com/objects-widget"
F = Field("Pod default/test")


def pclass(name, value, global_default=False, policy=None) -> PriorityClass:
    return parse_priority_class(priority_class(name, value, global_default, policy))


# --- a) effective request vector ----------------------------------------------------------------

REQ_RESOURCES = ("cpu", "memory", "ephemeral-storage", WIDGET)


def render(resource: str, amount: int, style: int):
    """Write an integer amount (millicores for cpu) in one of the forms users write."""
    if resource == "cpu":
        if style == 0 or amount % 1000:
            return f"{amount}m"
        return str(amount // 1000) if style == 1 else amount // 1000
    if resource in ("memory", "ephemeral-storage") and amount % 1024 == 0 and style == 0:
        return f"{amount // 1024}Ki"
    return str(amount) if style == 1 else amount


@st.composite
def resource_list(draw):
    names = draw(st.lists(st.sampled_from(REQ_RESOURCES), unique=True, max_size=4))
    amounts = {}
    for n in names:
        if n == WIDGET:
            amounts[n] = draw(st.integers(min_value=0, max_value=8))
        elif n == "cpu":
            amounts[n] = draw(st.integers(min_value=0, max_value=16000))
        else:
            amounts[n] = draw(st.sampled_from([0, 1, 1024, 3 << 20, 1 << 30])) * draw(
                st.integers(min_value=0, max_value=5))
    return amounts


@st.composite
def container(draw, init=False):
    """(container dict, requests, limits, is_sidecar) with integer amounts in resource units."""
    requests = draw(resource_list())
    limits = draw(resource_list())
    for n, v in requests.items():  # valid pods have request <= limit
        if n in limits:
            limits[n] = max(limits[n], v)
    c = {"name": "c", "image": "busybox"}
    res = {}
    if requests or draw(st.booleans()):
        res["requests"] = {n: render(n, v, draw(st.integers(0, 2))) for n, v in requests.items()}
    if limits or draw(st.booleans()):
        res["limits"] = {n: render(n, v, draw(st.integers(0, 2))) for n, v in limits.items()}
    if res or draw(st.booleans()):
        c["resources"] = res
    sidecar = init and draw(st.booleans())
    if sidecar:
        c["restartPolicy"] = "Always"
    return c, requests, limits, sidecar


def reference_requests(containers, inits, overhead) -> dict[str, int]:
    """Kubernetes' PodRequests, spelled out resource by resource."""
    def request_of(requests, limits, name):
        if name in requests:
            return requests[name]
        return limits.get(name, 0)  # API defaulting: a limit alone is also the request

    result = {}
    for name in REQ_RESOURCES:
        regular = sum(request_of(r, l, name) for _, r, l, _ in containers)
        running_sidecars = 0
        init_peak = 0
        for _, r, l, sidecar in inits:
            amount = request_of(r, l, name)
            if sidecar:
                regular += amount           # a sidecar keeps running next to the app containers
                running_sidecars += amount
                peak = running_sidecars
            else:
                peak = amount + running_sidecars  # runs while earlier sidecars are up
            init_peak = max(init_peak, peak)
        total = max(regular, init_peak) + overhead.get(name, 0)
        if total:
            result[name] = total
    result["pods"] = 1
    return result


@settings(max_examples=300, deadline=None)
@given(st.lists(container(), min_size=1, max_size=4),
       st.lists(container(init=True), max_size=4),
       resource_list())
def test_effective_requests_match_kubernetes_rules(containers, inits, overhead):
    resource_index(WIDGET)
    spec = {"containers": [c for c, *_ in containers]}
    if inits:
        spec["initContainers"] = [c for c, *_ in inits]
    if overhead:
        spec["overhead"] = {n: render(n, v, 0) for n, v in overhead.items()}
    p = parse_pod(pod(spec=spec))
    assert p.requests[PODS] == 1
    assert vector_to_map(p.requests) == reference_requests(containers, inits, overhead)


def test_effective_requests_worked_example():
    spec = {
        "initContainers": [
            {"name": "setup", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}},
            {"name": "migrate", "resources": {"requests": {"cpu": "1800m"}}},
        ],
        "containers": [
            {"name": "app", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "512Mi"}}},
            {"name": "log", "resources": {"limits": {"cpu": "100m", WIDGET: "1"}}},
        ],
        "overhead": {"cpu": "10m", "memory": "1Mi"},
    }
    p = parse_pod(pod(spec=spec))
    # containers: cpu 1000+100, mem 512Mi; + sidecar: cpu 1600, mem 640Mi
    # init peaks: setup cpu 2000 mem 1Gi; migrate 1800+500 = 2300 cpu
    assert vector_to_map(p.requests) == {
        "cpu": 2300 + 10, "memory": (1 << 30) + (1 << 20), "pods": 1, WIDGET: 1}


def test_pod_without_resources_requests_one_pod_slot():
    p = parse_pod(pod())
    assert vector_to_map(p.requests) == {"pods": 1}
    assert p.requests[CPU] == 0 and p.requests[MEMORY] == 0


def test_zero_extended_request_takes_no_slot():
    name = "example.com/objects-never-requested"
    before = RESOURCES.names()
    p = parse_pod(pod(spec={"containers": [{"name": "c", "resources": {"requests": {name: "0"}}}]}))
    assert name not in RESOURCES.names() or name in before
    assert vector_to_map(p.requests) == {"pods": 1}


INT64_MAX = (1 << 63) - 1
#: 4.6 exabytes: two of them are past the largest amount a resource vector holds
HALF = "4611686018427387904"


def requests(**amounts) -> dict:
    return {"resources": {"requests": dict(amounts)}}


@pytest.mark.parametrize("spec,field,resource", [
    ({"containers": [dict(name="a", **requests(memory=HALF)), dict(name="b", **requests(memory=HALF))]},
     "spec.containers[1].resources.requests.memory", "memory"),
    ({"containers": [dict(name="a", **requests(memory=HALF))],
      "initContainers": [dict(name="s", restartPolicy="Always", **requests(memory=HALF))]},
     "spec.initContainers[0].resources.requests.memory", "memory"),
    ({"containers": [dict(name="a", resources={"limits": {"cpu": "4611686018427388"}}),
                     dict(name="b", **requests(cpu="4611686018427388"))]},
     "spec.containers[1].resources.requests.cpu", "cpu"),
    ({"containers": [dict(name="a", **requests(**{WIDGET: HALF}))], "overhead": {WIDGET: HALF}},
     f"spec.overhead.{WIDGET}", WIDGET),
])
def test_requests_summing_past_int64_are_refused_naming_the_field(spec, field, resource):
    """Each quantity is capped at 2^63-1 as Kubernetes caps it, but a pod's sum of them must
    fit the int64 columns every process keeps (they raised OverflowError in every cycle)."""
    with pytest.raises(ObjectError) as e:
        parse_pod(pod(spec=spec))
    assert (e.value.obj, e.value.field) == ("Pod default/web", field)
    unit = "m" if resource == "cpu" else ""
    assert e.value.message == (f"the pod's total {resource} request would be more than "
                               f"{INT64_MAX}{unit}, the most a resource amount can be")


def test_requests_summing_to_exactly_int64_max_are_accepted():
    rest = str(INT64_MAX - int(HALF))
    p = parse_pod(pod(spec={"containers": [dict(name="a", **requests(memory=HALF)),
                                           dict(name="b", **requests(memory=rest))]}))
    assert p.requests[MEMORY] == INT64_MAX
    # an init container's peak is a max, not a sum: two big ones one after the other fit
    p = parse_pod(pod(spec={"containers": [dict(name="a", **requests(memory=HALF))],
                            "initContainers": [dict(name="i", **requests(memory=str(INT64_MAX)))]}))
    assert p.requests[MEMORY] == INT64_MAX


# --- b) bad input names object and field --------------------------------------------------------

def _with(d, path, value):
    d = copy.deepcopy(d)
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    if value is _DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return d


_DELETE = object()
REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"


def _node_affinity(expr):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}}


def _spread(**kw):
    c = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}
    c.update(kw)
    return {"topologySpreadConstraints": [c]}


BAD = [
    ("cpu four", pod(spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": "four"}}}]}),
     "Pod default/web", "spec.containers[0].resources.requests.cpu"),
    ("negative memory limit", pod(spec={"containers": [
        {"name": "a"}, {"name": "b", "resources": {"limits": {"memory": "-1Gi"}}}]}),
     "Pod default/web", "spec.containers[1].resources.limits.memory"),
    ("bad init request", pod(spec={"initContainers": [{"name": "i", "resources": {"requests": {"memory": "1K"}}}]}),
     "Pod default/web", "spec.initContainers[0].resources.requests.memory"),
    ("negative overhead", pod(spec={"overhead": {"cpu": "-10m"}}), "Pod default/web", "spec.overhead.cpu"),
    ("resources not a map", pod(spec={"containers": [{"name": "c", "resources": {"requests": ["cpu"]}}]}),
     "Pod default/web", "spec.containers[0].resources.requests"),
    ("containers not a list", pod(spec={"containers": {"name": "c"}}), "Pod default/web", "spec.containers"),
    ("no containers", pod(spec={"containers": []}), "Pod default/web", "spec.containers"),
    ("container not a map", pod(spec={"containers": ["nginx"]}), "Pod default/web", "spec.containers[0]"),
    ("missing spec", _with(pod(), ["spec"], _DELETE), "Pod default/web", "spec"),
    ("missing name", _with(pod(), ["metadata", "name"], _DELETE), "Pod default/<unnamed>", "metadata.name"),
    ("missing metadata", _with(pod(), ["metadata"], _DELETE), "Pod default/<unnamed>", "metadata"),
    ("label not a string", pod(labels={"tier": 3}), "Pod default/web", "metadata.labels.tier"),
    ("other namespace", pod(namespace="team-a", spec={"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1.2.3"}}}]}),
     "Pod team-a/web", "spec.containers[0].resources.requests.cpu"),
    ("toleration Exists with value", pod(spec={"tolerations": [
        {"key": "k", "operator": "Exists", "value": "v"}]}), "Pod default/web", "spec.tolerations[0].value"),
    ("toleration empty key with Equal", pod(spec={"tolerations": [{"operator": "Exists"}, {"operator": "Equal", "value": "v"}]}),
     "Pod default/web", "spec.tolerations[1].operator"),
    ("toleration bad operator", pod(spec={"tolerations": [{"key": "k", "operator": "In"}]}),
     "Pod default/web", "spec.tolerations[0].operator"),
    ("toleration bad effect", pod(spec={"tolerations": [{"key": "k", "effect": "NoRun"}]}),
     "Pod default/web", "spec.tolerations[0].effect"),
    ("node affinity operator Foo", pod(spec=_node_affinity({"key": "zone", "operator": "Foo", "values": ["a"]})),
     "Pod default/web", REQ + ".matchExpressions[0].operator"),
    ("Gt non-integer", pod(spec=_node_affinity({"key": "cores", "operator": "Gt", "values": ["many"]})),
     "Pod default/web", REQ + ".matchExpressions[0].values[0]"),
    ("Lt two values", pod(spec=_node_affinity({"key": "cores", "operator": "Lt", "values": ["1", "2"]})),
     "Pod default/web", REQ + ".matchExpressions[0].values"),
    ("In without values", pod(spec=_node_affinity({"key": "zone", "operator": "In"})),
     "Pod default/web", REQ + ".matchExpressions[0].values"),
    ("Exists with values", pod(spec=_node_affinity({"key": "zone", "operator": "Exists", "values": ["a"]})),
     "Pod default/web", REQ + ".matchExpressions[0].values"),
    ("matchFields on labels", pod(spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}]}}}}),
     "Pod default/web", REQ + ".matchFields[0].key"),
    ("no node selector terms", pod(spec={"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
     "Pod default/web",
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"),
    ("preferred weight 0", pod(spec={"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}}),
     "Pod default/web", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
    ("pod affinity without topologyKey", pod(spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}}),
     "Pod default/web", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
    ("anti-affinity weight 101", pod(spec={"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}]}}}),
     "Pod default/web", "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
    ("label selector bad operator", pod(spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {
            "matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}}]}}}),
     "Pod default/web",
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator"),
    ("spread whenUnsatisfiable invalid", pod(spec=_spread(whenUnsatisfiable="Sometimes")),
     "Pod default/web", "spec.topologySpreadConstraints[0].whenUnsatisfiable"),
    ("spread maxSkew 0", pod(spec=_spread(maxSkew=0)), "Pod default/web", "spec.topologySpreadConstraints[0].maxSkew"),
    ("spread maxSkew missing", pod(spec=_spread(maxSkew=None)), "Pod default/web",
     "spec.topologySpreadConstraints[0].maxSkew"),
    ("spread minDomains with ScheduleAnyway", pod(spec=_spread(whenUnsatisfiable="ScheduleAnyway", minDomains=3)),
     "Pod default/web", "spec.topologySpreadConstraints[0].minDomains"),
    ("spread policy", pod(spec=_spread(nodeTaintsPolicy="Always")), "Pod default/web",
     "spec.topologySpreadConstraints[0].nodeTaintsPolicy"),
    ("hostPort too big", pod(spec={"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 70000}]}]}),
     "Pod default/web", "spec.containers[0].ports[0].hostPort"),
    ("hostPort protocol", pod(spec={"containers": [{"name": "c", "ports": [{"hostPort": 80, "protocol": "HTTP"}]}]}),
     "Pod default/web", "spec.containers[0].ports[0].protocol"),
    ("preemptionPolicy", pod(spec={"preemptionPolicy": "Always"}), "Pod default/web", "spec.preemptionPolicy"),
    ("priority not int", pod(spec={"priority": "high"}), "Pod default/web", "spec.priority"),
    ("bad timestamp", pod(creationTimestamp="yesterday"), "Pod default/web", "metadata.creationTimestamp"),
    ("taint without effect", node(spec={"taints": [{"key": "dedicated", "value": "gpu"}]}),
     "Node n1", "spec.taints[0].effect"),
    ("taint bad effect", node(spec={"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "Never"}]}),
     "Node n1", "spec.taints[1].effect"),
    ("taint without key", node(spec={"taints": [{"effect": "NoSchedule"}]}), "Node n1", "spec.taints[0].key"),
    ("bad allocatable", node(status={"allocatable": {"cpu": "lots"}}), "Node n1", "status.allocatable.cpu"),
    ("bad capacity", node(status={"capacity": {"memory": "-1"}}), "Node n1", "status.capacity.memory"),
    ("image size negative", node(status={"images": [{"names": ["a"], "sizeBytes": -1}]}),
     "Node n1", "status.images[0].sizeBytes"),
    ("unknown kind", {"kind": "Deployment", "metadata": {"name": "web"}}, "Deployment web", "kind"),
    ("no kind", {"metadata": {"name": "web"}}, "<no kind> web", "kind"),
    ("pdb minAvailable junk", {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                               "spec": {"minAvailable": "half"}},
     "PodDisruptionBudget default/pdb", "spec.minAvailable"),
    ("pdb both set", {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "ns"},
                      "spec": {"minAvailable": 1, "maxUnavailable": "10%"}},
     "PodDisruptionBudget ns/pdb", "spec"),
    ("priority class too high", {"kind": "PriorityClass", "metadata": {"name": "vip"}, "value": 2000000000},
     "PriorityClass vip", "value"),
    ("priority class without value", {"kind": "PriorityClass", "metadata": {"name": "vip"}},
     "PriorityClass vip", "value"),
    ("priority class policy", {"kind": "PriorityClass", "metadata": {"name": "vip"}, "value": 1,
                               "preemptionPolicy": "Sometimes"},
     "PriorityClass vip", "preemptionPolicy"),
]


@pytest.mark.parametrize("case,obj,name,field", BAD, ids=[c[0] for c in BAD])
def test_bad_input_names_object_and_field(case, obj, name, field):
    with pytest.raises(ObjectError) as info:
        parse_object(obj)
    err = info.value
    assert (err.obj, err.field) == (name, field), str(err)
    assert isinstance(err, ValueError)
    assert err.as_dict() == {"object": name, "field": field, "message": err.message}
    assert str(err).startswith(f"{name}: {field}: ")


def test_not_a_mapping():
    with pytest.raises(ObjectError) as info:
        parse_object(["kind", "Pod"])
    assert info.value.obj == "<object>"


def test_good_objects_parse_to_their_classes():
    assert isinstance(parse_object(pod()), Pod)
    assert isinstance(parse_object(node()), Node)
    assert isinstance(parse_object({"kind": "PodDisruptionBudget", "metadata": {"name": "p"},
                                    "spec": {"minAvailable": 1}}), PodDisruptionBudget)
    assert isinstance(parse_object({"kind": "PriorityClass", "metadata": {"name": "p"}, "value": 5}),
                      PriorityClass)


def test_pod_fields():
    d = pod(labels={"app": "web"}, uid="u1", resourceVersion=7, creationTimestamp="2024-01-01T00:00:00Z",
            ownerReferences=[{"kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}],
            spec={"nodeName": "n1", "tolerations": [{"operator": "Exists"}],
                  "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 8080}]}]})
    p = parse_pod(d)
    assert (p.key, p.namespace, p.name, p.uid) == ("default/web", "default", "web", "u1")
    assert p.bound and p.node_name == "n1"
    assert p.controller().name == "web-1"
    assert p.host_ports == (("0.0.0.0", "TCP", 8080),)
    assert p.images == ("nginx",)
    assert p.resource_version == "7"
    assert p.creation_time == 1704067200.0
    assert p.phase == "Pending" and p.scheduler_name == "default-scheduler"
    assert p.raw is d


# --- c) priority resolution ---------------------------------------------------------------------

CLASSES = {c.name: c for c in (pclass("high", 1000, policy="Never"), pclass("low", 10))}
CLASSES_WITH_DEFAULT = {**CLASSES, "std": pclass("std", 100, global_default=True)}


@pytest.mark.parametrize("spec,classes,priority", [
    ({"priority": 5, "priorityClassName": "high"}, CLASSES, 5),       # spec.priority wins
    ({"priority": 5, "priorityClassName": "nope"}, CLASSES, 5),
    ({"priority": -3}, CLASSES_WITH_DEFAULT, -3),
    ({"priorityClassName": "high"}, CLASSES, 1000),
    ({"priorityClassName": "low"}, CLASSES_WITH_DEFAULT, 10),         # named class beats default
    ({}, CLASSES_WITH_DEFAULT, 100),                                  # global default
    ({}, CLASSES, 0),
    ({}, {}, 0),
    ({}, None, 0),
    ({"priorityClassName": "system-cluster-critical"}, {}, 2000000000),
    ({"priorityClassName": "system-node-critical"}, CLASSES, 2000001000),
    ({"priorityClassName": "system-cluster-critical"}, None, 2000000000),
    ({"priorityClassName": "whatever"}, None, 0),                      # no classes known: lenient
])
def test_priority_resolution(spec, classes, priority):
    assert parse_pod(pod(spec=spec), classes).priority == priority


def test_priority_class_overrides_system_value_when_present():
    classes = {"system-cluster-critical": pclass("system-cluster-critical", 2000000000)}
    assert parse_pod(pod(spec={"priorityClassName": "system-cluster-critical"}), classes).priority == 2000000000


def test_unknown_priority_class_is_an_error():
    with pytest.raises(ObjectError) as info:
        parse_pod(pod(spec={"priorityClassName": "nope"}), CLASSES)
    assert (info.value.obj, info.value.field) == ("Pod default/web", "spec.priorityClassName")
    with pytest.raises(ObjectError) as info:
        parse_object(pod(namespace="ns", spec={"priorityClassName": "nope"}), {})
    assert (info.value.obj, info.value.field) == ("Pod ns/web", "spec.priorityClassName")


def test_preemption_policy_from_class_unless_set_on_pod():
    assert parse_pod(pod(spec={"priorityClassName": "high"}), CLASSES).preemption_policy == "Never"
    assert parse_pod(pod(spec={"priorityClassName": "high", "preemptionPolicy": "PreemptLowerPriority"}),
                     CLASSES).preemption_policy == "PreemptLowerPriority"
    assert parse_pod(pod(), CLASSES_WITH_DEFAULT).preemption_policy == "PreemptLowerPriority"


def test_resolve_priority_later():
    """Store validation parses without classes; the scheduler resolves once it knows them."""
    p = parse_pod(pod(spec={"priorityClassName": "high"}))
    p.priority = None
    resolve_priority(p, CLASSES)
    assert p.priority == 1000
    q = parse_pod(pod(spec={"priorityClassName": "gone"}))
    q.priority = None
    with pytest.raises(ObjectError) as info:
        resolve_priority(q, CLASSES)
    assert (info.value.obj, info.value.field) == ("Pod default/web", "spec.priorityClassName")


# --- d) what a pod's parse holds: node terms, pod affinity, spread ---------------------------

def test_required_node_terms_are_parsed_on_the_pod():
    p = parse_pod(pod(spec=_node_affinity({"key": "zone", "operator": "NotIn", "values": ["a"]})))
    assert len(p.required_node_terms) == 1
    assert p.required_node_terms[0].matches({"zone": "b"}, "n1")
    assert parse_pod(pod()).required_node_terms is None


def affinity_pod(term, namespace="default", name="web"):
    return parse_pod(pod(name=name, namespace=namespace, spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}))


def other(namespace, labels):
    return parse_pod(pod(name="other", namespace=namespace, labels=labels))


def test_pod_affinity_term_namespaces():
    base = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}
    own = affinity_pod(base, namespace="shop").affinity[0][0]
    assert own.namespaces == frozenset(["shop"])
    assert own.topology_key == "zone"
    assert own.matches(other("shop", {"app": "db"}))
    assert not own.matches(other("default", {"app": "db"}))
    assert not own.matches(other("shop", {"app": "web"}))

    listed = affinity_pod({**base, "namespaces": ["a", "b"]}, namespace="shop").affinity[0][0]
    assert listed.namespaces == frozenset(["a", "b"])
    assert listed.matches(other("b", {"app": "db"})) and not listed.matches(other("shop", {"app": "db"}))

    everywhere = affinity_pod({**base, "namespaceSelector": {}}, namespace="shop").affinity[0][0]
    assert everywhere.namespaces is None
    for ns in ("shop", "default", "kube-system"):
        assert everywhere.matches(other(ns, {"app": "db"}))
    assert not everywhere.matches(other("shop", {"app": "web"}))

    by_label = affinity_pod({**base, "namespaces": ["a"], "namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "b"}}}, namespace="shop").affinity[0][0]
    assert by_label.matches(other("a", {"app": "db"}))
    assert by_label.matches(other("b", {"app": "db"}))
    assert not by_label.matches(other("shop", {"app": "db"}))

    no_selector = affinity_pod({"topologyKey": "zone"}).affinity[0][0]
    assert not no_selector.matches(other("default", {"app": "db"}))
    assert not no_selector.matches(other("default", {}))


def test_anti_affinity_and_cross_node_flag():
    p = parse_pod(pod(spec={"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"topologyKey": "host", "labelSelector": {}}}]}}}))
    assert p.anti_affinity[0] == ()
    weight, t = p.anti_affinity[1][0]
    assert weight == 50 and t.namespaces == frozenset(["default"])
    assert not p.has_cross_node_constraints()
    assert affinity_pod({"topologyKey": "zone"}).has_cross_node_constraints()


def test_spread_constraint_match_label_keys():
    p = parse_pod(pod(labels={"app": "web", "rev": "7"}, spec=_spread(matchLabelKeys=["rev", "missing"])))
    c = p.spread_constraints[0]
    assert c.hard and c.max_skew == 1 and c.min_domains == 1
    assert c.honor_affinity and not c.honor_taints
    assert c.selector.matches({"app": "web", "rev": "7"})
    assert not c.selector.matches({"app": "web", "rev": "6"})
    assert p.has_cross_node_constraints()


def test_pods_sharing_a_spec_share_its_parse_but_not_what_differs():
    """Pods with one spec reuse one parse of it (the values are the same objects), yet each
    keeps its own node, its namespace's affinity default, its labels' matchLabelKeys
    selector, and a bad spec is reported with its own pod's name every time."""
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}]}},
        "tolerations": [{"operator": "Exists"}]}
    a, b = parse_pod(pod("a", spec=spec)), parse_pod(pod("b", spec={**spec, "nodeName": "n7"}))
    assert a.tolerations is b.tolerations and a.requests is b.requests
    assert (a.node_name, b.node_name) == ("", "n7")
    elsewhere = parse_pod(pod("c", namespace="shop", spec=spec))
    assert a.affinity[0][0].namespaces == frozenset(["default"])
    assert elsewhere.affinity[0][0].namespaces == frozenset(["shop"])

    spread = _spread(matchLabelKeys=["rev"])
    r6 = parse_pod(pod("r6", labels={"app": "web", "rev": "6"}, spec=spread)).spread_constraints[0]
    r7 = parse_pod(pod("r7", labels={"app": "web", "rev": "7"}, spec=spread)).spread_constraints[0]
    assert r6.selector.matches({"app": "web", "rev": "6"}) and not r6.selector.matches({"app": "web", "rev": "7"})
    assert r7.selector.matches({"app": "web", "rev": "7"})

    bad = {"priority": "high"}
    for name in ("x", "y"):
        with pytest.raises(ObjectError) as e:
            parse_pod(pod(name, spec=bad))
        assert e.value.obj == f"Pod default/{name}" and e.value.field == "spec.priority"

    # YAML's .nan serialises like null: a spec with priority null, parsed first, must not
    # let a NaN priority through
    assert parse_pod(pod("null", spec={"priority": None})).priority == 0
    with pytest.raises(ObjectError) as e:
        parse_pod(pod("nan", spec={"priority": float("nan")}))
    assert e.value.field == "spec.priority"


# --- e) nodes -----------------------------------------------------------------------------------

def test_allocatable_falls_back_to_capacity():
    n = parse_node(node(status={"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}))
    assert vector_to_map(n.allocatable) == {"cpu": 4000, "memory": 8 << 30, "pods": 110}
    n = parse_node(node(status={"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                "allocatable": {"cpu": "3500m", "memory": "7Gi", "pods": 100}}))
    assert vector_to_map(n.allocatable) == {"cpu": 3500, "memory": 7 << 30, "pods": 100}
    n = parse_node(node(status={"capacity": {"cpu": "4"}, "allocatable": {}}))
    assert vector_to_map(n.allocatable) == {}  # an empty allocatable is still allocatable
    assert parse_node(node()).allocatable == ZERO


def test_zero_hugepages_take_no_slot():
    name = "hugepages-16Gi"
    before = name in RESOURCES.names()
    n = parse_node(node(status={"allocatable": {"cpu": "2", name: "0", "hugepages-objects-test": 0}}))
    if not before:
        assert name not in RESOURCES.names()
    assert "hugepages-objects-test" not in RESOURCES.names()
    assert vector_to_map(n.allocatable) == {"cpu": 2000}
    gpu = parse_node(node(status={"allocatable": {WIDGET: "2"}}))
    assert gpu.allocatable[resource_index(WIDGET)] == 2


def test_node_images_taints_and_labels():
    d = node(labels={"zone": "a"}, spec={"unschedulable": True, "taints": [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "maint", "effect": "NoExecute"}]},
        status={"images": [{"names": ["nginx:1.25", "docker.io/library/nginx:1.25"], "sizeBytes": 1000},
                           {"names": ["pause"]}]})
    n = parse_node(d)
    assert n.name == n.key == "n1" and n.labels == {"zone": "a"} and n.unschedulable
    assert n.images == {"nginx:1.25": 1000, "docker.io/library/nginx:1.25": 1000, "pause": 0}
    assert n.taints == (Taint("dedicated", "gpu", "NoSchedule"), Taint("maint", "", "NoExecute"))
    assert n.taints[0].describe() == "{dedicated: gpu}"
    assert parse_taint({"key": "a", "effect": "PreferNoSchedule"}, F).value == ""
    assert n.raw is d


# --- f) pod disruption budgets ------------------------------------------------------------------

def pdb(spec, namespace="default"):
    return parse_pdb({"kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": namespace},
                      "spec": spec, "status": {"disruptionsAllowed": 1}})


def test_pdb_min_available_int_and_percent():
    b = pdb({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}})
    assert (b.min_available.value, b.min_available.percent) == (2, False)
    assert b.max_unavailable is None and b.disruptions_allowed == 1
    assert b.min_available.resolve(10, round_up=True) == 2
    p = pdb({"minAvailable": "50%"})
    assert (p.min_available.value, p.min_available.percent) == (50, True)
    assert p.min_available.resolve(5, round_up=True) == 3
    assert p.min_available.resolve(5, round_up=False) == 2
    assert p.min_available.resolve(4, round_up=True) == 2
    m = pdb({"maxUnavailable": "25%"})
    assert m.min_available is None and m.max_unavailable.resolve(10, round_up=True) == 3
    assert pdb({"maxUnavailable": 0}).max_unavailable.value == 0


@pytest.mark.parametrize("spec,field", [
    ({"minAvailable": 1, "maxUnavailable": 1}, "spec"),
    ({"minAvailable": "50%", "maxUnavailable": "10%"}, "spec"),
    ({"minAvailable": -1}, "spec.minAvailable"),
    ({"minAvailable": "5"}, "spec.minAvailable"),
    ({"minAvailable": True}, "spec.minAvailable"),
    ({"maxUnavailable": "x%"}, "spec.maxUnavailable"),
    ({"minAvailable": 1.5}, "spec.minAvailable"),
])
def test_pdb_errors(spec, field):
    with pytest.raises(ObjectError) as info:
        pdb(spec, namespace="ns")
    assert (info.value.obj, info.value.field) == ("PodDisruptionBudget ns/pdb", field)


def test_pdb_matches_only_its_namespace():
    b = pdb({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}, namespace="shop")
    assert b.matches(other("shop", {"app": "web"}))
    assert not b.matches(other("default", {"app": "web"}))
    assert not b.matches(other("shop", {"app": "db"}))
    assert not pdb({"minAvailable": 1}).matches(other("default", {"app": "web"}))  # no selector
    assert pdb({"minAvailable": 1, "selector": {}}).matches(other("default", {"app": "web"}))
