"""The placement-quality counters a shard reports in its Status (shard/quality.py grades a
sample of its cycles) and their summary over several shards (`bench --quality`).

They are whole counts, so shards' reports add up: how many choices were graded, how many
were on an optimal node, and a histogram of the regret (best score minus the chosen node's,
as a percentage of the best) in tenths of a percent, one counter per bucket used."""
from __future__ import annotations

SAMPLED = "quality_sampled"
OPTIMAL = "quality_optimal"
BUCKET = "quality_regret_permille_"


def bucket(regret_pct: float) -> str:
    """The histogram counter of a regret (0-100 %, in steps of 0.1 %)."""
    return f"{BUCKET}{min(1000, max(0, round(regret_pct * 10)))}"


def summarize(counters: list[dict]) -> dict:
    """{sampled, regret_pct_mean, regret_pct_p99, optimal_share} over shards' counters
    (None for figures of an empty sample); the percentile is a bucket's upper edge."""
    sampled = sum(int(c.get(SAMPLED, 0)) for c in counters)
    optimal = sum(int(c.get(OPTIMAL, 0)) for c in counters)
    hist: dict[int, int] = {}
    for c in counters:
        for key, n in c.items():
            if key.startswith(BUCKET):
                k = int(key[len(BUCKET):])
                hist[k] = hist.get(k, 0) + int(n)
    if not sampled:
        return {"sampled": 0, "regret_pct_mean": None, "regret_pct_p99": None, "optimal_share": None}
    mean = sum(k * n for k, n in hist.items()) / 10 / sampled
    rank, seen, p99 = 0.99 * sampled, 0, 0
    for k in sorted(hist):
        seen += hist[k]
        p99 = k
        if seen >= rank:
            break
    return {"sampled": sampled, "regret_pct_mean": round(mean, 2), "regret_pct_p99": p99 / 10,
            "optimal_share": round(optimal / sampled, 3)}
