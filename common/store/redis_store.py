"""`redis://`: the store for local runs and benchmarks (see redis_scripts.py for the layout).

Writes are Lua scripts (atomic check + write + event), bulk writes send many objects per
script call and many calls per pipeline, and `list` reads the hashes and the stream head in
one MULTI so the snapshot and its rv agree. Needs Redis >= 6.2 (exclusive XRANGE bounds).
"""
from __future__ import annotations

import functools
import hashlib
import logging
import queue
import re
import threading
import time
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

import orjson
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from ..errors import Conflict, ObjectError, ResourceVersionTooOld, StoreUnavailable
from ..model.objects import KINDS, object_key
from . import redis_scripts
from .base import (EVENT_TTL_S, ClusterStore, WatchEvent, already_exists, check_kind, prepare, prepare_many,
                   rv_order)
from .podstatus import apply_patch, gated, now_rfc3339, scheduled_condition

_CHUNK = 1000            # objects per script call: bounds how long one call blocks Redis
_CHUNKS_PER_PIPELINE = 8  # script calls per pipeline: bounds client-side buffering
_LIST_PAGE = 2000        # objects per read of a paged list (list_iter)
_READ_AHEAD = 2          # pages a list's reader thread may hold ahead of the caller
_BLOCK_S = 2.0           # longest single XREAD BLOCK; must stay well under the socket timeout
#: how often write_events looks for Events older than EVENT_TTL_S, in seconds
_EXPIRE_EVERY_S = 10.0
#: how often a reader polling without waiting has an empty read checked for a trimmed or
#: rolled back history (RedisStore._follow)
_RECHECK_S = 0.5
_RV = re.compile(r"^\d+-\d+$")
_EVENT_TYPES = frozenset((b"ADDED", b"MODIFIED", b"DELETED"))
_KIND_NAMES = frozenset(k.encode() for k in KINDS)
#: What a record that does not follow the layout raises while it is read.
_MALFORMED = (ValueError, TypeError, KeyError, IndexError, AttributeError)

log = logging.getLogger(__name__)


def redacted(url: str) -> str:
    """The URL without a password, for messages."""
    parts = urlsplit(url)
    if parts.password:
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    return urlunsplit(parts)


