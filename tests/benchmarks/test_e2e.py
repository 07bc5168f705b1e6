"""`shardsched bench --rate R` (benchmarks/e2e.py): pods are created at R per second
smoothly, not in bursts of CREATE_BATCH."""
from __future__ import annotations

from benchmarks.e2e import CREATE_BATCH, PACE_S, paced
from builders import Clock


def created_times(n: int, rate: float) -> list[float]:
    """When each pod's creation call is made, on a fake clock (each call takes no time)."""
    clock = Clock(0.0)

    def sleep(s):
        clock.now += max(s, 1e-6)

    out = [0.0] * n
    for i, j in paced(n, rate, clock, sleep):
        for k in range(i, j):
            out[k] = clock.now
    return out


def test_pods_are_created_at_the_rate_a_few_at_a_time():
    for rate in (5, 300, 2000):
        times = created_times(3000, rate)
        assert all(t >= i / rate - 1e-9 for i, t in enumerate(times)), "never ahead of the rate"
        assert all(t - i / rate <= PACE_S + 1e-6 for i, t in enumerate(times)), "never behind it by more than a tick"
        per_call = {}
        for t in times:
            per_call[t] = per_call.get(t, 0) + 1
        assert max(per_call.values()) <= rate * PACE_S + 1, (rate, max(per_call.values()))


def test_rate_zero_creates_as_fast_as_the_store_takes_them():
    assert list(paced(1200, 0)) == [(0, CREATE_BATCH), (CREATE_BATCH, 2 * CREATE_BATCH), (2 * CREATE_BATCH, 1200)]
