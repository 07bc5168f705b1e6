"""List once, then follow the store's events, relisting when history has moved on.

Every runtime process (shard, binder, dispatcher) keeps a view of some kinds of objects in
step with the store the way a Kubernetes informer does: an initial list with a
resourceVersion, then watch events after it. When the store says that version is too old
(its history was trimmed while the process was slow or disconnected), the view is dropped
and rebuilt from a fresh list: a relist is always correct, just not cheap.
"""
from __future__ import annotations

import itertools
import logging
import time
from contextlib import nullcontext
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from ..errors import ResourceVersionTooOld, StoreUnavailable
from .logs import ErrorLog
from ..store.base import BOUND_MARK, WATCH_LINGER_S, PollPace, rv_order

log = logging.getLogger(__name__)

#: Lists opened at once where a store's lists are round trips (`lists_in_parallel`).
LIST_THREADS = 8
#: The kinds whose lists are asked for first (the largest, and last in the kinds' order):
#: with more kinds than LIST_THREADS, the Pods otherwise waited for a thread behind the
#: round trips of kinds that are mostly empty, while every process's start waited for them.
LIST_FIRST = ("Pod", "Node")
#: (first, most) seconds between lists again after one expired more than once in a row
#: (client-go's reflector backs off from 0.8 s to 30 s)
LIST_RETRY_S = (1.0, 30.0)


