"""A token bucket: at most `qps` requests per second on average, `burst` at once, as
client-go's default rate limiter (flowcontrol.NewTokenBucketRateLimiter) paces a client's
requests to the API server (a KubeSchedulerConfiguration's clientConnection.qps and burst).
"""
from __future__ import annotations

import math
import threading
import time


class TokenBucket:
    def __init__(self, qps: float, burst: int = 0, clock=time.monotonic, sleep=time.sleep):
        """`burst` 0 means qps rounded up (never below one request)."""
        self.qps = float(qps)
        self.burst = max(1, burst or math.ceil(self.qps))
        self._clock, self._sleep = clock, sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Take one token, sleeping until there is one; returns the seconds slept. Callers
        queue: a token is reserved at once, so waits never overlap for the same token."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            delay = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if delay:
            self._sleep(delay)
        return delay
