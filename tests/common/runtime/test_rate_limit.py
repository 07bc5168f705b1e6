"""The token bucket behind store.qps and store.burst (kube://), on a simulated clock."""
from __future__ import annotations

from common.runtime.rate_limit import TokenBucket


class FakeTime:
    def __init__(self):
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_burst_then_qps():
    t = FakeTime()
    bucket = TokenBucket(10, 5, clock=t.clock, sleep=t.sleep)
    assert [bucket.wait() for _ in range(5)] == [0.0] * 5  # the burst goes at once
    waits = [bucket.wait() for _ in range(10)]
    assert all(abs(w - 0.1) < 1e-9 for w in waits)  # then one every 1/qps
    assert abs(t.now - 1.0) < 1e-9


def test_idle_time_refills_up_to_the_burst_only():
    t = FakeTime()
    bucket = TokenBucket(2, 3, clock=t.clock, sleep=t.sleep)
    t.now = 100.0
    assert [bucket.wait() for _ in range(3)] == [0.0] * 3
    assert bucket.wait() == 0.5


def test_burst_zero_means_qps_rounded_up():
    assert TokenBucket(2.5).burst == 3 and TokenBucket(0.2).burst == 1
