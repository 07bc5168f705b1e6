"""The kinds parsed lean for default spreading and namespaceSelector (common/model/workloads.py):
what the API server defaults read as its default, bad input named by object and field."""
from __future__ import annotations

import pytest

from common.errors import ObjectError
from common.model.objects import parse_object
from builders import controller, namespace, service


def test_a_namespace_carries_the_name_label_the_api_server_gives_it():
    ns = parse_object(namespace("team", {"env": "prod"}))
    assert (ns.key, ns.labels) == ("team", {"env": "prod", "kubernetes.io/metadata.name": "team"})
    assert not hasattr(ns, "raw")  # lean: no document kept


def test_a_service_without_a_selector_selects_nothing():
    assert parse_object(service("headless", None)).selects({"app": "web"}) is False
    assert parse_object(service("all", {})).selects({"app": "web"}) is True
    web = parse_object(service("web", {"app": "web"}, ns="team"))
    assert web.key == "team/web" and web.selects({"app": "web", "x": "y"}) and not web.selects({"app": "db"})


def test_controllers_selectors():
    rs = parse_object(controller("ReplicaSet", "web-1", {"app": "web"},
                                 selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}))
    assert (rs.kind, rs.key, rs.selector.expressions) == ("ReplicaSet", "default/web-1", (("app", "In", frozenset({"web"})),))
    rc = controller("ReplicationController", "old", {"app": "old"})
    del rc["spec"]["selector"]  # defaulted to the template's labels
    assert parse_object(rc).selector.match_labels == {"app": "old"}


@pytest.mark.parametrize("doc, obj, field", [
    ({**controller("StatefulSet", "db", {"app": "db"}), "spec": {"replicas": 1}}, "StatefulSet default/db", "spec.selector"),
    (service("web", {"app": 3}), "Service default/web", "spec.selector.app"),
    (namespace("team", {"env": 1}), "Namespace team", "metadata.labels.env"),
])
def test_bad_input_names_object_and_field(doc, obj, field):
    with pytest.raises(ObjectError) as e:
        parse_object(doc)
    assert (e.value.obj, e.value.field) == (obj, field)
