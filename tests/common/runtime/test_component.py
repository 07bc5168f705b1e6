"""A process's start-up around its initial lists (common.runtime.component)."""
from __future__ import annotations

import gc

import pytest

from common.runtime import gcstats
from common.runtime.component import freeze_before_list, settle_heap


@pytest.fixture
def collector():
    """The collector as a process leaves it, put back for the next tests."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    gc.enable()


def walked(objects: list) -> bool:
    """Whether any of `objects` is in a generation the collector walks (not frozen)."""
    ids = {id(o) for o in objects}
    return any(id(o) in ids for o in gc.get_objects())


def test_the_heap_a_list_built_is_frozen_without_a_full_collection(collector):
    """A full collection over what a million running pods parse to took seconds of a
    shard's start-to-ready; the list builds no cyclic garbage, so the heap is frozen as it
    is."""
    pauses = gcstats.install()
    freeze_before_list()
    assert not gc.isenabled()
    kept = [{"pod": i, "labels": {"app": str(i % 7)}} for i in range(20000)]  # what a list keeps
    full = pauses.counters()["gc_gen2_collections"]
    settle_heap()
    assert pauses.counters()["gc_gen2_collections"] == full  # no collection in settling
    assert not walked(kept)  # the list's objects are never walked again
    assert gc.isenabled()


def test_the_imports_are_frozen_before_the_list_without_a_collection(collector):
    """What a process imported and built before its lists is frozen as it is: a full
    collection over it found nothing to free and cost each of the four processes 10-20 ms
    of CPU at start, all at once on the machine's cores."""
    pauses = gcstats.install()
    full = pauses.counters()["gc_gen2_collections"]
    imported = [{"module": {"name": str(i)}} for i in range(1000)]  # what the imports and the set-up leave
    assert walked(imported)
    freeze_before_list()
    assert pauses.counters()["gc_gen2_collections"] == full
    assert not gc.isenabled()
    assert not walked(imported)
