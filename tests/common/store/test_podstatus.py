"""The scheduler's pod writes (common/store/podstatus.py): the timestamps they carry."""
from __future__ import annotations

from datetime import datetime, timezone

from common.store.podstatus import now_rfc3339


def test_now_is_the_current_second_as_the_api_server_writes_it():
    """Formatted once per second (a binder stamps every binding), and a new second is a
    new string at once."""
    for ns in (0, 999_999_999, 1_000_000_000, 1_800_000_000_999_999_999, 1_800_000_001_000_000_000,
               1_800_000_000_000_000_000):
        second = datetime.fromtimestamp(ns // 1_000_000_000, timezone.utc)
        assert now_rfc3339(lambda: ns) == second.strftime("%Y-%m-%dT%H:%M:%SZ")
    before = datetime.now(timezone.utc).replace(microsecond=0)
    now = datetime.strptime(now_rfc3339(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before <= now <= datetime.now(timezone.utc)
