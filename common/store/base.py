"""The `ClusterStore` interface: the slice of the Kubernetes API the scheduler relies on.

Semantics follow the API server, so the `kube` backend (a real one) and the others behave alike:
* every write produces exactly one event, and the event's resourceVersion (rv) is also
  stamped into the written object's metadata.resourceVersion;
* `list` returns a snapshot together with the rv it reflects, and polling from that rv
  yields exactly the events the snapshot does not contain (list-then-watch has no gap);
* a watcher asking for history the store has trimmed gets `ResourceVersionTooOld` and must
  relist, instead of silently missing events.

rv strings are opaque to callers except for ordering: the memory backend counts integers,
Redis uses stream ids "ms-seq" (see `rv_order`).
"""
from __future__ import annotations

import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator

from ..errors import Conflict, ObjectError
from ..model.limits import check_object
from ..model.objects import KINDS, NAMESPACED, parse_object
from .podstatus import mark_gated, now_rfc3339


#: How long an Event is kept after its last update: the API server's --event-ttl default.
EVENT_TTL_S = 3600.0


class WatchEvent:
    """One change: type is "ADDED", "MODIFIED" or "DELETED"; obj is the object after the
    change (for DELETED, its last state)."""

    __slots__ = ("type", "kind", "obj", "rv")

    def __init__(self, type_: str, kind: str, obj: dict, rv: str):
        self.type, self.kind, self.obj, self.rv = type_, kind, obj, rv

    def __repr__(self):
        meta = self.obj.get("metadata") or {}
        name = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
        return f"WatchEvent({self.type} {self.kind} {name} @{self.rv})"


#: A reader's `skip` for ClusterStore.read: (kind, type_, key, bound, data) -> pass it over.
EventSkip = Callable[[str, str, str, bool, bytes], bool]


#: How long a reader that waits for events lets them gather between two polls, by default
#: (store.watchLingerSeconds): at a paced rate a poll that wakes on each event pays its round
#: trip, and the owner's loop pass after it, for one or two events.
WATCH_LINGER_S = 0.005


class PollPace:
    """Spaces one reader's waiting polls at least `linger_s` apart.

    A reader blocked on the store wakes as soon as one event is written; at a moderate,
    paced rate (a few hundred to a few thousand events a second) that is one poll, and one
    pass of the owner's loop (its messages, flushes, metrics), per event or two, and those
    fixed costs, not the events, are most of a process's CPU. A poll that may wait (timeout
    > 0: the reader has nothing else to do) first sleeps out what is left of `linger_s`
    since the previous poll, so the events written meanwhile come in one read; an event
    after a quiet spell is still read at once, and none waits longer than `linger_s` more.
    A poll with no time to wait (the owner is busy and comes back for whatever is there)
    never sleeps. One pace per reader (it is not thread-safe)."""

    def __init__(self, linger_s: float = WATCH_LINGER_S, clock=time.monotonic, sleep=time.sleep):
        if linger_s < 0:
            raise ValueError(f"watch linger: must be at least 0 seconds, got {linger_s!r}")
        self.linger_s = linger_s
        self._clock, self._sleep = clock, sleep
        self._last = float("-inf")
        #: how many polls slept, and for how long in all (seconds)
        self.lingered = 0
        self.lingered_s = 0.0

    def wait(self, timeout: float) -> float:
        """Called right before a poll that may wait up to `timeout` seconds: sleeps what is
        left of the linger (never more than `timeout`) and returns the time left to wait."""
        now = self._clock()
        if timeout > 0 and self.linger_s > 0:
            pause = min(self.linger_s - (now - self._last), timeout)
            if pause > 0:
                self._sleep(pause)
                self.lingered += 1
                self.lingered_s += pause
                timeout -= pause
                now = self._clock()
        self._last = now
        return timeout


def rv_order(rv: str) -> tuple[int, int]:
    """Sort key for resourceVersions of either backend."""
    ms, _, seq = rv.partition("-")
    return int(ms), int(seq or 0)


#: The bytes of a bound pod's JSON that an unbound one lacks (spec.nodeName; the same key
#: inside a string value would have its quotes escaped, and the API server omits an empty one).
BOUND_MARK = b'"nodeName":"'


