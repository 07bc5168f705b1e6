"""benchmarks/follow_undecoded.py: both readers follow every pod to the end in both variants
(every pod counted bound, nothing left held), and the report has each figure."""
from __future__ import annotations


def test_both_readers_count_every_pod_undecoded_and_decoded():
    from benchmarks.follow_undecoded import run

    doc = run(pods=300, repeats=1)
    assert set(doc["results"]) == {"shard", "binder"}
    for reader in doc["results"].values():
        for name in ("undecoded", "decoded"):
            assert reader[name]["us_per_pod"] > 0 and len(reader[name]["runs_us_per_pod"]) == 1
        assert reader["cpu_ratio_decoded_over_undecoded"] > 0
