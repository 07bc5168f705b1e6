"""A process's start-up around its initial lists (common.runtime.component)."""
from __future__ import annotations

import gc

import pytest

from common.runtime import gcstats
from common.runtime.component import collect_before_list, settle_heap


@pytest.fixture
def collector():
    """The collector as a process leaves it, put back for the next tests."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    gc.enable()


def test_the_heap_a_list_built_is_frozen_without_a_full_collection(collector):
    """A full collection over what a million running pods parse to took seconds of a
    shard's start-to-ready; the list builds no cyclic garbage, so the heap is frozen as it
    is (the collection comes before the list, over the imports only)."""
    pauses = gcstats.install()
    collect_before_list()
    assert not gc.isenabled()
    kept = [{"pod": i, "labels": {"app": str(i % 7)}} for i in range(20000)]  # what a list keeps
    frozen = gc.get_freeze_count()
    full = pauses.counters()["gc_gen2_collections"]
    settle_heap()
    assert pauses.counters()["gc_gen2_collections"] == full  # no collection in settling
    assert gc.get_freeze_count() >= frozen + len(kept)  # the list's objects are never walked again
    assert gc.isenabled()
