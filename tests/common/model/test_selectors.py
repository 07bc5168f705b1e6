"""Selectors (common/model/selectors.py): label selectors, node selector terms (Gt/Lt, matchFields),
tolerations against taints."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from common.model.selectors import (Field, Taint, parse_label_selector, parse_node_selector_term,
                                    parse_toleration, tolerated)

F = Field("Pod default/test")


def sel(d):
    return parse_label_selector(d, F)


@pytest.mark.parametrize("selector,labels,matches", [
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, {"app": "api"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, {"app": "db"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, {}, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {"app": "db"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"tier": "x"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"tier": "x"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "x"}, False),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
     {"app": "web"}, False),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
     {"app": "web", "tier": "1"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "web2"}, False),
    ({}, {"anything": "goes"}, True),
    ({}, {}, True),
])
def test_label_selector(selector, labels, matches):
    assert sel(selector).matches(labels) is matches


def test_absent_selector_is_none_and_key_is_stable():
    assert sel(None) is None
    a = sel({"matchLabels": {"a": "1", "b": "2"}})
    b = sel({"matchLabels": {"b": "2", "a": "1"}})
    assert a.key == b.key and hash(a.key) == hash(b.key)
    assert sel({}).is_empty() and not a.is_empty()


label_keys = st.sampled_from(["a", "b", "c"])
label_values = st.sampled_from(["x", "y", "z"])


@given(st.dictionaries(label_keys, label_values), label_keys,
       st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
       st.lists(label_values, min_size=1, max_size=3))
def test_label_expression_semantics(labels, key, op, values):
    expr = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = values
    expected = {
        "In": key in labels and labels[key] in values,
        "NotIn": not (key in labels and labels[key] in values),
        "Exists": key in labels,
        "DoesNotExist": key not in labels,
    }[op]
    assert sel({"matchExpressions": [expr]}).matches(labels) is expected


def term(d):
    return parse_node_selector_term(d, F)


@pytest.mark.parametrize("op,bound,label,matches", [
    ("Gt", "4", "8", True), ("Gt", "8", "8", False), ("Gt", "8", "4", False),
    ("Lt", "8", "4", True), ("Lt", "8", "8", False), ("Lt", "-1", "-2", True),
    ("Gt", "4", "many", False), ("Gt", "4", None, False), ("Lt", "4", None, False),
])
def test_node_term_gt_lt(op, bound, label, matches):
    t = term({"matchExpressions": [{"key": "cores", "operator": op, "values": [bound]}]})
    labels = {} if label is None else {"cores": label}
    assert t.matches(labels, "n1") is matches


def test_node_term_match_fields_and_empty_term():
    pin = term({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    assert pin.matches({}, "n1") and not pin.matches({}, "n2")
    assert pin.single_node_name() == "n1"
    avoid = term({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]}]})
    assert avoid.matches({}, "n3") and not avoid.matches({}, "n2")
    assert avoid.single_node_name() is None
    both = term({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                 "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
    assert both.matches({"zone": "a"}, "n1")
    assert not both.matches({"zone": "b"}, "n1") and not both.matches({"zone": "a"}, "n2")
    empty = term({})
    assert not empty.matches({}, "n1") and not empty.matches({"zone": "a"}, "n1")
    assert not term({"matchExpressions": [], "matchFields": []}).matches({"a": "b"}, "n1")


def tol(**kw):
    return parse_toleration(kw, F)


def taint(key, value, effect):
    return Taint(key, value, effect)


EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def test_tolerations():
    everything = tol(operator="Exists")
    for e in EFFECTS:
        assert everything.tolerates(taint("any", "thing", e))
        assert everything.tolerates(taint("", "", e))
    only_noexec = tol(operator="Exists", effect="NoExecute")
    assert only_noexec.tolerates(taint("k", "v", "NoExecute"))
    assert not only_noexec.tolerates(taint("k", "v", "NoSchedule"))
    key_exists = tol(key="gpu", operator="Exists")
    assert key_exists.tolerates(taint("gpu", "a100", "NoSchedule"))
    assert key_exists.tolerates(taint("gpu", "", "PreferNoSchedule"))
    assert not key_exists.tolerates(taint("tpu", "", "NoSchedule"))
    equal = tol(key="gpu", value="a100")  # operator defaults to Equal, effect empty = all
    assert equal.operator == "Equal"
    for e in EFFECTS:
        assert equal.tolerates(taint("gpu", "a100", e))
    assert not equal.tolerates(taint("gpu", "h100", "NoSchedule"))
    assert not equal.tolerates(taint("gpu", "", "NoSchedule"))
    empty_value = tol(key="dedicated", operator="Equal")
    assert empty_value.tolerates(taint("dedicated", "", "NoSchedule"))
    assert not empty_value.tolerates(taint("dedicated", "x", "NoSchedule"))
    t = taint("gpu", "h100", "NoSchedule")
    assert tolerated(t, [equal, key_exists])
    assert not tolerated(t, [equal, only_noexec])
    assert not tolerated(t, [])


@given(st.sampled_from(["", "k1", "k2"]), st.sampled_from(["Equal", "Exists"]),
       st.sampled_from(["", "v1", "v2"]), st.sampled_from([""] + EFFECTS),
       st.sampled_from(["k1", "k2"]), st.sampled_from(["", "v1", "v2"]), st.sampled_from(EFFECTS))
def test_toleration_semantics(tkey, op, tvalue, teffect, key, value, effect):
    if op == "Exists":
        tvalue = ""
    if not tkey:
        op = "Exists"
        tvalue = ""
    t = tol(key=tkey, operator=op, value=tvalue, effect=teffect)
    expected = ((not teffect or teffect == effect) and (not tkey or tkey == key)
                and (op == "Exists" or tvalue == value))
    assert t.tolerates(taint(key, value, effect)) is expected
