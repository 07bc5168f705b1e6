"""ListStore/RawStore: incremental snapshot updates must equal a full copy, cloning exactly
what changed.

The model tracks, per snapshot, which keys were written in the ListStore and which were
changed locally since that snapshot's last update. The expected clone count is then the
number of those keys that are alive in the ListStore now, or the whole live size when the
snapshot lagged behind the tracked deletions and had to be rebuilt.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from shard.generation_store import TOMBSTONE, GenerationTooOld, ListStore, RawStore, full_copy

KEYS = st.sampled_from([f"k{i}" for i in range(8)])
SNAPSHOTS = 3

OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.integers(0, 50)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("local_set"), st.integers(0, SNAPSHOTS - 1), KEYS, st.integers(100, 150)),
    st.tuples(st.just("local_delete"), st.integers(0, SNAPSHOTS - 1), KEYS),
    st.tuples(st.just("update"), st.integers(0, SNAPSHOTS - 1)),
)


class Value:
    """A mutable value, so the test can tell clones from the ListStore's own objects."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and other.n == self.n

    def __repr__(self) -> str:
        return f"Value({self.n})"


def clone(value: Value) -> Value:
    return Value(value.n)


def assert_same(raw: RawStore, store: ListStore) -> None:
    assert dict(raw.items()) == dict(store.items())
    assert raw.generation == store.generation
    assert not raw.local_keys
    for key, value in raw.items():
        assert value is not store[key]


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(OPS, max_size=80), min_tombstones=st.sampled_from([0, 2, 1000]))
def test_incremental_update_equals_full_copy(ops, min_tombstones):
    store = ListStore(min_tombstones=min_tombstones)
    model: dict[str, int] = {}
    raws = [RawStore() for _ in range(SNAPSHOTS)]
    touched: list[set[str]] = [set() for _ in range(SNAPSHOTS)]
    for op in ops:
        kind = op[0]
        if kind == "set":
            _, key, n = op
            store.set(key, Value(n))
            model[key] = n
            for keys in touched:
                keys.add(key)
        elif kind == "delete":
            _, key = op
            if key in model:
                store.delete(key)
                del model[key]
                for keys in touched:
                    keys.add(key)
            else:
                with pytest.raises(KeyError):
                    store.delete(key)
        elif kind == "local_set":
            _, i, key, n = op
            raws[i].set_local(key, Value(n))
            touched[i].add(key)
        elif kind == "local_delete":
            _, i, key = op
            if key in raws[i]:
                raws[i].delete_local(key)
                touched[i].add(key)
            else:
                with pytest.raises(KeyError):
                    raws[i].delete_local(key)
        else:
            _, i = op
            raw = raws[i]
            rebuild = raw.generation < store.oldest_tracked_generation
            expected = len(store) if rebuild else len(touched[i] & model.keys())
            assert store.update_raw_store(raw, clone) == expected
            touched[i].clear()
            assert_same(raw, store)
        assert {k: v.n for k, v in store.items()} == model
        assert len(store) == len(model)
    if min_tombstones == 1000:
        assert store.oldest_tracked_generation == 0
    for raw in raws:
        store.update_raw_store(raw, clone)
        assert_same(raw, store)
        assert dict(raw.items()) == dict(full_copy(store, clone).items())


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), KEYS), max_size=60), data=st.data())
def test_iter_newer_than_reports_exactly_the_later_writes(ops, data):
    store = ListStore(min_tombstones=1000)
    last_write: dict[str, tuple[int, object]] = {}
    for is_set, key in ops:
        if is_set:
            last_write[key] = (store.set(key, key.upper()), key.upper())
        elif key in store:
            last_write[key] = (store.delete(key), TOMBSTONE)
    since = data.draw(st.integers(0, store.generation))
    changes = list(store.iter_newer_than(since))
    gens = [gen for _, _, gen in changes]
    assert gens == sorted(gens, reverse=True)
    assert {key: (gen, value) for key, value, gen in changes} == {
        key: write for key, write in last_write.items() if write[0] > since}


def test_set_moves_item_to_front():
    store = ListStore()
    store.set("a", 1)
    store.set("b", 2)
    store.set("a", 3)
    assert list(store.items()) == [("a", 3), ("b", 2)]
    assert store.generation == 3
    assert store.generation_of("a") == 3
    assert store.generation_of("b") == 2


def test_delete_missing_key_raises():
    store = ListStore()
    with pytest.raises(KeyError):
        store.delete("a")
    store.set("a", 1)
    store.delete("a")
    with pytest.raises(KeyError):
        store.delete("a")
    assert "a" not in store and store.get("a") is None and len(store) == 0
    with pytest.raises(KeyError):
        store["a"]
    assert store.generation == 2


def test_tombstones_are_collected_and_lagging_snapshots_rebuilt():
    store = ListStore(min_tombstones=0)
    raw = RawStore()
    for i in range(10):
        store.set(i, i)
    store.update_raw_store(raw)
    for i in range(10):
        store.delete(i)
    store.set("x", 1)
    assert store.oldest_tracked_generation > raw.generation
    with pytest.raises(GenerationTooOld):
        list(store.iter_newer_than(raw.generation))
    assert store.update_raw_store(raw) == 1
    assert dict(raw.items()) == {"x": 1}


def test_only_changes_are_cloned():
    store = ListStore()
    for i in range(100):
        store.set(i, [i])
    raw = full_copy(store, list)
    store.set(5, [50])
    store.delete(7)
    raw.set_local(9, [90])
    raw.delete_local(11)
    raw.set_local("assumed", [0])
    assert store.update_raw_store(raw, list) == 3  # 5, 9 and 11; 7 and "assumed" are gone
    assert dict(raw.items()) == dict(store.items())


def test_raw_store_ahead_of_list_store_is_rejected():
    store = ListStore()
    other = ListStore()
    other.set("a", 1)
    raw = full_copy(other)
    with pytest.raises(ValueError):
        store.update_raw_store(raw)