class ListSkip:
    """What a reader's initial list may pass over unread: pods bound to a node, unless they
    carry one of the labels `unless` (e.g. the pod-group label, for a reader that counts a
    group's bound members). A store that keeps a pod's node apart from its document (Redis'
    state record) skips such a pod before decoding it: its document is only searched for
    the labels' names as bytes, which can only keep a pod that might carry one. Others
    decode it and look (`skips`)."""

    __slots__ = ("unless", "markers")

    def __init__(self, unless: Iterable[str] = ()):
        self.unless = tuple(sorted(set(unless)))
        self.markers = tuple(f'"{k}"'.encode() for k in self.unless)

    def skips(self, obj: dict) -> bool:
        """Whether the (decoded) pod `obj` is passed over."""
        if not (obj.get("spec") or {}).get("nodeName"):
            return False
        labels = (obj.get("metadata") or {}).get("labels")
        return not (isinstance(labels, dict) and any(k in labels for k in self.unless))

    def skips_record(self, node: str, data: bytes) -> bool:
        """Whether the stored pod `data` (undecoded JSON) bound to `node` ("" = none) is
        passed over: bound, and none of the labels' names appear anywhere in it."""
        return bool(node) and not any(m in data for m in self.markers)

    def __or__(self, other: "ListSkip") -> "ListSkip":
        """What both may pass over: bound pods with none of either's labels."""
        return ListSkip(self.unless + other.unless)

    def __eq__(self, other):
        return isinstance(other, ListSkip) and self.unless == other.unless

    def __hash__(self):
        return hash(self.unless)

    def __repr__(self):
        return f"ListSkip(unless={list(self.unless)})"


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")


def prepare_many(objs: Iterable[dict], errors: list) -> Iterator[tuple[str, str, dict]]:
    """`prepare` each object for a bulk create; rejected ones go to `errors`, the rest flow on."""
    for obj in objs:
        try:
            yield prepare(obj)
        except ObjectError as e:
            errors.append(e)


def prepare(obj: dict, new: bool = True) -> tuple[str, str, dict]:
    """Validate `obj` and return (kind, key, copy to store) with server-set fields filled in.

    Any client may write, so the store itself enforces the limits on every object (size,
    nesting, JSON values: common.model.limits) before the kind's own parse. The caller's dict is
    not modified. The copy has no resourceVersion (the backend stamps
    the event's) and the "default" namespace when a namespaced object has none; for a `new`
    object it also gets a uid and creationTimestamp when missing.
    """
    check_object(obj)
    parsed = parse_object(obj)
    meta = dict(obj["metadata"])
    meta.pop("resourceVersion", None)
    if new and not meta.get("uid"):
        meta["uid"] = str(uuid.uuid4())
    if new and not meta.get("creationTimestamp"):
        meta["creationTimestamp"] = now_rfc3339()
    if parsed.kind in NAMESPACED and not meta.get("namespace"):
        meta["namespace"] = "default"
    out = dict(obj)
    out["metadata"] = meta
    if new and parsed.kind == "Pod":
        mark_gated(out, meta["creationTimestamp"])
    return parsed.kind, parsed.key, out


def check_update(current: dict | None, obj: dict, expected_rv: str) -> None:
    """The API server's preconditions for replacing `current` by `obj` (Conflict if not met):
    it exists, it is the same object (uid), nobody wrote it since `expected_rv` ("" = any),
    and a bound pod keeps its node (only pods have spec.nodeName)."""
    if current is None:
        raise Conflict("NotFound")
    if current["metadata"].get("uid") != obj["metadata"]["uid"]:
        raise Conflict("UIDMismatch")
    if expected_rv and current["metadata"]["resourceVersion"] != expected_rv:
        raise Conflict("ResourceVersionMismatch")
    bound_to = (current.get("spec") or {}).get("nodeName")
    if bound_to and bound_to != (obj.get("spec") or {}).get("nodeName"):
        raise Conflict("NodeNameImmutable")


def already_exists(kind: str, key: str) -> ObjectError:
    """How bulk creation reports a name that is taken (the rest of the batch goes on)."""
    return ObjectError(f"{kind} {key}", "metadata.name", "already exists")


class Listeners:
    """The rings `ClusterStore.listen` was given, for a store whose own threads learn of new
    events (the memory store's writes, kube://'s watches): `notify`, called with the store's
    condition held, wakes the reads waiting on that condition and rings each."""

    def __init__(self, cond: threading.Condition):
        self._cond = cond
        self._rings: tuple = ()

    def add(self, ring) -> None:
        with self._cond:
            self._rings = (*self._rings, ring)

    def notify(self) -> None:
        self._cond.notify_all()
        for ring in self._rings:
            ring()


