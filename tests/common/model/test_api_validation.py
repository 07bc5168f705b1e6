"""The API server's validation of what it refuses (common/model/validation.py), as admission
runs it for `create -f` and `simulate`: each case is an object kube-apiserver answers 422 that
was accepted before, refused naming the object and the field."""
from __future__ import annotations

import pytest

from common.model.admission import admit
from builders import namespace, node, pod, service


def refused(doc) -> tuple[str, str]:
    accepted, errors = admit([doc], {})
    assert not accepted, f"accepted: {doc}"
    return errors[0].obj, errors[0].field


def container(name="c", image="pause", **kw) -> dict:
    return {"name": name, "image": image, **kw}


CASES = [
    ("duplicate taint key and effect", node("n1", taints=["a=x:NoSchedule", "a=y:NoSchedule"]),
     "Node n1", "spec.taints[1]"),
    ("taint key not a qualified name", node("n1", taints=["a b:NoSchedule"]), "Node n1", "spec.taints[0].key"),
    ("taint value not a label value", node("n1", taints=["a=x y:NoSchedule"]), "Node n1", "spec.taints[0].value"),
    ("node name not a DNS subdomain", node("N_1"), "Node N_1", "metadata.name"),
    ("label key not a qualified name", node("n1", labels={"a b": "x"}), "Node n1", "metadata.labels.a b"),
    ("label value not a label value", node("n1", labels={"zone": "x y"}), "Node n1", "metadata.labels.zone"),
    ("label key prefix not a DNS subdomain", node("n1", labels={"Ex_ample.com/a": "x"}), "Node n1",
     "metadata.labels.Ex_ample.com/a"),
    ("pod name not a DNS subdomain", pod("Web_1"), "Pod default/Web_1", "metadata.name"),
    ("namespace not a DNS label", pod("web", ns="a.b"), "Pod a.b/web", "metadata.namespace"),
    ("pod label value too long", pod("web", labels={"app": "x" * 64}), "Pod default/web", "metadata.labels.app"),
    ("duplicate container names", pod("web", spec={"containers": [container("c"), container("c")]}),
     "Pod default/web", "spec.containers[1].name"),
    ("init container named as a container", pod("web", spec={"initContainers": [container("c0")]}),
     "Pod default/web", "spec.initContainers[0].name"),
    ("container without a name", pod("web", spec={"containers": [{"image": "pause"}]}),
     "Pod default/web", "spec.containers[0].name"),
    ("container without an image", pod("web", spec={"containers": [{"name": "c"}]}),
     "Pod default/web", "spec.containers[0].image"),
    ("request above its limit", pod("web", spec={"containers": [container(
        resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})]}),
     "Pod default/web", "spec.containers[0].resources.requests"),
    ("extended request without a limit", pod("web", spec={"containers": [container(
        resources={"requests": {"example.com/gpu": "1"}})]}),
     "Pod default/web", "spec.containers[0].resources.limits"),
    ("extended request other than its limit", pod("web", spec={"containers": [container(
        resources={"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}})]}),
     "Pod default/web", "spec.containers[0].resources.requests"),
    ("two containers on one host port", pod("web", spec={"containers": [
        container("a", ports=[{"containerPort": 80, "hostPort": 8080}]),
        container("b", ports=[{"containerPort": 81, "hostPort": 8080}])]}),
     "Pod default/web", "spec.containers[1].ports[0].hostPort"),
    ("container port 0", pod("web", spec={"containers": [container(ports=[{"containerPort": 0}])]}),
     "Pod default/web", "spec.containers[0].ports[0].containerPort"),
    ("unknown port protocol", pod("web", spec={"containers": [container(
        ports=[{"containerPort": 80, "protocol": "FOO"}])]}),
     "Pod default/web", "spec.containers[0].ports[0].protocol"),
    ("two spread constraints on one key and action", pod("web", spread=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]),
     "Pod default/web", "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"),
    ("duplicate scheduling gates", pod("web", spec={"schedulingGates": [{"name": "a"}, {"name": "a"}]}),
     "Pod default/web", "spec.schedulingGates[1]"),
    ("tolerationSeconds without NoExecute", pod("web", tolerations=[
        {"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
     "Pod default/web", "spec.tolerations[0].effect"),
    ("nodeSelector value not a label value", pod("web", node_selector={"zone": "x y"}),
     "Pod default/web", "spec.nodeSelector.zone"),
    ("resource without a domain that is not a standard one", pod("web", extra={"foo": "1"}),
     "Pod default/web", "spec.containers[0].resources.requests.foo"),
    ("fractional extended resource", pod("web", extra={"example.com/gpu": "500m"}),
     "Pod default/web", "spec.containers[0].resources.requests.example.com/gpu"),
    ("two volumes of one name", pod("web", volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
     "Pod default/web", "spec.volumes[1].name"),
    ("claim volume without a claim name", pod("web", volumes=[{"name": "v", "persistentVolumeClaim": {}}]),
     "Pod default/web", "spec.volumes[0].persistentVolumeClaim.claimName"),
    ("unknown restartPolicy", pod("web", spec={"restartPolicy": "Sometimes"}), "Pod default/web", "spec.restartPolicy"),
    ("spread topologyKey not a label key", pod("web", spread=[
        {"maxSkew": 1, "topologyKey": "zone name", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]),
     "Pod default/web", "spec.topologySpreadConstraints[0].topologyKey"),
    ("namespace name not a DNS label", namespace("a.b"), "Namespace a.b", "metadata.name"),
    ("service name not a DNS-1035 label", service("1web", {"app": "web"}), "Service default/1web", "metadata.name"),
    ("service selector value not a label value", service("web", {"app": "x y"}), "Service default/web",
     "spec.selector.app"),
]


@pytest.mark.parametrize("case,doc,obj,field", CASES, ids=[c[0] for c in CASES])
def test_what_the_api_server_refuses_is_refused_naming_object_and_field(case, doc, obj, field):
    assert refused(doc) == (obj, field)


def test_what_the_api_server_accepts_stays_accepted():
    docs = [node("n1", labels={"example.com/tier": "a-1.b_2", "empty": ""},
                 taints=["a=x:NoSchedule", "a=x:NoExecute", "b:PreferNoSchedule"]),
            pod("web-1", "1", labels={"app": "web"}, ports=[8080], spread=[
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}],
                spec={"initContainers": [container("init", ports=[{"containerPort": 80, "hostPort": 8080}])]}),
            pod("gpu", spec={"containers": [container(resources={
                "requests": {"example.com/gpu": "1", "cpu": "1"}, "limits": {"example.com/gpu": "1", "cpu": "2"}})]}),
            pod("udp", ports=[(53, "UDP"), (53, "TCP")]),
            pod("tolerant", tolerations=[{"key": "a", "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": 5}])]
    accepted, errors = admit(docs, {})
    assert errors == [] and len(accepted) == len(docs)
