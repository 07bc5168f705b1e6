"""PrioritySplayTree against brute force over a list of (priority, vector) pods, with
resource vectors of different lengths as processes hold them (the four base slots, then
extended ones)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from common.model.resources import ZERO
from shard.splay import PrioritySplayTree

PRIORITY = st.integers(-3, 3)
#: four base slots, then up to two extended ones, the last non-zero (as parsed vectors are)
VECTOR = st.builds(lambda base, ext: tuple(base) + tuple(ext),
                   st.lists(st.integers(0, 1000), min_size=4, max_size=4),
                   st.lists(st.integers(1, 1000), max_size=2))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), PRIORITY, VECTOR),
        st.tuples(st.just("remove"), st.integers(0, 50)),
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


def check(tree: PrioritySplayTree, pods: list, priority: int) -> None:
    below = [v for p, v in pods if p < priority]
    assert tree.sum_below(priority) == vsum(below)
    assert tree.count_below(priority) == len(below)
    assert tree.total() == vsum(v for _, v in pods)
    assert tree.items() == [(p, sum(q == p for q, _ in pods), vsum(v for q, v in pods if q == p))
                            for p in sorted({p for p, _ in pods})]
    assert len(tree) == len(pods)


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_matches_brute_force(ops):
    tree = PrioritySplayTree()
    pods: list = []
    for op in ops:
        if op[0] == "add":
            _, priority, vec = op
            tree.add(priority, vec)
            pods.append((priority, vec))
            assert priority in tree
        elif op[0] == "remove":
            if not pods:
                continue
            priority, vec = pods.pop(op[1] % len(pods))
            tree.remove(priority, vec)
            assert (priority in tree) == any(p == priority for p, _ in pods)
        else:
            check(tree, pods, op[1])
    for priority in range(-4, 5):
        check(tree, pods, priority)


def test_one_entry_per_priority_whatever_the_pods():
    """A node's pods share one entry per priority: what pruning reads, at a few entries
    per node however many pods it runs."""
    tree = PrioritySplayTree()
    for i in range(300):
        tree.add((0, 100, 1000)[i % 3], (10, 1, 0, 0))
    assert [(p, n) for p, n, _ in tree.items()] == [(0, 100), (100, 100), (1000, 100)]
    assert tree.sum_below(1000) == (2000, 200, 0, 0)
    for i in range(100):
        tree.remove(100, (10, 1, 0, 0))
    assert 100 not in tree and [p for p, _, _ in tree.items()] == [0, 1000]
    assert tree.sum_below(1000) == tree.sum_below(101) == (1000, 100, 0, 0)


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_degenerate_insert_orders_do_not_recurse(order):
    n = 5000
    priorities = list(range(n))
    if order == "descending":
        priorities.reverse()
    tree = PrioritySplayTree()
    for p in priorities:
        tree.add(p, (1, p, 0, 0))
    assert len(tree) == n
    assert tree.total() == (n, sum(priorities), 0, 0)
    assert tree.count_below(2500) == 2500
    assert tree.sum_below(2500) == (2500, sum(range(2500)), 0, 0)
    assert [p for p, _, _ in tree.items()] == sorted(priorities)
    for p in sorted(priorities)[::2]:
        tree.remove(p, (1, p, 0, 0))
    assert len(tree) == n // 2
    assert tree.count_below(n) == n // 2


def test_empty_tree():
    tree = PrioritySplayTree()
    assert tree.total() == ZERO
    assert tree.sum_below(10) == ZERO
    assert tree.count_below(10) == 0
    assert tree.items() == []
    assert 0 not in tree
    with pytest.raises(KeyError):
        tree.remove(0, (1, 0, 0, 0))


@settings(max_examples=100, deadline=None)
@given(pods=st.lists(st.tuples(PRIORITY, VECTOR), max_size=60), order=st.randoms(use_true_random=False))
def test_many_pods_of_one_priority_added_at_once_count_as_each_added(pods, order):
    """A node's pods counted at once (NodeInfo.add_pods): one add per priority, with the count
    and the summed vector of its pods, answers as one add per pod does."""
    by_priority: dict = {}
    for p, v in pods:
        by_priority.setdefault(p, []).append(v)
    groups = list(by_priority.items())
    order.shuffle(groups)
    tree = PrioritySplayTree()
    for p, vs in groups:
        tree.add(p, vsum(vs), len(vs))
    for priority in range(-5, 6):
        check(tree, pods, priority)