class ClusterStore(ABC):
    """Abstract store. Backends implement the batched primitives; the single-object
    conveniences and `watch` live here so that every backend behaves the same."""

    #: Records the backend found unreadable (malformed by another writer) and skipped, each
    #: logged with its id: one bad record must never stop a reader.
    skipped_records = 0
    #: Whether each list is a round trip worth overlapping with the others: an informer
    #: then opens the lists of all its kinds at once (common/runtime/informer.py), rather
    #: than waiting for one answer before it asks for the next.
    lists_in_parallel = False

    # --- reads ---------------------------------------------------------------------------

    @abstractmethod
    def list(self, kind: str, cached: bool = False) -> tuple[list[dict], str]:
        """All objects of `kind` and the rv this snapshot reflects. `cached`: a list that may
        lag a little behind the newest writes, as an informer's first list may (its watch
        brings it up to date), where a store has a cheaper one (the API server's watch cache)."""

    def list_iter(self, kind: str, cached: bool = False,
                  skip: ListSkip | None = None) -> tuple[Iterator[dict], str]:
        """`list`, for a reader that applies each object once and keeps what it needs: the
        objects one at a time (a backend decodes each only when it is reached, and lets go of
        what it has handed out, so a list of a million pods is never held whole), without the
        pods `skip` passes over (kind Pod only). The snapshot and its rv are taken at once,
        as `list`'s are."""
        objs, rv = self.list(kind, cached)

        def each():
            while objs:
                obj = objs.pop()
                if skip is None or not skip.skips(obj):
                    yield obj
        objs.reverse()
        return each(), rv

    @abstractmethod
    def get(self, kind: str, key: str) -> dict | None:
        """One object by key ("namespace/name" or "name"), or None."""

    @abstractmethod
    def _read(self, since_rv: str, timeout: float, max_events: int,
              kinds: frozenset | None, positions: dict[str, str] | None = None
              ) -> tuple[list[WatchEvent], str | None]:
        """Up to `max_events` events after `since_rv`, blocking up to `timeout` for the first.

        Returns the events of `kinds` (all when None) and the rv of the last event scanned,
        matching or not, so that filtered readers can move past what they skipped.
        Raises ResourceVersionTooOld when history after `since_rv` has been trimmed.
        `positions` (kind -> the rv its reader has seen up to) matters only to a store
        that watches each kind apart; one history for all kinds ignores it.
        """

    def listen(self, ring) -> bool:
        """Call `ring()` whenever new watch events arrive, from then on (from the thread that
        received them, which must not wait on the caller); returns False where the store
        cannot (Redis: its events wait on the server until a read asks), and then never
        calls it. A reader uses it to wait for events and other work at once
        (common.runtime.links.Doorbell)."""
        return False

    #: whether `read` can pass over the events its `skip` names before decoding them
    skips_unread = False
    #: whether `read` can leave out, undecoded, the events a later one it read supersedes
    collapses_unread = False

    def poll(self, since_rv: str, timeout: float = 1.0, max_events: int = 10000,
             kinds: Iterable[str] | None = None, positions: dict[str, str] | None = None,
             pace: PollPace | None = None) -> list[WatchEvent]:
        """Events strictly after `since_rv`, or [] once `timeout` seconds pass without any.
        `positions`: how far the reader has seen each kind (see _read); an informer passes
        its lists' versions, which on the API server differ per kind. `pace`: the reader's
        PollPace, which spaces its waiting polls."""
        return self.read(since_rv, timeout, max_events, kinds, positions, pace=pace)[0]

    def read(self, since_rv: str, timeout: float = 1.0, max_events: int = 10000,
             kinds: Iterable[str] | None = None, positions: dict[str, str] | None = None,
             skip: "EventSkip | None" = None, pace: PollPace | None = None,
             latest: bool = False, undecoded: bool = False) -> tuple[list[WatchEvent], str | None]:
        """`poll`, and the rv it read up to (None when it read nothing), from which the reader
        continues: with `skip`, a poll may read only events it passes over; with `pace` (the
        reader's PollPace), every poll that may wait first lets events gather (a read that
        brought only events it passed over polls again, paced too).

        `skip(kind, type_, key, bound, data) -> bool` names the events the reader does not
        need, judged without decoding them: a store that keeps events as bytes
        (`skips_unread`: Redis) asks it of every event of `kinds`, with the object's key,
        whether the event shows a pod bound to a node (from the store's own bookkeeping:
        exact for the writes the stores make) and the stored document's bytes (to search
        for a label's name), and leaves out those it answers True for. It asks before any
        event of the read is applied: a skip must judge what cannot concern the reader
        whatever the events before it did, and never change the reader. An event the store
        can tell is a pod's status-only write carries its status hint (`status`: a JSON list
        of the new phase, startTime and nominatedNodeName; Redis's StatusEvent) and is
        decoded only when its `obj` is read (common.runtime.informer takes it in order).
        Every process reads
        every event, and at a paced rate most of a process's time on the store goes to
        decoding events it then ignores. Other stores deliver every event: `skip` is a
        hint, and a reader still ignores what it does not need itself.

        `latest`: the reader keeps only each object's last event of those read (a shard
        catching up after its list, common.runtime.informer's `latest`); a store that can
        (`collapses_unread`: Redis) leaves the superseded ones out undecoded; others deliver
        them all, and the reader drops them itself.

        `undecoded`: the reader may hold events it does not need yet without decoding them
        (common.runtime.informer's take_undecoded); a store that can (`skips_unread`:
        Redis) delivers a pod's creation, its whole document as stored, undecoded until its
        `obj` is read (`document`: the bytes; Redis's StoredEvent)."""
        wanted = frozenset(kinds) if kinds is not None else None
        extra = {"skip": skip} if skip is not None and self.skips_unread else {}
        if latest and self.collapses_unread:
            extra["latest"] = True
        if undecoded and self.skips_unread:
            extra["undecoded"] = True
        deadline = time.monotonic() + timeout
        read_to = None
        while True:
            wait = max(0.0, deadline - time.monotonic())
            if pace is not None:
                wait = pace.wait(wait)
            events, last = self._read(since_rv, wait, max_events, wanted, positions, **extra)
            read_to = last or read_to
            if events or last is None or time.monotonic() >= deadline:
                return events, read_to
            since_rv, positions = last, None  # only other kinds changed: keep waiting past them

    def watch(self, since_rv: str, kinds: Iterable[str] | None = None,
              stop: threading.Event | None = None, poll_timeout: float = 0.5) -> Iterator[WatchEvent]:
        """Yield events after `since_rv` until `stop` is set (checked every `poll_timeout`)."""
        wanted = frozenset(kinds) if kinds is not None else None
        rv = since_rv
        while stop is None or not stop.is_set():
            events, last = self._read(rv, poll_timeout, 10000, wanted)
            yield from events
            if last is not None:
                rv = last

    # --- generic writes ------------------------------------------------------------------

    @abstractmethod
    def create(self, obj: dict) -> dict:
        """Validate and store a new object; returns it as stored. Raises ObjectError, or
        Conflict("AlreadyExists")."""

    @abstractmethod
    def create_many(self, objs: Iterable[dict]) -> list:
        """Create in bulk. Invalid objects are skipped and returned as ObjectErrors, objects
        that already exist as ObjectErrors on metadata.name; everything else is created."""

    @abstractmethod
    def _update(self, kind: str, key: str, obj: dict, expected_rv: str) -> dict:
        """Replace a prepared object; `expected_rv` ("" = any) guards against lost updates."""

    def update(self, obj: dict) -> dict:
        """Replace an existing object (MODIFIED event).

        Like the API server: when obj carries metadata.resourceVersion, the write only
        succeeds if nobody wrote the object since (else Conflict("ResourceVersionMismatch"));
        uid and creationTimestamp are kept from the stored object when obj has none.
        A bound pod's spec.nodeName cannot change (Conflict("NodeNameImmutable")): an update
        from a stale copy must never make a bound pod pending again, or it could be bound twice.
        Raises Conflict("NotFound") if the object does not exist.
        """
        return self._update(*self._for_update(obj))

    def update_status(self, obj: dict) -> dict:
        """Write `obj`'s status (a PodGroup's; a pod's, as a kubelet does), with update's
        preconditions. The API server takes it through the status subresource and keeps the
        rest of the stored object; the other backends have no subresources and write the
        whole object."""
        return self._update_status(*self._for_update(obj))

    def update_status_many(self, objs: Iterable[dict]) -> list[str | None]:
        """update_status of each object; one result per object: None, or the reason of its
        Conflict. (A backend may write them in fewer round trips: kubelets' status writes,
        as the embedded bench's churn plays them, come by the thousand.)"""
        out: list[str | None] = []
        for obj in objs:
            try:
                self.update_status(obj)
                out.append(None)
            except Conflict as e:
                out.append(str(e))
        return out

    def _update_status(self, kind: str, key: str, obj: dict, expected_rv: str) -> dict:
        return self._update(kind, key, obj, expected_rv)

    def _for_update(self, obj: dict) -> tuple[str, str, dict, str]:
        kind, key, stored = prepare(obj, new=False)
        expected_rv = str(obj["metadata"].get("resourceVersion") or "")
        meta = stored["metadata"]
        if not meta.get("uid") or not meta.get("creationTimestamp"):
            current = self.get(kind, key)
            if current is None:
                raise Conflict("NotFound")
            meta["uid"] = meta.get("uid") or current["metadata"]["uid"]
            meta["creationTimestamp"] = meta.get("creationTimestamp") or current["metadata"]["creationTimestamp"]
        return kind, key, stored, expected_rv

    @abstractmethod
    def delete(self, kind: str, key: str) -> bool:
        """Delete (DELETED event carrying the last state); False if it did not exist."""

    # --- the scheduler's writes ----------------------------------------------------------

    @abstractmethod
    def bind_many(self, bindings: Iterable[tuple[str, str, str | None]]) -> list[str | None]:
        """Bind (pod_key, node, uid) triples, each atomically; one result per triple: None
        on success, else "PodNotFound", "UIDMismatch", "AlreadyBound" or "SchedulingGated"
        (the pod still has scheduling gates, which the API server refuses to bind)."""

    def bind(self, pod_key: str, node: str, uid: str | None = None) -> None:
        """Set spec.nodeName (phase Running, PodScheduled=True, nomination cleared), or raise
        Conflict when the pod is gone, is another pod with the same name, or is bound."""
        reason = self.bind_many([(pod_key, node, uid)])[0]
        if reason is not None:
            raise Conflict(reason)

    @abstractmethod
    def evict_many(self, evictions: Iterable[tuple[str, str | None]],
                   respect_budgets: bool = True) -> list[str | None]:
        """Delete (pod_key, uid) pairs; None on success, else "PodNotFound"/"UIDMismatch", or
        "DisruptionBudget" where the store enforces PodDisruptionBudgets (the API server's
        Eviction API) and `respect_budgets`. With respect_budgets=False the pods are deleted
        outright, as kube-scheduler deletes victims whose eviction would break a budget."""

    def evict(self, pod_key: str, uid: str | None = None) -> None:
        reason = self.evict_many([(pod_key, uid)])[0]
        if reason is not None:
            raise Conflict(reason)

    @abstractmethod
    def set_nominated_node(self, pod_key: str, node: str | None) -> bool:
        """Set (or with None clear) status.nominatedNodeName of a pending pod. Returns False,
        writing nothing, when the pod is gone or already bound."""

    @abstractmethod
    def set_unschedulable(self, pod_key: str, message: str) -> bool:
        """Record PodScheduled=False/Unschedulable with `message`. Returns False, writing
        nothing, when the pod is gone, bound, or already carries exactly this condition."""

    def set_unschedulable_many(self, items: Iterable[tuple[str, str]]) -> list[bool]:
        """set_unschedulable for each (pod_key, message), one result each; backends batch it
        (the status writer sends its coalesced conditions this way)."""
        return [self.set_unschedulable(key, message) for key, message in items]

    # --- events: what kube's event recorder writes (see common/runtime/events.py) ------------------

    @abstractmethod
    def write_events(self, events: list[dict]) -> list[str | None]:
        """Record events.k8s.io/v1 Events (each with metadata.name and .namespace): create
        each, or, when it carries a `series` (an event seen again), update the one of that
        name (created afresh when it is gone, as client-go does). One result per event: None
        when written, else why not; events are best effort, a refused one is not retried."""

    @abstractmethod
    def list_events(self) -> list[dict]:
        """The stored Events of every namespace (expired ones, older than EVENT_TTL_S, gone)."""

    # --- leases: liveness of runtime processes -------------------------------------------

    @abstractmethod
    def put_lease(self, role: str, id_: str, address: str, ttl_s: float) -> None:
        """Create or renew; the lease vanishes `ttl_s` seconds after the last renewal."""

    @abstractmethod
    def acquire_lease(self, role: str, id_: str, holder: str, ttl_s: float) -> bool:
        """Take or renew an exclusive lease: True when `holder` holds it for the next `ttl_s`
        seconds (it was free, expired, or already `holder`'s), False when another holder's is
        still live. Atomic against every other caller, as client-go's leader election."""

    @abstractmethod
    def list_leases(self, role: str) -> dict[str, str]:
        """Live leases of `role`: id -> address (the holder)."""

    @abstractmethod
    def drop_lease(self, role: str, id_: str, holder: str | None = None) -> None:
        """Delete the lease; with `holder`, only while that holder holds it (nobody deletes
        a lease another process took over)."""

    def close(self) -> None:
        """Release connections; the default has nothing to release."""