def _translated(method):
    """Turn redis-py's connection failures into one StoreUnavailable naming the server."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as e:
            cause = e.__context__ if isinstance(e.__context__, OSError) else None
            reason = (cause.strerror or str(cause)) if cause is not None else str(e)
            raise StoreUnavailable(f"cannot reach redis at {self._where}: {reason}") from None
    return wrapper


def _state(kind: str, obj: dict) -> bytes:
    """The state record (without rv) the scripts check bind/evict/patch against; for a pod
    also `h`, the digest of all it holds but its status and node (kept: the next write is
    compared with it), and `s`, the status hint (only handed to the script, never kept)."""
    st = {"uid": obj["metadata"]["uid"]}
    if kind == "Pod":
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        st["node"] = spec.get("nodeName") or ""
        st["nom"] = status.get("nominatedNodeName") or ""
        st["h"] = _digest(obj)
        st["s"] = status_hint(status)
        if gated(obj):
            st["gated"] = "1"
        cond = scheduled_condition(obj)
        if cond is not None:
            st["cond"] = {k: str(cond[k]) for k in ("status", "reason", "message") if cond.get(k)}
    return orjson.dumps(st)


def _digest(pod: dict) -> str:
    """What a pod holds but its status, its node and its resourceVersion, as a 64-bit digest:
    two writes with the same digest (and node) differ in their status only. A write that
    orders the same keys differently just gets no status hint."""
    rest = {k: v for k, v in pod.items() if k != "status"}
    meta, spec = rest.get("metadata"), rest.get("spec")
    if isinstance(meta, dict) and "resourceVersion" in meta:
        rest["metadata"] = {k: v for k, v in meta.items() if k != "resourceVersion"}
    if isinstance(spec, dict) and "nodeName" in spec:
        rest["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
    return hashlib.blake2b(orjson.dumps(rest), digest_size=8).hexdigest()


def status_hint(status: dict) -> str:
    """The part of a pod's status every role keeps (phase, startTime, nominatedNodeName), as
    the stream entry of a status-only write carries it: a JSON list of three strings."""
    return orjson.dumps([str(status.get(f) or "") for f in ("phase", "startTime", "nominatedNodeName")]).decode()


def _merged(o: bytes, patch: dict | None, rv: str) -> dict:
    """The object as clients see it: stored JSON + pending patch + its rv. Raises one of
    _MALFORMED when the record is not an object with a metadata mapping."""
    obj = orjson.loads(o)
    if patch:
        apply_patch(obj, patch)
    obj["metadata"]["resourceVersion"] = rv
    return obj


def _event(id_: bytes, flat: list, wanted, skip=None, undecoded: bool = False) -> WatchEvent | None:
    """The event of one stream entry (None when its kind is not `wanted`, or `skip`, a
    reader's common.store.base.EventSkip, passes over it). The fields are prev, t, k, n,
    o[, p][, s] in this order (redis_scripts._EMIT); the fixed five are read by position,
    since every process reads every event, the optional ones by name (an entry written
    before `s` existed has none); an entry that does not follow that layout raises one of
    _MALFORMED. An entry with a status hint becomes a StatusEvent, decoded when read; with
    `undecoded` (the reader may hold some events undecoded: ClusterStore.read), a pod's
    creation and a write with a patch naming its node (a binding), their document looking
    whole (_looks_whole), become StoredEvents (the patch decoded, the document not)."""
    if len(flat) < 10 or flat[2] != b"t" or flat[4] != b"k" or flat[8] != b"o":
        raise ValueError("not an event entry (fields prev, t, k, n, o)")
    type_, kind = flat[3], flat[5]
    if kind not in _KIND_NAMES:
        raise ValueError(f"unknown kind {kind[:40]!r}")
    if type_ not in _EVENT_TYPES:
        raise ValueError(f"unknown event type {type_[:40]!r}")
    if wanted is not None and kind not in wanted:
        return None
    patch = hint = None
    for i in range(10, len(flat) - 1, 2):
        if flat[i] == b"p":
            patch = flat[i + 1]
        elif flat[i] == b"s":
            hint = flat[i + 1]
    if skip is not None and skip(kind.decode(), type_.decode(), flat[7].decode(), _bound(flat[9], patch), flat[9]):
        return None
    rv = id_.decode()
    if hint is not None:
        return StatusEvent(type_.decode(), kind.decode(), rv, flat[7].decode(), flat[9], patch, hint)
    if undecoded and kind == b"Pod" and _looks_whole(flat[9]):
        if type_ == b"ADDED" and patch is None:
            return StoredEvent("ADDED", "Pod", rv, flat[7].decode(), flat[9], None)
        if type_ == b"MODIFIED" and patch is not None and b'"node":"' in patch:
            fields = orjson.loads(patch)
            if fields.__class__ is dict:
                return StoredEvent("MODIFIED", "Pod", rv, flat[7].decode(), flat[9], fields)
    return WatchEvent(type_.decode(), kind.decode(), _merged(flat[9], orjson.loads(patch) if patch is not None else None, rv), rv)


def _last_of_each(entries: list) -> list:
    """The stream entries that are their object's last among `entries` (by kind and key,
    read by position as _event reads them), in stream order; an entry without those fields
    stays (_event reports it)."""
    last: dict = {}
    for i, (_, flat) in enumerate(entries):
        last[(flat[5], flat[7]) if len(flat) >= 8 else i] = i
    if len(last) == len(entries):
        return entries
    return [entries[i] for i in sorted(last.values())]


def _looks_whole(o: bytes) -> bool:
    """Whether a stored document looks like a JSON object with a metadata mapping, judged on
    its bytes (as the store writes them: compact): one that does not is decoded at once, so
    that a malformed record is counted and logged when read (skipped_records), as before
    events could be held undecoded. One that looks whole but does not decode fails when its
    reader first reads it."""
    return o[:1] == b"{" and o[-1:] == b"}" and b'"metadata":{' in o


class StoredEvent(WatchEvent):
    """A pod's event handed over undecoded (ClusterStore.read's `undecoded`): `document`,
    the stored document's bytes, and `patch`, its pending patch (decoded: it is small), or
    None; `obj`, decoded when first read, is the document with the patch folded in, as any
    event's. A shard holds another shard's pending pods this way until one is dispatched
    to it, and a shard or binder takes the binding of a pod it parsed pending from the
    binding's patch alone (common.runtime.intake's take_undecoded). Reading `obj` of a
    document that does not decode raises one of _MALFORMED."""

    __slots__ = ("key", "document", "patch", "_obj")

    def __init__(self, type_: str, kind: str, rv: str, key: str, document: bytes, patch: dict | None):
        self.type, self.kind, self.rv, self.key = type_, kind, rv, key
        self.document, self.patch, self._obj = document, patch, None

    @property
    def obj(self) -> dict:
        if self._obj is None:
            self._obj = _merged(self.document, self.patch, self.rv)
        return self._obj


class StatusEvent(WatchEvent):
    """The event of a status-only write (its entry's status hint, redis_scripts), its `obj`
    decoded when first read: a reader that holds the pod bound takes the write from `status`
    alone (common.runtime.informer, in the events' order), and the document is never
    decoded. Reading `obj` of an entry that does not decode raises one of _MALFORMED."""

    __slots__ = ("key", "status", "_o", "_patch", "_obj")

    def __init__(self, type_: str, kind: str, rv: str, key: str, o: bytes, patch: bytes | None, status: bytes):
        self.type, self.kind, self.rv, self.key, self.status = type_, kind, rv, key, status
        self._o, self._patch, self._obj = o, patch, None

    @property
    def obj(self) -> dict:
        if self._obj is None:
            patch = self._patch
            self._obj = _merged(self._o, orjson.loads(patch) if patch is not None else None, self.rv)
            self._o = self._patch = None
        return self._obj


def _bound(o: bytes, patch: bytes | None) -> bool:
    """Whether a pod event's record shows it bound, undecoded: the binding script's patch
    names the node (cjson's "node":"n1"), and a whole document written since has its
    spec.nodeName. (A label or annotation written as "nodeName":"x" would read as bound
    too: the skips that use it also require that the reader does not hold the pod.)"""
    if patch is not None and b'"node":"' in patch and b'"node":""' not in patch:
        return True
    return b'"nodeName":"' in o and b'"nodeName":""' not in o


def _read_ahead(pages, what: str):
    """The items of the iterator `pages`, each produced by a thread while the caller works on
    the one before: a list's round trips (Redis answering a page, the reply read off the
    socket, both GIL-free) overlap the decoding and parsing of the page before, which used
    to wait for them. At most _READ_AHEAD pages are held ahead. The reader's error is raised
    where its page would have come; a caller that stops early (the generator closed) stops
    the reader before its next page."""
    ahead: queue.Queue = queue.Queue(_READ_AHEAD)
    stop = threading.Event()
    done = object()

    def reader():
        it = iter(pages)
        while not stop.is_set():
            try:
                item, error = next(it, done), None
            except BaseException as e:  # handed to the caller, which raises it
                item, error = None, e
            while not stop.is_set():
                try:
                    ahead.put((item, error), timeout=0.5)
                    break
                except queue.Full:
                    continue
            if item is done or error is not None:
                return

    thread = threading.Thread(target=reader, name=f"read-ahead {what}", daemon=True)
    thread.start()
    try:
        while True:
            item, error = ahead.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()


def _prev(entry) -> str | None:
    """The id an entry names as its predecessor (None when the entry is malformed)."""
    flat = entry[1]
    if len(flat) > 1 and flat[0] == b"prev":
        prev = flat[1].decode(errors="replace")
        if _RV.match(prev):
            return prev
    return None


#: How long the event stream keeps events (store.historySeconds): twice the API server's
#: watch cache window (75 s), since a million pods' list takes over a minute on two cores.
DEFAULT_HISTORY_S = 150.0


class RedisStore(ClusterStore):
    """Client of one Redis database; several instances (and processes) can share it.

    `prefix` namespaces every key, so tests or several clusters can share one server.

    The event stream keeps the events of the last `history_seconds` (XADD MINID ~), as the
    API server's watch cache keeps a window of time, not of count: a process that lists and
    then watches from the list's snapshot needs every event written while it listed, and a
    million running pods take a minute and more to list while the cluster writes thousands
    of events a second. A count (`history`, about that many kept: XADD MAXLEN ~) ran out
    before such a list ended (100,000 events were 30-60 s of a busy large cluster): the
    reader relisted, and again, never ready. `history` is for tests that need trimming now.
    """

    def __init__(self, url: str, prefix: str = "shardsched:", history: int | None = None,
                 max_in_flight: int | None = None, history_seconds: float = DEFAULT_HISTORY_S):
        """`max_in_flight`: concurrent requests this client may have (its connection pool's
        size; None = redis-py's default, effectively unbounded)."""
        if history is not None and history < 1:
            raise ValueError("history must be at least 1")
        if history is None and not history_seconds > 0:
            raise ValueError("history_seconds must be above 0")
        self._where = redacted(url)
        self._r = redis.Redis.from_url(
            url, socket_connect_timeout=3, socket_timeout=_BLOCK_S + 8,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
            **({"max_connections": max_in_flight + 8} if max_in_flight else {}))
        # Stream entries stay flat lists (read by position in _read), not a dict each.
        self._r.set_response_callback("XRANGE", lambda response, **options: response)
        self._r.set_response_callback("XREAD", lambda response, **options: response)
        #: each write script's first argument: how the stream is trimmed (redis_scripts)
        self._history = history if history is not None else f"a{round(history_seconds * 1000)}"
        self._checked_at = float("-inf")  # when _follow last checked an empty read in full
        self._expired_at = float("-inf")  # when write_events last looked for expired Events
        self._stream = f"{prefix}events"
        self._prefix = prefix
        self._put = self._r.register_script(redis_scripts.PUT)
        self._delete = self._r.register_script(redis_scripts.DELETE)
        self._patch = self._r.register_script(redis_scripts.PATCH)
        self._leases = self._r.register_script(redis_scripts.LEASES)
        self._acquire_lease = self._r.register_script(redis_scripts.ACQUIRE_LEASE)
        self._drop_lease = self._r.register_script(redis_scripts.DROP_LEASE)
        self._check_server()

    @_translated
    def _check_server(self) -> None:
        version = self._r.info("server")["redis_version"]
        if tuple(int(x) for x in version.split(".")[:2]) < (6, 2):
            raise StoreUnavailable(f"redis at {self._where} is version {version}; shardsched needs >= 6.2")

    def _keys(self, kind: str) -> list[str]:
        return [self._stream, f"{self._prefix}obj:{kind}", f"{self._prefix}st:{kind}"]

    def close(self) -> None:
        self._r.close()

    # --- reads ----------------------------------------------------------------------------

    @_translated
    def list(self, kind: str, cached: bool = False) -> tuple[list[dict], str]:
        check_kind(kind)
        _, objs_key, st_key = self._keys(kind)
        pipe = self._r.pipeline(transaction=True)
        pipe.hgetall(objs_key).hgetall(st_key).xrevrange(self._stream, count=1)
        objs, states, head = pipe.execute()
        rv = head[0][0].decode() if head else "0-0"
        out = []
        for key in states:  # in the state records' order, as list_iter reads them
            o = objs.pop(key, None)
            obj = self._object(kind, key, o, states[key]) if o is not None else None
            if obj is not None:
                out.append(obj)
        for key, o in objs.items():  # no state record: reported
            self._object(kind, key, o, None)
        return out, rv

    @_translated
    def list_iter(self, kind: str, cached: bool = False, skip=None):
        """The list read in pages, one object decoded at a time. The snapshot is the stream's
        head (the list's rv), taken in one MULTI with the two hashes' sizes; the state records
        are then scanned a page at a time (HSCAN), each page's objects read with their records
        again in one MULTI. An object whose record is newer than the snapshot (written after
        it) or gone since is left out: the watch from the snapshot's rv brings its newer
        events, ending with its current version. What a scan meets twice (the hash rehashed
        as it grew) is delivered once. A pod `skip` passes over is judged on its state
        record's node and its stored bytes, never decoded.

        No command answers more than a page: Redis answers one command at a time, and one
        HGETALL of a million running pods' records held the server for seconds, stalling
        every other process while a restarted shard listed. At most a page of stored JSON is
        held at once (the keys seen so far are kept, to deliver each once). Objects come in
        the scan's order, not `list`'s (no reader depends on a list's order)."""
        check_kind(kind)
        _, objs_key, st_key = self._keys(kind)
        pipe = self._r.pipeline(transaction=True)
        pipe.hlen(objs_key).hlen(st_key).xrevrange(self._stream, count=1)
        stored, recorded, head = pipe.execute()
        rv = head[0][0].decode() if head else "0-0"
        if kind != "Pod":
            skip = None
        if stored != recorded:  # a record without its object, or an object without one
            self._report_unrecorded(kind, objs_key, st_key)
        snapshot = rv_order(rv)

        def each():
            for keys, objs, now in _read_ahead(self._scan_pages(objs_key, st_key), f"{kind} list"):
                for key, o, st in zip(keys, objs, now):
                    if o is None or st is None:
                        continue  # deleted since the snapshot: the watch has it
                    try:
                        state = orjson.loads(st)
                        if rv_order(state["rv"]) > snapshot:
                            continue  # written after the snapshot: the watch has it
                    except _MALFORMED as e:
                        self._skip(f"stored {kind} {key.decode(errors='replace')}", e)
                        continue
                    if skip is not None and skip.skips_record(state.get("node") or "", o):
                        continue
                    obj = self._object(kind, key, o, st, state)
                    if obj is not None:
                        yield obj
        return each(), rv

    def _scan_pages(self, objs_key: str, st_key: str):
        """(keys, objects, state records) a page at a time: the state hash's keys by HSCAN,
        each key once, then the page's objects and records read together in one MULTI."""
        seen: set[bytes] = set()
        cursor = 0
        while True:
            try:
                cursor, records = self._r.hscan(st_key, cursor, count=_LIST_PAGE)
                keys = [k for k in records if k not in seen]
                seen.update(keys)
                if keys:
                    p = self._r.pipeline(transaction=True)
                    objs, now = p.hmget(objs_key, keys).hmget(st_key, keys).execute()
                    yield keys, objs, now
            except (redis.ConnectionError, redis.TimeoutError) as e:
                raise StoreUnavailable(f"cannot reach redis at {self._where}: {e}") from None
            if cursor == 0:
                return

    def _report_unrecorded(self, kind: str, objs_key: str, st_key: str) -> None:
        """Report each stored object that has no state record, the objects' keys scanned a
        page at a time (only when the hashes' sizes disagree: a damaged store)."""
        cursor = 0
        while True:
            cursor, keys = self._r.hscan(objs_key, cursor, count=_LIST_PAGE)
            keys = list(keys)
            if keys:
                for key, st in zip(keys, self._r.hmget(st_key, keys)):
                    if st is None:
                        self._skip(f"stored {kind} {key.decode(errors='replace')}", KeyError("it has no state record"))
            if cursor == 0:
                return

    @_translated
    def get(self, kind: str, key: str) -> dict | None:
        check_kind(kind)
        _, objs_key, st_key = self._keys(kind)
        pipe = self._r.pipeline(transaction=True)
        o, st = pipe.hget(objs_key, key).hget(st_key, key).execute()
        return None if o is None else self._object(kind, key, o, st)

    def _object(self, kind: str, key, o: bytes, st: bytes | None, state: dict | None = None) -> dict | None:
        """A stored object with its state record folded in (`state`: the record already
        decoded); None (logged and counted) when the pair is unreadable: no state record, or
        either one malformed."""
        try:
            if st is None:
                raise KeyError("it has no state record")
            if state is None:
                state = orjson.loads(st)
            return _merged(o, state.get("p"), state["rv"])
        except _MALFORMED as e:
            self._skip(f"stored {kind} {key.decode(errors='replace') if isinstance(key, bytes) else key}", e)
            return None

    def _skip(self, what: str, e: Exception) -> None:
        self.skipped_records += 1
        log.warning("skipping %s: not a record shardsched can read (%s: %s)", what, type(e).__name__, e)

    skips_unread = True
    collapses_unread = True

    @_translated
    def _read(self, since_rv, timeout, max_events, kinds, positions=None, skip=None, latest=False,
              undecoded=False):
        since = "0-0" if since_rv == "0" else since_rv
        if not _RV.match(since):
            raise ValueError(f"not a redis resourceVersion: {since_rv!r}")
        entries = self._follow(since, timeout, max_events)
        events = []
        wanted = None if kinds is None else {k.encode() for k in kinds}
        # The skip is asked of each entry before the reader has applied any of them, so it
        # answers for the reader as it was before this read: an object delivered earlier in
        # the same read (a pod created, then bound) has its later entries delivered too.
        delivered: set = set()
        for id_, flat in (_last_of_each(entries) if latest else entries):
            try:
                ev = _event(id_, flat, wanted, skip if skip is None or not delivered
                            or (flat[5], flat[7]) not in delivered else None, undecoded)
            except _MALFORMED as e:
                self._skip(f"event stream entry {id_.decode()}", e)
                continue
            if ev is not None:
                events.append(ev)
                if skip is not None:
                    delivered.add((flat[5], flat[7]))
        return events, (entries[-1][0].decode() if entries else None)

    def _follow(self, since: str, timeout: float, count: int) -> list:
        """The raw stream entries after `since`, waiting up to `timeout` seconds for the first.

        One XREAD (blocking when there is time to wait) per call in the usual case: every
        entry names its predecessor (prev), so a first entry whose prev is `since` follows
        it with nothing missing, and the entries after it in one read are contiguous (trimming
        only takes from the stream's head). A paced rate brings a few events per poll, so the
        poll's fixed cost is most of what a process pays per event: one round trip instead of
        a MULTI of three ranges and a separate wait. Anything else (the first entry follows
        another id, or no entry came: the history may have been trimmed or rolled back) goes
        through the exact check of _entries_after. A reader that polls without waiting, over
        and over while it is busy, has its empty reads checked so at most every _RECHECK_S."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            block = ("BLOCK", max(1, int(min(remaining, _BLOCK_S) * 1000))) if remaining > 0 else ()
            reply = self._r.execute_command("XREAD", "COUNT", count, *block, "STREAMS", self._stream, since)
            # {stream: entries} (redis-py's parser makes the reply's one pair a dict)
            entries = [] if not reply else next(iter(reply.values())) if isinstance(reply, dict) else reply[0][1]
            if entries and _prev(entries[0]) == since:
                return entries
            now = time.monotonic()
            if not entries and not block and now - self._checked_at < _RECHECK_S:
                return entries
            self._checked_at = now
            entries = self._entries_after(since, count)
            if entries is None:
                raise ResourceVersionTooOld(f"resourceVersion {since} is too old: the event stream was trimmed past it")
            if entries or deadline - time.monotonic() <= 0:
                return entries

    def _entries_after(self, since: str, count: int) -> list | None:
        """The raw stream entries after `since`, or None if any of them was trimmed; raises
        ResourceVersionTooOld when the history went back in time.

        Every entry names its predecessor (prev), so the oldest retained entry tells exactly
        which event was trimmed last: history is missing iff that event is newer than
        `since`. (Redis's own max-deleted-entry-id is not moved by MAXLEN trimming.) A
        reader's `since` is always the id of an event it read (or the head of a list), so
        when that event is gone though nothing was trimmed past it, the server came back from
        an older snapshot or without persistence, and what the reader knows may no longer be
        true. (Entries written since then have newer ids still: they must not be taken for a
        continuation.) The ranges are read in one MULTI, with plain XRANGE: a Lua script
        returning thousands of entries cost Redis a second conversion of every one of them.
        """
        pipe = self._r.pipeline(transaction=True)
        pipe.execute_command("XRANGE", self._stream, "-", "+", "COUNT", 1)
        pipe.execute_command("XRANGE", self._stream, since, since, "COUNT", 1)
        pipe.execute_command("XRANGE", self._stream, "(" + since, "+", "COUNT", count)
        first, here, entries = pipe.execute()
        if not first:
            if since == "0-0":
                return []
            raise ResourceVersionTooOld(f"resourceVersion {since} is gone: the event stream was rolled back "
                                        "(the store restarted empty)")
        oldest = _prev(first[0])
        if oldest is not None and rv_order(since) < rv_order(oldest):
            return None
        if not here and since != "0-0":
            raise ResourceVersionTooOld(f"resourceVersion {since} is gone: the event stream was rolled back "
                                        "(the store restarted from an older snapshot, or lost its history)")
        return entries

    # --- generic writes -------------------------------------------------------------------

    def _chunked(self, script, kind: str, head: list, rows: list[tuple]) -> list[bytes]:
        """Run `script` over `rows` (one tuple of args per object): at most _CHUNK rows per
        call, so no call blocks Redis for long, and _CHUNKS_PER_PIPELINE calls per pipeline.
        A single call skips the pipeline, which would cost a SCRIPT EXISTS round trip."""
        calls = []
        for start in range(0, len(rows), _CHUNK):
            args = list(head)
            for row in rows[start:start + _CHUNK]:
                args += row
            calls.append(args)
        if len(calls) <= 1:
            return script(keys=self._keys(kind), args=calls[0]) if calls else []
        results = []
        for start in range(0, len(calls), _CHUNKS_PER_PIPELINE):
            pipe = self._r.pipeline(transaction=False)
            for args in calls[start:start + _CHUNKS_PER_PIPELINE]:
                script(keys=self._keys(kind), args=args, client=pipe)
            results += [r for call in pipe.execute() for r in call]
        return results

    def _put_rows(self, kind: str, mode: str, rows: list[tuple[str, dict, str]]) -> list[bytes]:
        return self._chunked(self._put, kind, [self._history, mode, kind],
                             [(key, orjson.dumps(obj), _state(kind, obj), expected_rv) for key, obj, expected_rv in rows])

    @_translated
    def create(self, obj: dict) -> dict:
        kind, key, stored = prepare(obj)
        return self._stamped(stored, self._put_rows(kind, "create", [(key, stored, "")])[0])

    @staticmethod
    def _stamped(obj: dict, result: bytes) -> dict:
        result = result.decode()
        if not result[:1].isdigit():
            raise Conflict(result)
        obj["metadata"]["resourceVersion"] = result
        return obj

    @_translated
    def create_many(self, objs: Iterable[dict]) -> list[ObjectError]:
        errors: list[ObjectError] = []
        runs: list[tuple[str, list]] = []  # consecutive objects of one kind, in input order
        for kind, key, stored in prepare_many(objs, errors):
            if not runs or runs[-1][0] != kind:
                runs.append((kind, []))
            runs[-1][1].append((key, stored, ""))
        for kind, rows in runs:
            results = self._put_rows(kind, "create", rows)
            errors += [already_exists(kind, key) for (key, _, _), r in zip(rows, results) if r == b"AlreadyExists"]
        return errors

    @_translated
    def create_many_trusted(self, kind: str, objs: list[dict]) -> list[ObjectError]:
        """`create_many` for objects of one kind built by a benchmark from shapes that went
        through `prepare` already (`shardsched bench --running-pods`, benchmarks/running.py):
        written as given, without the per-object limits check and parse, which would take
        longer than the write. They must carry their uid, creationTimestamp and namespace;
        nothing else of `prepare` is applied (no gating marks, no resourceVersion removed)."""
        check_kind(kind)
        rows = [(object_key(kind, o["metadata"].get("namespace", ""), o["metadata"]["name"]), o, "") for o in objs]
        results = self._put_rows(kind, "create", rows)
        return [already_exists(kind, key) for (key, _, _), r in zip(rows, results) if r == b"AlreadyExists"]

    @_translated
    def _update(self, kind, key, obj, expected_rv):
        return self._stamped(obj, self._put_rows(kind, "update", [(key, obj, expected_rv)])[0])

    @_translated
    def update_status_many(self, objs: Iterable[dict]) -> list[str | None]:
        """One script call per chunk of consecutive objects of a kind (no subresources here:
        the whole object is written, as update_status does)."""
        out: list[str | None] = []
        runs: list[tuple[str, list, list]] = []  # (kind, rows, their places in out)
        for obj in objs:
            try:
                kind, key, stored, expected_rv = self._for_update(obj)
            except Conflict as e:  # found missing while filling in its uid
                out.append(str(e))
                continue
            if not runs or runs[-1][0] != kind:
                runs.append((kind, [], []))
            runs[-1][1].append((key, stored, expected_rv))
            runs[-1][2].append(len(out))
            out.append(None)
        for kind, rows, places in runs:
            for i, r in zip(places, self._put_rows(kind, "update", rows)):
                out[i] = None if r[:1].isdigit() else r.decode()
        return out

    @_translated
    def delete(self, kind: str, key: str) -> bool:
        check_kind(kind)
        return self._chunked(self._delete, kind, [self._history, kind], [(key, "")])[0] == b""

    # --- the scheduler's writes -----------------------------------------------------------

    def _run_patch(self, op: str, rows: list[tuple[str, str, str]]) -> list[str | None]:
        results = self._chunked(self._patch, "Pod", [self._history, op, now_rfc3339()], rows)
        return [r.decode() or None for r in results]

    @_translated
    def bind_many(self, bindings):
        return self._run_patch("bind", [(key, node, uid or "") for key, node, uid in bindings])

    @_translated
    def evict_many(self, evictions, respect_budgets: bool = True):
        results = self._chunked(self._delete, "Pod", [self._history, "Pod"],
                                [(key, uid or "") for key, uid in evictions])
        return [{b"": None, b"NotFound": "PodNotFound"}.get(r, r.decode()) for r in results]

    @_translated
    def set_nominated_node(self, pod_key: str, node: str | None) -> bool:
        return self._run_patch("nominate", [(pod_key, node or "", "")])[0] is None

    @_translated
    def set_unschedulable(self, pod_key: str, message: str) -> bool:
        return self._run_patch("unschedulable", [(pod_key, message, "")])[0] is None

    @_translated
    def set_unschedulable_many(self, items) -> list[bool]:
        rows = [(key, message, "") for key, message in items]
        return [r is None for r in self._run_patch("unschedulable", rows)] if rows else []

    # --- leases: one key with a TTL each, plus a set per role to find them ----------------

    def _lease_keys(self, role: str, id_: str) -> tuple[str, str]:
        return f"{self._prefix}lease:{role}:{id_}", f"{self._prefix}leases:{role}"

    @_translated
    def put_lease(self, role: str, id_: str, address: str, ttl_s: float) -> None:
        key, index = self._lease_keys(role, id_)
        self._r.pipeline(transaction=True).set(key, address, px=max(1, int(ttl_s * 1000))).sadd(index, id_).execute()

    @_translated
    def list_leases(self, role: str) -> dict[str, str]:
        key_prefix, index = self._lease_keys(role, "")
        flat = self._leases(keys=[index], args=[key_prefix])
        return {i.decode(): a.decode() for i, a in zip(flat[::2], flat[1::2])}

    @_translated
    def acquire_lease(self, role: str, id_: str, holder: str, ttl_s: float) -> bool:
        key, index = self._lease_keys(role, id_)
        return bool(self._acquire_lease(keys=[key, index], args=[holder, max(1, int(ttl_s * 1000)), id_]))

    @_translated
    def drop_lease(self, role: str, id_: str, holder: str | None = None) -> None:
        key, index = self._lease_keys(role, id_)
        self._drop_lease(keys=[key, index], args=[holder or "", id_])

    # --- events: one hash of Event JSON, and a sorted set of when each was written, to expire
    # them; never in the watch stream (no process follows Events).

    @_translated
    def write_events(self, events: list[dict]) -> list[str | None]:
        objects, times = f"{self._prefix}events:obj", f"{self._prefix}events:time"
        now = time.time()
        pipe = self._r.pipeline(transaction=False)
        for ev in events:
            key = f"{ev['metadata']['namespace']}/{ev['metadata']['name']}"
            pipe.hset(objects, key, orjson.dumps(ev)).zadd(times, {key: now})
        # Expired ones are looked for at most every _EXPIRE_EVERY_S (a second round trip;
        # a binder writes a batch of Scheduled events for every few decisions).
        if now - self._expired_at >= _EXPIRE_EVERY_S:
            self._expired_at = now
            expired = self._r.zrangebyscore(times, "-inf", now - EVENT_TTL_S)
            if expired:
                pipe.hdel(objects, *expired).zrem(times, *expired)
        pipe.execute()
        return [None] * len(events)

    @_translated
    def list_events(self) -> list[dict]:
        objects, times = f"{self._prefix}events:obj", f"{self._prefix}events:time"
        live = self._r.zrangebyscore(times, time.time() - EVENT_TTL_S, "+inf")
        return [orjson.loads(o) for o in (self._r.hmget(objects, live) if live else []) if o is not None]
