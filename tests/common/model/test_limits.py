"""The limits every object must meet before admission or a store accepts it
(common/model/limits.py): its size as JSON (etcd's 1.5 MiB), its nesting depth, and values JSON
can carry (string keys, 64-bit integers, finite numbers, no binary data). Each refusal names
the object and the field; `admit` keeps the valid objects beside a refused one."""
from __future__ import annotations

import math
from datetime import date

import orjson
import pytest
from hypothesis import given, strategies as st

from builders import node, pod
from common.model.admission import admit
from common.errors import ObjectError
from common.model.limits import MAX_NESTING_DEPTH, MAX_OBJECT_BYTES, check_object


class Label(str):
    """A str subclass (what a YAML loader's tagged scalar may be)."""


def refusal(obj) -> ObjectError:
    with pytest.raises(ObjectError) as e:
        check_object(obj)
    return e.value


def test_an_object_over_the_size_limit_is_refused():
    big = pod("big")
    big["metadata"]["annotations"] = {"blob": "x" * MAX_OBJECT_BYTES}
    err = refusal(big)
    assert (err.obj, err.field) == ("Pod default/big", "<root>")
    size = len(orjson.dumps(big))
    assert err.message == f"the object is {size} bytes as JSON, more than the limit of {MAX_OBJECT_BYTES}"
    just_under = pod("fits")
    just_under["metadata"]["annotations"] = {"blob": ""}
    just_under["metadata"]["annotations"]["blob"] = "x" * (MAX_OBJECT_BYTES - len(orjson.dumps(just_under)))
    assert len(orjson.dumps(just_under)) == MAX_OBJECT_BYTES
    check_object(just_under)


def test_nesting_deeper_than_the_limit_is_refused_with_its_path():
    deep = pod("deep")
    deep["spec"]["x"] = orjson.loads("[" * 200 + "]" * 200)
    err = refusal(deep)
    assert err.obj == "Pod default/deep"
    # the pod is level 1, spec 2, the list at x 3: the one MAX - 2 indices below x is one too deep
    assert err.field == "spec.x" + "[0]" * (MAX_NESTING_DEPTH - 2)
    assert err.message == f"nested more than {MAX_NESTING_DEPTH} levels deep"
    ok = pod("ok")
    ok["spec"]["x"] = orjson.loads("[" * (MAX_NESTING_DEPTH - 2) + "]" * (MAX_NESTING_DEPTH - 2))
    check_object(ok)


@pytest.mark.parametrize("where,value,field,message", [
    ("labels", {1: "a"}, "metadata.labels", "keys must be strings, got int 1"),
    ("labels", {None: "a"}, "metadata.labels", "keys must be strings, got NoneType None"),
    ("x", 2 ** 70, "spec.x", f"integer {2 ** 70} is outside the int64 range"),
    ("x", -(2 ** 63) - 1, "spec.x", f"integer {-(2 ** 63) - 1} is outside the int64 range"),
    ("x", b"hello", "spec.x", "binary data (!!binary) cannot be stored; use a base64 string"),
    ("x", [1, math.nan], "spec.x[1]", "nan is not a JSON number"),
    ("x", {"y": math.inf}, "spec.x.y", "inf is not a JSON number"),
    ("x", {1, 2}, "spec.x", "a set cannot be stored as JSON"),
    ("x", ["ok", "\ud800"], "spec.x[1]", "'\\ud800' is not valid UTF-8 (it holds a lone surrogate)"),
])
def test_values_json_cannot_hold_are_refused_naming_the_field(where, value, field, message):
    p = pod("odd")
    if where == "labels":
        p["metadata"]["labels"] = value
    else:
        p["spec"]["x"] = value
    err = refusal(p)
    assert (err.obj, err.field, err.message) == ("Pod default/odd", field, message)


def test_the_extremes_json_can_hold_are_accepted():
    p = pod("edge")
    p["spec"]["x"] = {"max": 2 ** 63 - 1, "min": -(2 ** 63), "f": 1.5e300, "none": None, "t": True}
    check_object(p)


def test_an_object_that_is_not_a_mapping_is_named_as_such():
    err = refusal(["a", "list"])
    assert (err.obj, err.field) == ("<object>", "<root>")


def test_admission_refuses_each_bad_object_and_keeps_the_rest():
    deep = pod("deep")
    deep["spec"]["x"] = orjson.loads("[" * 200 + "]" * 200)
    keyed = pod("keyed")
    keyed["metadata"]["labels"] = {1: "a"}
    huge = pod("huge")
    huge["spec"]["x"] = 2 ** 70
    accepted, errors = admit([node("n1"), deep, pod("ok-1"), keyed, huge, pod("ok-2")], {})
    assert [key for _, key, _ in accepted] == ["n1", "default/ok-1", "default/ok-2"]
    assert sorted((e.obj, e.field.split("[")[0]) for e in errors) == [
        ("Pod default/deep", "spec.x"), ("Pod default/huge", "spec.x"), ("Pod default/keyed", "metadata.labels")]


def test_mappings_nested_to_the_limit_pass_and_one_level_more_is_refused():
    def nested(levels):
        inner: dict = {"leaf": "x"}
        for _ in range(levels - 1):
            inner = {"a": inner}
        return inner
    ok = pod("ok")
    ok["spec"]["x"] = nested(MAX_NESTING_DEPTH - 2)  # pod 1, spec 2, x 3 ... the last at MAX
    check_object(ok)
    deep = pod("deep")
    deep["spec"]["x"] = nested(MAX_NESTING_DEPTH - 1)
    err = refusal(deep)
    assert err.field == "spec.x" + ".a" * (MAX_NESTING_DEPTH - 2)


@pytest.mark.parametrize("value", [
    ("a", "tuple"), Label("a subclass of str"), date(2026, 1, 2), [{"k": [1, 2.5, None, True]}],
])
def test_values_the_quick_pass_leaves_to_the_full_one_are_still_accepted(value):
    p = pod("odd")
    p["spec"]["x"] = value
    check_object(p)


_odd_leaves = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
               | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5)
               | st.binary(max_size=3) | st.dates() | st.frozensets(st.integers(), max_size=2))
_odd_documents = st.recursive(_odd_leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                              | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=4),
                              max_leaves=20)


def breaks_a_limit(value) -> bool:
    """The limits on values, said plainly (nesting and size aside)."""
    if isinstance(value, dict):
        return any(not isinstance(k, str) for k in value) or any(breaks_a_limit(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(breaks_a_limit(v) for v in value)
    if value is None or isinstance(value, (bool, str, date)):
        return False
    if isinstance(value, int):
        return not -(2 ** 63) <= value < 2 ** 63
    if isinstance(value, float):
        return not math.isfinite(value)
    return True


@given(_odd_documents)
def test_an_object_is_refused_exactly_when_a_value_in_it_breaks_a_limit(value):
    doc = pod("p")
    doc["spec"]["x"] = value
    try:
        check_object(doc)
    except ObjectError:
        assert breaks_a_limit(value)
    else:
        assert not breaks_a_limit(value)
