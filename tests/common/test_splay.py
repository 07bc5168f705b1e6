"""PrioritySplayTree against brute force over a sorted list."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from common.splay import PrioritySplayTree

WIDTH = 3

KEY = st.tuples(st.integers(-3, 3), st.sampled_from([0.0, 1.5, 2.0]), st.sampled_from("abc"))
VECTOR = st.tuples(*[st.integers(0, 1000)] * WIDTH)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), KEY, VECTOR),
        st.tuples(st.just("delete"), KEY),
        st.tuples(st.just("query"), st.integers(-5, 5)),
    ),
    max_size=120,
)


def vsum(vectors) -> tuple[int, ...]:
    total = [0] * WIDTH
    for vec in vectors:
        for i, amount in enumerate(vec):
            total[i] += amount
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
    tree = PrioritySplayTree(WIDTH)
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
    tree = PrioritySplayTree(2)
    for key in keys:
        tree.insert(key, (1, key[0]))
    assert len(tree) == n
    assert tree.total() == (n, sum(k[0] for k in keys))
    assert tree.count_below(250) == 2500
    assert tree.sum_below(250) == (2500, sum(i // 10 for i in range(2500)))
    assert [k for k, _ in tree.items()] == sorted(keys)
    for key in sorted(keys)[::2]:
        tree.delete(key)
    assert len(tree) == n // 2
    assert len(tree.items_below(500)) == n // 2


def test_empty_tree_and_wrong_width():
    tree = PrioritySplayTree(2)
    assert tree.total() == (0, 0)
    assert tree.sum_below(10) == (0, 0)
    assert tree.count_below(10) == 0
    assert tree.items() == [] and tree.items_below(10) == []
    assert (0, 0.0, "a") not in tree
    with pytest.raises(KeyError):
        tree.delete((0, 0.0, "a"))
    with pytest.raises(ValueError):
        tree.insert((0, 0.0, "a"), (1, 2, 3))
