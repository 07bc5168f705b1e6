"""Quantity parsing and resource vectors against the Kubernetes rules.

The expected values are computed with exact fractions from the generated parts (mantissa,
decimal places, suffix), never by parsing the generated text.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from common.model.resources import (BASE_RESOURCES, CPU, EPHEMERAL, MEMORY, PODS, ZERO, ResourceTable,
                                    TooManyResources, fits, format_amount, parse_quantity, quantity_to_int,
                                    resource_index, resource_name, resource_vector, shortfalls, vadd,
                                    vector_to_map, vmax, vsub, vsum)

INT64_MAX = (1 << 63) - 1

#: suffix -> exact multiplier, per apimachinery's suffixer (decimal SI has lowercase k only).
SUFFIXES = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(1000),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "Ki": Fraction(1 << 10),
    "Mi": Fraction(1 << 20),
    "Gi": Fraction(1 << 30),
    "Ti": Fraction(1 << 40),
    "Pi": Fraction(1 << 50),
}


def capped(value: Fraction) -> Fraction:
    """Kubernetes: no quantity may be greater than 2^63-1 in magnitude; larger ones are capped."""
    return max(-Fraction(INT64_MAX), min(Fraction(INT64_MAX), value))


def expected_int(resource: str, value: Fraction) -> int:
    """Kubernetes rounds up: cpu to whole millicores, everything else to whole units.

    Integer amounts live in int64 columns, so they are capped at 2^63-1 too.
    """
    value = capped(value)
    n = math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)
    return max(-INT64_MAX, min(INT64_MAX, n))


def decimal_text(mantissa: int, places: int, style: str = "plain") -> str:
    """mantissa / 10**places written out as a decimal number ("12.5", "0.001", ".5", "5.")."""
    if places == 0:
        return f"{mantissa}." if style == "trailing-dot" else str(mantissa)
    digits = str(mantissa).rjust(places + 1, "0")
    whole, frac = digits[:-places], digits[-places:]
    if style == "no-leading-zero" and whole == "0":
        whole = ""
    return f"{whole}.{frac}"


resources = st.sampled_from(["cpu", "memory", "ephemeral-storage", "example.com/qty-widget"])


@st.composite
def decimal_numbers(draw):
    mantissa = draw(st.integers(min_value=0, max_value=10**9))
    places = draw(st.integers(min_value=0, max_value=4))
    style = draw(st.sampled_from(["plain", "trailing-dot", "no-leading-zero"]))
    sign = draw(st.sampled_from(["", "+"]))
    return sign + decimal_text(mantissa, places, style), Fraction(mantissa, 10**places)


@given(decimal_numbers(), st.sampled_from(sorted(SUFFIXES)), resources)
def test_suffixed_quantities_round_up_exactly(number, suffix, resource):
    text, value = number
    exact = value * SUFFIXES[suffix]
    q = parse_quantity(text + suffix)
    assert Fraction(q) == capped(exact)
    assert quantity_to_int(resource, q) == expected_int(resource, exact)


@given(decimal_numbers(), st.integers(min_value=-9, max_value=9), st.sampled_from(["e", "E"]),
       st.booleans(), resources)
def test_decimal_exponents(number, exponent, letter, plus_sign, resource):
    text, value = number
    exp_text = f"+{exponent}" if plus_sign and exponent >= 0 else str(exponent)
    exact = value * Fraction(10) ** exponent
    q = parse_quantity(f"{text}{letter}{exp_text}")
    assert Fraction(q) == capped(exact)
    assert quantity_to_int(resource, q) == expected_int(resource, exact)


@given(st.integers(min_value=0, max_value=10**15), resources)
def test_yaml_integers(n, resource):
    assert quantity_to_int(resource, parse_quantity(n)) == expected_int(resource, Fraction(n))
    assert parse_quantity(n) == parse_quantity(str(n))


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=6), resources)
def test_yaml_floats_parse_like_their_decimal_text(mantissa, places, resource):
    """PyYAML turns `cpu: 0.5` into a float; it must mean exactly 0.5, not 0.5000000000000000277."""
    x = float(f"{mantissa}e-{places}")
    exact = Fraction(mantissa, 10**places)
    q = parse_quantity(x)
    assert Fraction(q) == capped(exact)
    assert quantity_to_int(resource, q) == expected_int(resource, exact)


@given(decimal_numbers(), st.sampled_from(["", "m", "Ki", "M"]))
def test_negative_quantities_parse_negative(number, suffix):
    text, value = number
    text = text.lstrip("+")
    assert Fraction(parse_quantity("-" + text + suffix)) == capped(-value * SUFFIXES[suffix])


@pytest.mark.parametrize("text,resource,expected", [
    ("0.0001", "cpu", 1),          # below a millicore rounds up to one
    ("100m", "cpu", 100),
    ("1", "cpu", 1000),
    ("2.5", "cpu", 2500),
    ("1500m", "cpu", 1500),
    ("1n", "cpu", 1),
    ("1e3", "cpu", 1_000_000),
    ("1e-3", "cpu", 1),
    ("0", "cpu", 0),
    ("0.5", "memory", 1),          # half a byte rounds up to a byte
    ("100m", "memory", 1),
    ("1Ki", "memory", 1024),
    ("1.5Gi", "memory", 3 << 29),
    ("128Mi", "memory", 128 << 20),
    ("1k", "memory", 1000),
    ("1M", "memory", 10**6),
    ("2Ti", "ephemeral-storage", 2 << 40),
    ("1E", "memory", 10**18),      # a bare E is the exa suffix, not an exponent
    ("1e3", "memory", 1000),
    ("12E3", "memory", 12000),
    (" 64Mi ", "memory", 64 << 20),
    (4, "nvidia.com/gpu", 4),
    (0.25, "cpu", 250),
    (1e-05, "cpu", 1),
    (1e3, "memory", 1000),
])
def test_known_values(text, resource, expected):
    assert quantity_to_int(resource, parse_quantity(text)) == expected


@pytest.mark.parametrize("text", ["1e999999", "1e999999999999", "9Ei", 1e300, "99999999999999999999"])
def test_huge_quantities_are_capped_not_hung(text):
    """Kubernetes caps quantities at 2^63-1; amounts must fit the int64 node table."""
    for resource in ("cpu", "memory"):
        assert quantity_to_int(resource, parse_quantity(text)) == INT64_MAX
    assert quantity_to_int("memory", parse_quantity("-" + str(text))) == -INT64_MAX


@pytest.mark.parametrize("value", [
    "four", "1.2.3", "", " ", "10Qi", "1Qi", "1K", "1Ki2", "1mi", "1ki", "1ni", "1KiB", "1 k",
    "1_000", "1e3k", "1e", "1e1.5", "1.5e3m", "e3", "--1", "+-1", "1-", ".", "0x10", "Ki", "m",
    "inf", "-inf", "Infinity", "NaN", "nan", "sNaN", "\u0661\u0660", "1,5", "1/2", "1Gi Gi",
    None, True, False, [], {}, [1], float("nan"), float("inf"), float("-inf"), Decimal("1"),
])
def test_invalid_quantities_raise_value_error(value):
    with pytest.raises(ValueError):
        parse_quantity(value)


@given(st.text(alphabet="0123456789.eEkKmMGTPiu+- _", max_size=8))
def test_parse_never_raises_anything_but_value_error(text):
    try:
        q = parse_quantity(text)
    except ValueError:
        return
    assert q.is_finite()
    quantity_to_int("cpu", q)
    quantity_to_int("memory", q)


# --- resource vectors ------------------------------------------------------------------------

#: Vectors as processes hold them: the four base slots, then extended ones up to the highest
#: slot in use, so two vectors may differ in length (missing slots are zero).
vectors = st.lists(st.integers(min_value=0, max_value=10**12), min_size=4, max_size=9).map(tuple)


def padded(v, n) -> list:
    return list(v) + [0] * (n - len(v))


def canonical(v) -> tuple:
    v = list(v)
    while len(v) > len(BASE_RESOURCES) and v[-1] == 0:
        v.pop()
    return tuple(v)


def test_base_slots_are_fixed():
    assert (CPU, MEMORY, EPHEMERAL, PODS) == (0, 1, 2, 3)
    for i, name in enumerate(BASE_RESOURCES):
        assert resource_index(name) == i
        assert resource_name(i) == name
    assert ZERO == (0, 0, 0, 0)


@given(vectors, vectors)
def test_vector_arithmetic_over_different_lengths(a, b):
    n = max(len(a), len(b))
    s = vadd(a, b)
    assert s == canonical(x + y for x, y in zip(padded(a, n), padded(b, n)))
    assert vadd(b, a) == s
    assert vsub(s, b) == canonical(a)
    assert vsub(s, a) == canonical(b)
    assert vadd(a, ZERO) == canonical(a)
    assert vmax(a, b) == canonical(max(x, y) for x, y in zip(padded(a, n), padded(b, n)))


@given(st.lists(vectors, min_size=1, max_size=6))
def test_a_sum_of_vectors_is_vadd_of_each_in_turn(vs):
    one_by_one = vs[0]
    for v in vs[1:]:
        one_by_one = vadd(one_by_one, v)
    assert vsum(vs) == vsum([ZERO, *vs]) == canonical(one_by_one)


@given(vectors, vectors)
def test_fits(request, free):
    n = max(len(request), len(free))
    assert fits(request, free) == all(r <= f for r, f in zip(padded(request, n), padded(free, n)))
    assert fits(request, vadd(request, free))  # what you add on top is enough
    assert fits(ZERO, free)
    assert fits(request, request)


@given(vectors, st.integers(min_value=0, max_value=8))
def test_one_slot_short_does_not_fit(v, slot):
    bigger = padded(v, max(len(v), slot + 1))
    bigger[slot] += 1
    assert not fits(tuple(bigger), v)      # past the end of `v` too: a missing slot is zero
    assert fits(v, tuple(bigger))
    assert shortfalls(tuple(bigger), v) == [i for i, (r, f) in enumerate(
        zip(bigger, padded(v, len(bigger)))) if r > f]


def test_extended_resources_get_a_slot_while_something_holds_them():
    table = ResourceTable()
    name = "example.com/qty-stable-slot"
    v, hold = table.vector({"cpu": 250, name: 2})
    i = len(v) - 1
    assert i >= len(BASE_RESOURCES) and v == (250, 0, 0, 0, 2)
    assert table.name(i) == name and hold is not None
    w, hold2 = table.vector({name: 1, "example.com/qty-stable-slot-2": 3})
    assert w[i] == 1 and len(w) == i + 2           # the first keeps its slot, the second comes after
    assert table.vector({"cpu": 1, "memory": 2})[1] is None  # base resources need no hold
    assert table.vector({name: 0})[0] == ZERO       # a zero extended amount takes no slot
    assert table.in_use() == 2


def test_the_table_grows_past_sixteen_slots_and_reclaims_what_nothing_holds():
    """30 distinct extended resources fit (the table held 12, for good); slots whose every
    holder is gone go to the next new names, lowest first, so vectors stay short."""
    table = ResourceTable(max_extended=40)
    held = {f"example.com/r{i}": table.vector({f"example.com/r{i}": 1}) for i in range(30)}
    assert sorted(len(v) - 1 for v, _ in held.values()) == list(range(4, 34))
    assert table.in_use() == 30 and table.width == 34
    slots = {name: len(v) - 1 for name, (v, _) in held.items()}
    for i in range(10):
        del held[f"example.com/r{i}"]
    assert table.in_use() == 20
    new = [table.vector({f"example.com/s{i}": 1}) for i in range(10)]
    assert sorted(len(v) - 1 for v, _ in new) == sorted(slots[f"example.com/r{i}"] for i in range(10))
    assert table.width == 34 and table.in_use() == 30


def test_a_hold_shared_by_copies_keeps_the_slot_until_the_last_one_goes():
    table = ResourceTable(max_extended=2)
    v, hold = table.vector({"example.com/a": 1})
    copies = [hold, hold]
    del hold
    copies.pop()
    assert table.in_use() == 1
    copies.pop()
    assert table.in_use() == 0
    assert table.vector({"example.com/b": 1})[0] == v  # the same slot, now for b


def test_the_hard_limit_names_the_resource_and_frees_what_it_took():
    table = ResourceTable(max_extended=3)
    keep = [table.vector({f"example.com/k{i}": 1}) for i in range(2)]
    with pytest.raises(TooManyResources) as e:
        table.vector({"example.com/x": 1, "example.com/y": 1})
    assert e.value.name == "example.com/y"
    assert str(e.value) == ("more than 3 distinct extended resources in use at once "
                            "(a column of every node table each), cannot add 'example.com/y'")
    assert table.in_use() == 2                       # x was given back
    assert len(keep) == 2 and table.vector({"example.com/z": 1})[1] is not None


def test_pinned_resources_keep_their_slot():
    table = ResourceTable(max_extended=2)
    i = table.pin("example.com/scored")
    assert table.pin("example.com/scored") == i and table.in_use() == 1
    v, hold = table.vector({"example.com/scored": 2})
    del hold
    assert table.in_use() == 1 and table.name(i) == "example.com/scored"


@given(st.dictionaries(st.sampled_from(["cpu", "memory", "ephemeral-storage", "pods",
                                        "example.com/qty-widget", "example.com/qty-gadget"]),
                       st.integers(min_value=1, max_value=10**12)))
def test_vector_map_round_trip(amounts):
    v, hold = resource_vector(amounts)
    assert vector_to_map(v) == amounts
    assert v == canonical(v)


@pytest.mark.parametrize("name,amount,text", [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("cpu", 0, "0"),
    ("memory", 1 << 30, "1Gi"), ("memory", 3 << 20, "3Mi"), ("memory", 1000, "1000"),
    ("pods", 110, "110"),
])
def test_format_amount(name, amount, text):
    assert format_amount(name, amount) == text
    if name != "pods":
        assert quantity_to_int(name, parse_quantity(text)) == amount