class Informer:
    """Feeds `on_event(type, kind, obj)` with ADDED for the listed objects, then the events.

    `on_relist()` is called before a relist so the owner can forget its view; kinds are
    listed in the given order (e.g. PriorityClasses before the Pods that refer to them).

    An object `on_event` fails on (one no other check caught: a record another writer got
    wrong) is skipped, logged with its kind, key and resourceVersion (each distinct error
    once, with its traceback) and counted in `skipped`: retrying it would stop every event
    after it for good.
    """

    def __init__(self, store, kinds: Iterable[str], on_event: Callable[[str, str, dict], None],
                 on_relist: Callable[[], None] | None = None, skips: dict | None = None,
                 event_skip=None, linger_s: float = WATCH_LINGER_S, listing=None, take_status=None,
                 take_undecoded=None):
        """`skips`: kind -> common.store.base.ListSkip, what the owner's lists may pass over
        unread (a dispatcher's bound pods); `event_skip`: the watch events it may pass over
        (common.store.base.EventSkip), on a store that can skip them unread (Redis, in its
        read) or hands them over undecoded (kube://, here); `linger_s`: how long a sync that
        may wait lets events gather after the previous one (common.store.base.PollPace;
        store.watchLingerSeconds); `listing()`: a context manager each list (the first and
        every relist) is delivered within, for an owner that counts what a list brings in one
        pass at its end (common.scheduling.accounting.PodAccounting.listing);
        `take_status(kind, type_, key, status) -> bool`: applies an event that carries a
        status hint (a pod's status-only write) from the hint alone, asked in the events'
        order, each event before it applied; what it declines (False) is decoded and
        delivered; `take_undecoded(kind, type_, key, document, event) -> bool`: likewise
        for an event the store hands over undecoded (`document`, its bytes: a pod's
        creation, ClusterStore.read's `undecoded`), which the owner may hold as it is (True)
        and decode only if it ever needs it (a shard, another shard's pending pod)."""
        self.store = store
        self.listing = listing if listing is not None else nullcontext
        self.pace = PollPace(linger_s)
        self.kinds = tuple(kinds)
        self.skips = dict(skips or {})
        self.on_event = on_event
        self.on_relist = on_relist
        #: one history for all kinds, read as bytes (Redis): the informer moves past every
        #: event it read, those of kinds it does not watch and those event_skip passed over
        self.reads_ahead = getattr(store, "skips_unread", False)
        self.event_skip = event_skip
        self.take_status = take_status
        self.take_undecoded = take_undecoded
        #: what a sync that may wait waits on, once `wake_with` gave one
        self.doorbell = None
        #: whether a read since the last list opened the store's watches (see `_poll`)
        self._watching = False
        self.rv: str | None = None
        #: kind -> the resourceVersion up to which this kind's events have been applied.
        #: Not `rv`: a store that watches each kind apart (the API server) may deliver an
        #: event of one kind after a newer one of another.
        self.kind_rv: dict[str, str] = {}
        self.skipped = 0
        self.errors = ErrorLog(log)

    def _deliver(self, type_: str, kind: str, obj: dict, rv: str | None) -> None:
        try:
            self.on_event(type_, kind, obj)
        except StoreUnavailable:
            raise  # a write the handler makes failed: the store, not the object, is at fault
        except Exception as e:
            self.skipped += 1
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            name = (f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")) \
                if isinstance(meta, dict) else "?"
            first = self.errors.error(f"skipped {type_} {kind} {name} at resourceVersion {rv}", e)
            if not first and (self.skipped <= 100 or self.skipped % 1000 == 0):
                log.warning("skipped %s %s %s at resourceVersion %s: %s (%d skipped so far)",
                            type_, kind, name, rv, e, self.skipped)

    def _deliver_decoded(self, ev) -> None:
        """`ev` delivered; an event decoded only now (a StatusEvent) that does not decode is
        skipped, logged and counted as one `on_event` fails on."""
        obj = self.decoded(ev)
        if obj is not None:
            self._deliver(ev.type, ev.kind, obj, ev.rv)

    def decoded(self, ev) -> dict | None:
        """The object of `ev`, an event perhaps decoded only now (a StatusEvent, or one its
        owner held undecoded: take_undecoded); None when it does not decode: then skipped,
        logged and counted as one `on_event` fails on."""
        try:
            return ev.obj
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            self.skipped += 1
            self.errors.error(f"skipped {ev.type} {ev.kind} {getattr(ev, 'key', '?')} at resourceVersion {ev.rv}: "
                              "a record that does not decode", e)
            return None

    def start(self) -> None:
        """List every kind (delivered as ADDED, within `listing`), then follow from the lists'
        versions. A list that expires before it is read through (ResourceVersionTooOld: on
        the API server a paged list whose continue token outlived etcd's compaction) may
        have delivered objects deleted since, of which no event will ever tell: the owner
        forgets everything (`on_relist`) and every kind is listed again: at once the first
        time (such a list took minutes), then backing off as client-go's reflector does
        (LIST_RETRY_S), so a server that refuses every continuation is not hammered."""
        for attempt in itertools.count():
            try:
                return self._list_all()
            except ResourceVersionTooOld as e:
                log.warning("a list expired before it was read through (%s): forgetting what it delivered "
                            "and listing again", e)
                if self.on_relist is not None:
                    self.on_relist()
                if attempt:
                    time.sleep(min(LIST_RETRY_S[1], LIST_RETRY_S[0] * 2 ** (attempt - 1)))

    def _list_all(self) -> None:
        self._watching = False
        t = time.monotonic()
        listed = []
        rv = None
        kind_rvs = {}
        for kind, (objs, kind_rv) in zip(self.kinds, self._open_lists()):
            listed.append((kind, objs))
            kind_rvs[kind] = kind_rv
            # Events after the oldest of the per-kind versions cover every list.
            rv = kind_rv if rv is None else min(rv, kind_rv, key=rv_order)
        counts = []
        with self.listing():
            for kind, objs in listed:
                n = 0
                for obj in objs:
                    n += 1
                    self._deliver("ADDED", kind, obj, rv)
                counts.append(f"{n} {kind}")
        del listed
        self.rv = rv
        self.kind_rv = kind_rvs
        log.info("listed %s in %.2f s (resourceVersion %s)", ", ".join(counts), time.monotonic() - t, rv)

    def _open_lists(self) -> list[tuple]:
        """(objects, rv) of each kind, in the kinds' order. One object at a time where the
        store can (each decoded when delivered, and what the owner does not keep freed at
        once): a million pods never held whole. Where each list is a round trip
        (`lists_in_parallel`), all are opened at once, the largest first (LIST_FIRST): the
        answers are delivered in order all the same, and the first list's wait covers the
        others'."""
        list_iter = getattr(self.store, "list_iter", None)

        def open_one(kind):
            if list_iter is not None:
                return list_iter(kind, cached=True, skip=self.skips.get(kind))
            return self.store.list(kind, cached=True)
        if not getattr(self.store, "lists_in_parallel", False) or len(self.kinds) < 2:
            return [open_one(kind) for kind in self.kinds]
        first = [k for k in LIST_FIRST if k in self.kinds]
        with ThreadPoolExecutor(min(LIST_THREADS, len(self.kinds)), thread_name_prefix="list") as pool:
            opened = {kind: pool.submit(open_one, kind)
                      for kind in (*first, *(k for k in self.kinds if k not in first))}
            return [opened[kind].result() for kind in self.kinds]

    def sync(self, timeout: float = 0.0, max_events: int = 10000, latest: bool = False) -> int:
        """Apply the events since the last sync (waiting up to `timeout` for the first; with a
        timeout, no sooner than the linger after the previous sync's read); returns how many
        it applied.

        `latest`: apply only each object's last event of those read, kinds in their list
        order, as a relist would leave the owner, and within `listing` (a shard catching up
        with the events written during its initial list: a pod created, bound and started
        meanwhile is decoded, parsed and counted once instead of three times; on a store
        that can (Redis: `collapses_unread`) the superseded events are not even decoded).
        Only for an owner with nothing waiting on the individual events yet."""
        try:
            if self.reads_ahead:
                extra = {"latest": True} if latest else {}
                if self.take_undecoded is not None and not latest:
                    extra["undecoded"] = True
                events, read_to = self.store.read(self.rv, timeout, max_events, self.kinds, self.kind_rv,
                                                  self.event_skip, pace=self.pace, **extra)
            else:
                events, read_to = self._poll(timeout, max_events), None
        except ResourceVersionTooOld as e:
            log.warning("watch history after %s is gone (%s): relisting %s", self.rv, e, ", ".join(self.kinds))
            if self.on_relist is not None:
                self.on_relist()
            self.start()
            return 0
        if not latest:
            self._apply(events)
        else:
            with self.listing():
                # (no status hints: a hint is what changed since the pod's event before it,
                # which the collapse may have left out)
                self._apply(_latest(events, self.kinds), hints=False)
            for ev in events:  # each kind as far as the events read, applied or superseded
                self.rv = self.kind_rv[ev.kind] = ev.rv
        if read_to is not None:
            # past what it passed over too
            self.rv = read_to
            for kind in self.kind_rv:
                self.kind_rv[kind] = read_to
        return len(events)

    def wake_with(self, doorbell) -> bool:
        """From now on a sync that may wait waits on `doorbell` (common.runtime.links.Doorbell),
        which the store rings when its watch brings events, and the owner's inbox when a
        message comes: the owner may then wait as long as its timers allow and still take
        either at once. Returns False (and changes nothing) where the store cannot ring it
        (Redis: a sync waits on the server, so an owner keeps its waits short)."""
        if self.reads_ahead or not self.store.listen(doorbell.ring):
            return False
        self.doorbell = doorbell
        return True

    def _poll(self, timeout: float, max_events: int) -> list:
        """The events after the last sync, waiting up to `timeout` for the first: on the store
        (paced), or, with a doorbell, on it. The wait ends at a ring (events, or the owner's
        message; a ring left from events an earlier read took ends it too, for nothing but a
        read), and after it the usual linger lets events gather. Every event delivered after
        a read rings, so only the first read after a list, which opens the store's watches,
        looks before it waits."""
        def poll(wait: float) -> list:
            events = self.store.poll(self.rv, timeout=wait, max_events=max_events, kinds=self.kinds,
                                     positions=self.kind_rv)
            if len(events) >= max_events:
                self._watching = False  # more may be there already, rung for before this read
            return events
        if self.doorbell is None or timeout <= 0 or not self._watching:
            self._watching = True
            if self.doorbell is None or timeout <= 0:
                return poll(self.pace.wait(timeout))
            events = poll(self.pace.wait(0.0))
            if events:
                return events
        # (a ring from here on is for events this read did not take, or for a message)
        started = time.monotonic()
        if not self.doorbell.wait(timeout):
            return []
        self.pace.wait(max(0.0, timeout - (time.monotonic() - started)))
        return poll(0.0)

    def _apply(self, events: list, hints: bool = True) -> None:
        skip, hold = self.event_skip, self.take_undecoded
        take = self.take_status if hints else None
        for ev in events:
            # an event still the server's bytes (kube://'s watch) may be passed over undecoded
            raw = getattr(ev, "raw", None) if skip is not None else None
            status = getattr(ev, "status", None) if take is not None else None
            document = getattr(ev, "document", None) if hold is not None else None
            if raw is not None and skip(ev.kind, ev.type, ev.key, BOUND_MARK in raw, raw):
                pass
            elif status is not None and take(ev.kind, ev.type, ev.key, status):
                pass  # a status-only write, applied from its hint: never decoded
            elif document is not None and hold(ev.kind, ev.type, ev.key, document, ev):
                pass  # held by the owner as it is, decoded if it ever needs it
            else:
                self._deliver_decoded(ev)
            self.rv = self.kind_rv[ev.kind] = ev.rv

    def seen(self, kind: str, rv: str) -> bool:
        """Whether every event of `kind` up to resourceVersion `rv` has been applied."""
        known = self.kind_rv.get(kind)
        return known is not None and rv_order(rv) <= rv_order(known)


def _latest(events: list, kinds: tuple) -> list:
    """The last event of each object among `events`, the kinds in `kinds`' order (their list
    order: PriorityClasses before the pods that name them), each kind's in the order of
    those last events. An event whose object has no readable name is kept as it is."""
    order = {kind: i for i, kind in enumerate(kinds)}
    last: dict = {}
    for i, ev in enumerate(events):
        try:
            obj = ev.obj  # a StatusEvent decodes here: one that cannot is kept, and reported when delivered
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            obj = None
        meta = obj.get("metadata") if obj.__class__ is dict else None
        key = (ev.kind, meta.get("namespace"), meta.get("name")) if meta.__class__ is dict else i
        last.pop(key, None)  # re-inserted: the dict stays in the order of the last events
        last[key] = i
    return sorted((events[i] for i in last.values()), key=lambda ev: order.get(ev.kind, len(order)))
