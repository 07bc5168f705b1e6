"""Placement quality, measured: a sample of cycles graded off the clock (Scheduler.grade).

A shard with `shards.qualitySamplePercent` above 0 grades that share of its successful
cycles after they decided. The cycle's own timing and metrics leave the grading out, but
the process still spends the time: about one full scan and score of the cluster per sample.
The grades go into the shard's Status counters (common/runtime/quality.py), which
`bench --quality` sums over the shards."""
from __future__ import annotations

import random
from collections import Counter

from common.runtime.quality import OPTIMAL, SAMPLED, bucket


class QualitySampler:
    def __init__(self, percent: float, seed: int = 0):
        self.share = percent / 100.0
        self.rng = random.Random(seed)
        self.counts: Counter = Counter()

    def due(self) -> bool:
        """Whether to grade the cycle that just decided (a coin with the configured odds)."""
        return self.share > 0 and self.rng.random() < self.share

    def record(self, regret_pct: float | None) -> None:
        if regret_pct is None:
            return
        self.counts[SAMPLED] += 1
        if regret_pct <= 0:
            self.counts[OPTIMAL] += 1
        self.counts[bucket(regret_pct)] += 1
