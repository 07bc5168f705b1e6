"""kube's validation vocabulary: field errors printed as field.Error prints them, Go durations,
qualified names, and typed decoding of kube-shaped documents."""
from __future__ import annotations

import pytest

from common.validation import (Int, Obj, Str, Verbatim, decode_object, duplicate, forbidden,
                                      format_duration, invalid, not_supported, parse_duration,
                                      qualified_name_errors, required)


def test_field_errors_read_as_kubes():
    assert str(invalid("a.b", 101, "not in valid range [0, 100]")) == "a.b: Invalid value: 101: not in valid range [0, 100]"
    assert str(invalid("a", True, "x")) == "a: Invalid value: true: x"
    assert str(invalid("a", 1.5, "x")) == "a: Invalid value: 1.5: x"
    assert str(invalid("a", None, "x")) == 'a: Invalid value: "null": x'
    assert str(invalid("a", [1, {"k": "v"}], "x")) == 'a: Invalid value: [1,{"k":"v"}]: x'
    assert str(not_supported("t", "Mo", ["A", "B"])) == 't: Unsupported value: "Mo": supported values: "A", "B"'
    assert str(required("p")) == "p: Required value"
    assert str(required("p", "can not be empty")) == "p: Required value: can not be empty"
    assert str(duplicate("p[1]", Verbatim("p[0].name"))) == "p[1]: Duplicate value: p[0].name"
    assert str(forbidden("p", "no")) == "p: Forbidden: no"


@pytest.mark.parametrize("text, seconds", [("15s", 15), ("1m30s", 90), ("1.5h", 5400), ("500ms", 0.5),
                                           ("0", 0), ("-2s", -2), ("2us", 2e-6), ("1h0m0s", 3600)])
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "15 s", "s", "1d", "1m30"])
def test_not_go_durations(text):
    assert parse_duration(text) is None


@pytest.mark.parametrize("seconds, text", [(15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"),
                                           (0, "0s"), (1.5, "1.5s"), (-10, "-10s")])
def test_go_duration_strings(seconds, text):
    assert format_duration(seconds) == text


def test_qualified_names():
    assert qualified_name_errors("example.com/gpu") == []
    assert qualified_name_errors("cpu") == []
    assert qualified_name_errors("Example.com/gpu")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert qualified_name_errors("a/b/c")[0].startswith("a qualified name must consist of")
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 characters"]


def test_decoding_fills_defaults_and_names_the_bad_field():
    fields = {"n": Int(3), "o": Obj(s=Str("d"))}
    assert decode_object(fields, {}, "args") == {"n": 3, "o": None}
    assert decode_object(fields, {"o": {}}, "args") == {"n": 3, "o": {"s": "d"}}
    with pytest.raises(ValueError, match=r'^args\.o\.s: Invalid value: 1: must be a string$'):
        decode_object(fields, {"o": {"s": 1}}, "args")
    with pytest.raises(ValueError, match=r"^args\.x: Forbidden: unknown field \(known: n, o\)$"):
        decode_object(fields, {"x": 1}, "args")
