"""The scheduler's pod writes (common/store/podstatus.py): the timestamps they carry,
Kubernetes' form to the second, UTC; formatted once per second and the same as a fresh
formatting at every moment."""
from __future__ import annotations

import threading
from datetime import datetime, timezone

from common.store.podstatus import now_rfc3339


def test_now_is_the_current_second_as_the_api_server_writes_it():
    """Formatted once per second (a binder stamps every binding), a new second is a new
    string at once, and a clock stepped back gives the earlier second again."""
    for ns in (0, 999_999_999, 1_000_000_000, 1_800_000_000_999_999_999, 1_800_000_001_000_000_000,
               1_800_000_000_000_000_000):
        second = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc)
        assert now_rfc3339(lambda: ns) == second.strftime("%Y-%m-%dT%H:%M:%SZ")
    before = datetime.now(timezone.utc).replace(microsecond=0)
    now = datetime.strptime(now_rfc3339(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before <= now <= datetime.now(timezone.utc)


def test_a_timestamp_agrees_with_the_system_clock_across_threads():
    seen: list[tuple[str, str, str]] = []

    def stamp():
        for _ in range(2000):
            before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            text = now_rfc3339()
            after = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            seen.append((before, text, after))

    threads = [threading.Thread(target=stamp) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(before <= text <= after for before, text, after in seen)
