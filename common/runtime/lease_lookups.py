"""A role's look at another role's leases, taken off its loop's thread.

The shard looks up which binder holds each partition, and the dispatcher which shards are
alive, both from their leases, every fraction of a second. On kube:// each look is a LIST of
Leases, and its answer waited 100-250 ms of a busy API server's time (py-spy, 2026-11-27),
so while the look ran in the loop's pass, the pass waited with it: the dispatcher for 20-58%
of each second of a backlog, the shard 165 ms in one second. A frozen API server would have
held the pass for the whole request timeout.

Now a thread of the role's own looks (`forever`), and hands each answer to the loop through
its inbox as `(what, None, (leases, looked_at))`: the loop applies it at its next pass, and
`looked_at` (when the look began) lets a loop that also looks from its pass (the shard, for a
partition with no known holder) drop an answer older than the one it already has.
The loop is woken only when the leases changed since the last answer; an unchanged one
waits quietly for the next pass. A failed look is logged once per distinct error (ErrorLog)
and counted, and the next turn tries again.
"""
from __future__ import annotations

import time
from typing import Callable


class LeaseLookups:
    def __init__(self, store, role: str, inbox, what: str, errors, counters, clock: Callable[[], float] = time.monotonic):
        """`role`: whose leases; `what`: the inbox message's first field; `errors`: the
        component's ErrorLog; `counters`: its counters (a failed look adds to
        "<what>_lookup_errors")."""
        self.store, self.role, self.inbox, self.what = store, role, inbox, what
        self.errors, self.counters, self.clock = errors, counters, clock
        self._last: dict[str, str] | None = None

    def look(self) -> None:
        """One look now, its answer handed to the loop."""
        looked_at = self.clock()
        leases = self.store.list_leases(self.role)
        changed = leases != self._last
        self._last = leases
        (self.inbox.put if changed else self.inbox.put_quietly)((self.what, None, (leases, looked_at)))

    def forever(self, stop_event, every: Callable[[], float], active: Callable[[], bool] = lambda: True) -> None:
        """Look at once and then every `every()` seconds until `stop_event` is set, while
        `active()` (the dispatcher looks only while it leads)."""
        while not stop_event.is_set():
            if active():
                try:
                    self.look()
                except Exception as e:
                    self.counters[f"{self.what}_lookup_errors"] += 1
                    self.errors.error(f"looking up the {self.role} leases", e)
            stop_event.wait(every())
