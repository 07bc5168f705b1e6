"""`shardsched bench --rate R` (benchmarks/e2e.py): pods are created at R per second
smoothly, not in bursts of CREATE_BATCH."""
from __future__ import annotations

import json

from benchmarks.e2e import CREATE_BATCH, CREATE_TICK_S, PACE_S, paced
from common.cli import main
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


def test_gpu_saturated_tries_its_standing_backlog_before_the_clock(tmp_path):
    """`--workload gpu-saturated`: the GPU pods that cannot fit are created and each tried
    before the clock starts; only the CPU pods are counted, and they all bind."""
    out = tmp_path / "b.json"
    assert main(["bench", "--nodes", "40", "--profile", "mixed", "--pods", "50", "--shards", "2",
                 "--workload", "gpu-saturated", "--config", "benchmarks/configs/pools.yaml",
                 "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["standing"]["pods"] == 10
    assert doc["pods"] == 50 and doc["scheduled"] == 50 and doc["verify"]["ok"]
    # the standing pods were all tried before the CPU pods (at least once each, in all)
    assert sum(s["unschedulable_attempts"] for s in doc["per_shard"]) >= 10


def call_times(n: int, rate: float) -> list[float]:
    return sorted(set(created_times(n, rate)))


def test_a_high_rate_is_created_a_tick_of_pods_per_call_not_a_call_per_pod():
    calls = call_times(3000, 1000)
    assert all(b - a >= CREATE_TICK_S - 1e-9 for a, b in zip(calls, calls[1:]))
    assert len(calls) <= 3 / CREATE_TICK_S + 1  # 3 s of pods: about one call per tick


def test_a_low_rate_still_creates_each_pod_at_its_own_time():
    times = created_times(50, 100)  # one pod every 10 ms, more than a tick apart
    assert all(abs(t - i / 100) <= 1e-5 for i, t in enumerate(times))
    assert len(set(times)) == 50
