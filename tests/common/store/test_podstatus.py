"""The store's timestamps (common/store/podstatus.py `now_rfc3339`): Kubernetes' form, to the
second, UTC; formatted once per second and the same as a fresh formatting at every moment."""
from __future__ import annotations

import threading
from datetime import datetime, timezone

from common.store import podstatus


def test_a_timestamp_is_the_current_second_in_kubernetes_form(monkeypatch):
    clock = [1764147600.999]  # 2025-11-26T09:00:00.999Z
    monkeypatch.setattr(podstatus.time, "time", lambda: clock[0])
    assert podstatus.now_rfc3339() == "2025-11-26T09:00:00Z"
    clock[0] = 1764147601.0  # the next second: a new text, not the remembered one
    assert podstatus.now_rfc3339() == "2025-11-26T09:00:01Z"
    clock[0] = 1764147601.5
    assert podstatus.now_rfc3339() == "2025-11-26T09:00:01Z"
    clock[0] = 1764147599.2  # the clock stepped back: the earlier second again
    assert podstatus.now_rfc3339() == "2025-11-26T08:59:59Z"


def test_a_timestamp_agrees_with_the_system_clock_across_threads():
    seen: list[tuple[str, str, str]] = []

    def stamp():
        for _ in range(2000):
            before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            text = podstatus.now_rfc3339()
            after = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            seen.append((before, text, after))

    threads = [threading.Thread(target=stamp) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(before <= text <= after for before, text, after in seen)
