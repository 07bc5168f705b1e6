"""Leases looked at off a loop's thread (common/runtime/lease_lookups.py): each answer handed
to the loop through its inbox, the loop woken only by a change, a failed look logged once and
tried again, no look while the role is not active."""
from __future__ import annotations

import logging
import threading
from collections import Counter

from common.runtime.lease_lookups import LeaseLookups
from common.runtime.links import Inbox
from common.runtime.logs import ErrorLog
from common.store.memory import MemoryStore


def lookups(store):
    rings: list = []
    inbox = Inbox(lambda: rings.append(1))
    counters: Counter = Counter()
    return LeaseLookups(store, "shard", inbox, "leases", ErrorLog(logging.getLogger("test")), counters,
                        clock=iter(range(100)).__next__), inbox, rings, counters


def test_each_answer_goes_to_the_inbox_and_only_a_change_wakes_the_loop():
    store = MemoryStore()
    store.put_lease("shard", "0", "a:1", 60)
    look, inbox, rings, _ = lookups(store)
    look.look()
    look.look()
    store.put_lease("shard", "1", "b:1", 60)
    look.look()
    answers = [inbox.get_nowait() for _ in range(3)]
    assert answers == [("leases", None, ({"0": "a:1"}, 0)), ("leases", None, ({"0": "a:1"}, 1)),
                       ("leases", None, ({"0": "a:1", "1": "b:1"}, 2))]
    assert len(rings) == 2 and inbox.empty()


def turns(stop: threading.Event, n: int):
    """An `every` for `forever`: no pause, and the stop set after n turns."""
    left = iter(range(n))

    def every() -> float:
        if next(left, None) is None:
            stop.set()
        return 0.0
    return every


class Failing(MemoryStore):
    def __init__(self, failures: int):
        super().__init__()
        self.failures = failures

    def list_leases(self, role: str) -> dict[str, str]:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the API server is not answering")
        return super().list_leases(role)


def test_a_failed_look_is_logged_once_counted_and_tried_again(caplog):
    store = Failing(3)
    look, inbox, _, counters = lookups(store)
    stop = threading.Event()
    with caplog.at_level("ERROR"):
        look.forever(stop, turns(stop, 5))  # six looks: three fail, three answer
    assert counters["leases_lookup_errors"] == 3
    said = [r for r in caplog.records if "looking up the shard leases" in r.getMessage()]
    assert len(said) == 1 and "not answering" in said[0].getMessage()
    assert [inbox.get_nowait()[2][0] for _ in range(3)] == [{}, {}, {}] and inbox.empty()


def test_no_look_while_the_role_is_not_active():
    store = Failing(1)  # a look would fail and count
    look, inbox, _, counters = lookups(store)
    stop = threading.Event()
    look.forever(stop, turns(stop, 3), active=lambda: False)
    assert inbox.empty() and counters["leases_lookup_errors"] == 0
