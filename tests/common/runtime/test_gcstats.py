"""The garbage collector's pauses, counted per generation (common.runtime.gcstats)."""
from __future__ import annotations

import gc

from common.runtime import gcstats


def test_full_collections_are_counted_since_start_and_since_ready():
    pauses = gcstats.install()
    assert gcstats.install() is pauses and gc.callbacks.count(pauses) == 1
    pauses.ready()
    before = pauses.counters()
    assert before["gc_gen2_collections_ready"] == 0
    gc.collect()
    after = pauses.counters()
    assert after["gc_gen2_collections"] == before["gc_gen2_collections"] + 1
    assert after["gc_gen2_collections_ready"] == 1
    assert after["gc_gen2_pause_max_us_ready"] <= after["gc_gen2_pause_total_us_ready"]
