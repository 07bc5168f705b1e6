"""PrioritySplayTree against brute force over a sorted list, with resource vectors of
different lengths as processes hold them (the four base slots, then extended ones)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from common.model.resources import ZERO
from shard.splay import PrioritySplayTree

KEY = st.tuples(st.integers(-3, 3), st.sampled_from([0.0, 1.5, 2.0]), st.sampled_from("abc"))
#: four base slots, then up to two extended ones, the last non-zero (as parsed vectors are)
VECTOR = st.builds(lambda base, ext: tuple(base) + tuple(ext),
                   st.lists(st.integers(0, 1000), min_size=4, max_size=4),
                   st.lists(st.integers(1, 1000), max_size=2))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), KEY, VECTOR),
        st.tuples(st.just("delete"), KEY),
        st.tuples(st.just("query"), st.integers(-5, 5)),
    ),
    max_size=120,
)


def vsum(vectors) -> tuple[int, ...]:
    total = [0] * 6
    for vec in vectors:
        for i, amount in enumerate(vec):
            total[i] += amount
    while len(total) > len(ZERO) and not total[-1]:
        total.pop()
    return tuple(total)


def check(tree: PrioritySplayTree, model: dict, priority: int) -> None:
    ordered = sorted(model.items())
    below = [(k, v) for k, v in ordered if k[0] < priority]
    assert tree.sum_below(priority) == vsum(v for _, v in below)
    assert tree.count_below(priority) == len(below)
    assert tree.items_below(priority) == below
    assert tree.total() == vsum(model.values())
    assert tree.items() == ordered
    assert len(tree) == len(model)


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_matches_brute_force(ops):
    tree = PrioritySplayTree()
    model: dict = {}
    for op in ops:
        if op[0] == "insert":
            _, key, vec = op
            if key in model:
                with pytest.raises(KeyError):
                    tree.insert(key, vec)
            else:
                tree.insert(key, vec)
                model[key] = vec
            assert key in tree
        elif op[0] == "delete":
            _, key = op
            if key in model:
                assert tree.delete(key) == model.pop(key)
            else:
                with pytest.raises(KeyError):
                    tree.delete(key)
            assert key not in tree
        else:
            check(tree, model, op[1])
    for priority in range(-4, 5):
        check(tree, model, priority)


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_degenerate_insert_orders_do_not_recurse(order):
    n = 5000
    keys = [(i // 10, float(i), f"p{i}") for i in range(n)]
    if order == "descending":
        keys.reverse()
    tree = PrioritySplayTree()
    for key in keys:
        tree.insert(key, (1, key[0], 0, 0))
    assert len(tree) == n
    assert tree.total() == (n, sum(k[0] for k in keys), 0, 0)
    assert tree.count_below(250) == 2500
    assert tree.sum_below(250) == (2500, sum(i // 10 for i in range(2500)), 0, 0)
    assert [k for k, _ in tree.items()] == sorted(keys)
    for key in sorted(keys)[::2]:
        tree.delete(key)
    assert len(tree) == n // 2
    assert len(tree.items_below(500)) == n // 2


def test_empty_tree():
    tree = PrioritySplayTree()
    assert tree.total() == ZERO
    assert tree.sum_below(10) == ZERO
    assert tree.count_below(10) == 0
    assert tree.items() == [] and tree.items_below(10) == []
    assert (0, 0.0, "a") not in tree
    with pytest.raises(KeyError):
        tree.delete((0, 0.0, "a"))
