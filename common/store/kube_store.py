"""`kube://`: a real Kubernetes API server as the cluster store.

Every call goes through common/store/kube_http.py (urllib3 on one pool of keep-alive
connections, bodies in and out through orjson): the `kubernetes` client's generated model
classes cost milliseconds per object, far too much for 20,000 nodes, and importing the client
alone costs each process most of a second of CPU at start. Every request carries a timeout,
so a dead connection never hangs a process.

Pods and nodes come without metadata.managedFields, in every answer and event (cut from the
bytes before decoding: see `_without_managed_fields`); no role reads them.

URLs: `kube://` (in-cluster config, else ~/.kube/config, else `store.kubeconfig`) or
`kube:///path/to/kubeconfig`.

Watching. The API server watches one resource at a time; `_read` serves several kinds behind
one cursor. Each kind has one background watch per store (`_KindWatch`): bookmarks on,
resumed from the last resourceVersion it saw (event or bookmark) whenever the server closes
the stream, and marked gone on 410 Gone, after which readers get ResourceVersionTooOld and
relist. Its events wait in a buffer of `history` events per kind; a reader that falls further
behind than that also gets ResourceVersionTooOld (like the other backends' trimmed history).

resourceVersions. The API server documents them as opaque; this backend relies on two
properties instead of parsing them: within one resource's watch they arrive in order, and
(as every etcd-backed server does, and as `rv_order` in base.py assumes for all backends)
they are decimal integers, so the positions of several kinds can be compared and merged.
A non-numeric resourceVersion is reported, never misordered. The cursor a reader passes back
is the rv of the last event it got; the store remembers for each cursor it handed out how far
each kind had been read (`_cursors`), because the watches of different kinds deliver
independently and a later event of one kind may still be followed by an earlier one of
another. An unknown cursor (a list's rv, or one from another process) means "after this rv"
for every kind, which is the API server's own list-then-watch rule.

A pod deleted with grace period 0 (this store's deletions and evictions) is first marked
deleting, then removed; the marking event is dropped, so one deletion is one DELETED event
as in the other backends. Graceful deletions (a kubelet or kwok finishing them) keep theirs.

Read-your-writes: the watch is asynchronous, so a reader that polls right after a write in
the same process could miss it. Every write records its resourceVersion per kind
(`_WRITTEN`, process-wide) and `_read` first lets each watch catch up to that; a binding or
eviction, whose answer has no resourceVersion, is waited for by its key, by the reads that
begin after it was answered (never by those already waiting: see `_answered`).
"""
from __future__ import annotations

import bisect
import heapq
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from urllib.parse import quote

import orjson

from ..errors import Conflict, ObjectError, ResourceVersionTooOld, StoreUnavailable
from .kube_status_writes import MANAGED_FIELDS, METADATA_END, StatusWrites, hint as status_hint
from ..runtime.leader_election import ELECTION_ROLE
from ..model.objects import KINDS, NAMESPACED, document_kind
from ..model.podgroup import NATIVE_API_VERSION, NATIVE_KIND
from ..runtime.rate_limit import TokenBucket
from .kube_http import HttpError, KubeconfigError, KubeHttp, endpoint
from .base import (ClusterStore, Listeners, WatchEvent, already_exists, check_kind, check_update, prepare,
                   prepare_many)
from .podstatus import (apply_patch, nominated_already, now_rfc3339,
                        unschedulable_already, unschedulable_patch)

log = logging.getLogger(__name__)

#: kind -> (apiVersion, URL prefix of the group/version, plural)
RESOURCES = {
    "Node": ("v1", "/api/v1", "nodes"),
    "Pod": ("v1", "/api/v1", "pods"),
    "PodDisruptionBudget": ("policy/v1", "/apis/policy/v1", "poddisruptionbudgets"),
    "PriorityClass": ("scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1", "priorityclasses"),
    "PodGroup": ("scheduling.x-k8s.io/v1alpha1", "/apis/scheduling.x-k8s.io/v1alpha1", "podgroups"),
    NATIVE_KIND: (NATIVE_API_VERSION, "/apis/" + NATIVE_API_VERSION, "podgroups"),
    "PersistentVolumeClaim": ("v1", "/api/v1", "persistentvolumeclaims"),
    "PersistentVolume": ("v1", "/api/v1", "persistentvolumes"),
    "StorageClass": ("storage.k8s.io/v1", "/apis/storage.k8s.io/v1", "storageclasses"),
    "CSINode": ("storage.k8s.io/v1", "/apis/storage.k8s.io/v1", "csinodes"),
    "Namespace": ("v1", "/api/v1", "namespaces"),
    "Service": ("v1", "/api/v1", "services"),
    "ReplicationController": ("v1", "/api/v1", "replicationcontrollers"),
    "ReplicaSet": ("apps/v1", "/apis/apps/v1", "replicasets"),
    "StatefulSet": ("apps/v1", "/apis/apps/v1", "statefulsets"),
    "DeviceClass": ("resource.k8s.io/v1", "/apis/resource.k8s.io/v1", "deviceclasses"),
    "ResourceSlice": ("resource.k8s.io/v1", "/apis/resource.k8s.io/v1", "resourceslices"),
    "ResourceClaimTemplate": ("resource.k8s.io/v1", "/apis/resource.k8s.io/v1", "resourceclaimtemplates"),
    "ResourceClaim": ("resource.k8s.io/v1", "/apis/resource.k8s.io/v1", "resourceclaims"),
}
#: Kinds defined by a CustomResourceDefinition (deploy/crd-podgroup.yaml): a cluster without
#: it lists none of them (and says so once) instead of failing the processes that list them.
CUSTOM_KINDS = {"PodGroup": "deploy/crd-podgroup.yaml"}
#: Kinds a cluster may not serve, and what serves them: the custom kinds, and kube's PodGroup,
#: a beta API behind the GenericWorkload feature gate (off by default in v1.37).
OPTIONAL_KINDS = {**{k: f"apply {crd}" for k, crd in CUSTOM_KINDS.items()},
                  NATIVE_KIND: ("start the API server with --feature-gates=GenericWorkload=true "
                                f"--runtime-config={NATIVE_API_VERSION}=true")}
#: Kinds whose status is written through the status subresource.
STATUS_SUBRESOURCE = {"PodGroup", NATIVE_KIND, "Pod", "ResourceClaim"}
LEASES = "/apis/coordination.k8s.io/v1"
EVENTS = "/apis/events.k8s.io/v1"
LEASE_LABEL = "shardsched.io/role"
_WATCH_S = 240          # server-side watch timeout; the stream is resumed after it
_WORKERS = 16           # concurrent requests of one bulk write, by default
_THREADS = 32           # ... and at most (see KubeStore.__init__)
_LIST_PAGE = 500        # objects per page of list_iter (client-go's informers page by 500)
#: A cached list_iter of at most this many objects is read whole from the API server's watch
#: cache (resourceVersion=0, as client-go's informers list); a larger one is paged.
_WHOLE_FROM_CACHE = 10_000
_CURSORS = 4096         # cursors remembered (each reader only ever needs its latest)
_WRITTEN: dict[str, int] = {}
_WRITTEN_LOCK = threading.Lock()


def _rv_int(rv: str) -> int:
    try:
        return int(rv)
    except (TypeError, ValueError):
        raise StoreUnavailable(f"the API server returned resourceVersion {rv!r}, which is not a decimal "
                               "integer; shardsched's kube backend needs an etcd-backed server") from None


def _event_path(ev: dict) -> tuple[str, str]:
    """(the path of its namespace's Events, its name) of an events.k8s.io Event."""
    return f"{EVENTS}/namespaces/{quote(ev['metadata']['namespace'])}/events", ev["metadata"]["name"]


def _event_rv(event: WatchEvent) -> int:
    return int(event.rv)


def _wrote(kind: str, rv: str) -> None:
    n = _rv_int(rv)
    with _WRITTEN_LOCK:
        if n > _WRITTEN.get(kind, 0):
            _WRITTEN[kind] = n


def _split(kind: str, key: str) -> tuple[str, str]:
    if kind in NAMESPACED:
        ns, _, name = key.partition("/")
        return ns, name
    return "", key


def _path(kind: str, namespace: str = "", name: str = "") -> str:
    _, prefix, plural = RESOURCES[kind]
    base = f"{prefix}/namespaces/{quote(namespace)}/{plural}" if namespace else f"{prefix}/{plural}"
    return f"{base}/{quote(name)}" if name else base


def _typed(kind: str, obj: dict) -> dict:
    """List items come without kind/apiVersion; every object this store hands out has them."""
    obj["kind"] = document_kind(kind)
    obj["apiVersion"] = RESOURCES[kind][0]
    return obj


def _rfc3339_micro(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(s: str) -> float:
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc).timestamp()


def _binding_conflict(e: "ApiError") -> str:
    """The outcome of a binding the API server answered 409: its registry wraps every
    refusal in a Conflict, so the message says which one (the pod was bound meanwhile, has
    scheduling gates, is being deleted, or is another pod with this name)."""
    msg = e.message
    if "schedulingGates" in msg:
        return "SchedulingGated"
    if "is being deleted" in msg:
        return "PodNotFound"
    if "is already assigned to node" in msg:
        return "AlreadyBound"
    if "uid" in msg.lower() or "precondition" in msg.lower():
        return "UIDMismatch"
    return f"Conflict: {msg}"


#: what a binding's refusal is, by HTTP status (beyond 404's PodNotFound)
_BINDING_REASONS = {409: _binding_conflict}


def _binding(key: str, node: str, uid: str | None) -> dict:
    """The Binding that puts pod `key` (of uid `uid`, when given) on `node`."""
    ns, name = _split("Pod", key)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    if uid:
        binding["metadata"]["uid"] = uid
    return binding


def _outcome(e: "ApiError", reasons: dict) -> str:
    """A refused pod subresource's outcome: `reasons[status]` (a string, or a function of
    the error), 404 "PodNotFound"; the error itself raised when neither names its status."""
    reason = {404: "PodNotFound", **reasons}.get(e.status)
    if reason is None:
        raise e
    return reason(e) if callable(reason) else reason


class ApiError(Exception):
    """A non-2xx answer: HTTP status, the Status object's reason/message/details."""

    def __init__(self, status: int, body: bytes):
        try:
            st = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            st = {"message": body[:300].decode(errors="replace")}
        self.status = status
        self.reason = st.get("reason") or ""
        self.message = st.get("message") or ""
        self.details = st.get("details") or {}
        super().__init__(f"{status} {self.reason}: {self.message}")


class _KindWatch:
    """The one watch of a kind: a thread following the server, a buffer of its events."""

    def __init__(self, store: "KubeStore", kind: str, start: int):
        self.store, self.kind = store, kind
        self.start = start          # the buffer holds every event after this rv ...
        self.rvs: list[int] = []    # ... in order (the rvs, for bisect)
        self.events: list[WatchEvent] = []
        self.progress = start       # everything up to here has been delivered
        self.gone: str | None = None  # why the watch cannot go on (410 Gone)
        self.trimmed = False        # events after `start` were dropped for room
        self.stopped = False
        self.response = None
        #: which pod events are status-only writes (their hint spares the readers the decoding)
        self.status_writes = StatusWrites() if kind == "Pod" and store.status_hints else None
        self.thread = threading.Thread(target=self._run, name=f"kube-watch-{kind}", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopped = True
        resp = self.response
        if resp is not None:
            try:
                resp.shutdown()  # unblocks the reading thread at once
            except Exception:
                pass

    def _run(self) -> None:
        cond = self.store._cond
        failures = 0
        while not self.stopped and self.gone is None:
            try:
                self._stream()
                failures = 0
            except ApiError as e:
                if e.status == 410:
                    self._expire(str(e))
                else:
                    failures = self._failed(failures, e)
            except Exception as e:  # connection reset, read timeout, server restart: resume
                failures = self._failed(failures, e)
            if failures and not self.stopped:
                time.sleep(min(2.0, 0.05 * 2 ** min(failures, 6)))
        with cond:
            self.store._listeners.notify()

    def _failed(self, failures: int, e: Exception) -> int:
        """One more failure in a row, said at the 1st, 10th, 100th ... of a streak (a server
        down for minutes is a few lines, not one per retry); nothing said once stopped, when
        the failure is the stop's own doing, nor for the 404 of a kind the server does not
        serve (said once by `_not_served`; the watch asks on to pick it up once served).
        Returns the new count."""
        failures += 1
        expected = isinstance(e, ApiError) and e.status == 404 and self.kind in self.store._unserved
        if not self.stopped and not expected and math.log10(failures).is_integer():
            log.warning("the watch of %s failed %d time%s in a row (%s: %s); resuming from resourceVersion %d",
                        self.kind, failures, "" if failures == 1 else "s", type(e).__name__, e, self.progress)
        return failures

    def _expire(self, why: str) -> None:
        with self.store._cond:
            self.gone = why
            self.store._listeners.notify()

    def _stream(self) -> None:
        query = [("watch", "true"), ("allowWatchBookmarks", "true"),
                 ("resourceVersion", str(self.progress)), ("timeoutSeconds", str(_WATCH_S))]
        resp = self.store._call("GET", _path(self.kind), query=query, stream=True,
                                timeout=(self.store.timeout, _WATCH_S + self.store.timeout))
        self.response = resp
        try:
            pending = b""
            for chunk in resp.stream(1 << 16):
                if self.stopped:
                    return
                pending += chunk
                if b"\n" not in pending:
                    continue
                *lines, pending = pending.split(b"\n")
                self._deliver([line for line in lines if line.strip()])
        finally:
            self.response = None
            resp.release_conn()

    def _deliver(self, lines: list[bytes]) -> None:
        cond = self.store._cond
        with cond:
            for line in lines:
                head = _POD_HEAD.match(line) if self.kind == "Pod" else None
                if head is not None and not (head[1] == b"MODIFIED" and b'"deletionTimestamp":"' in line):
                    # a pod's event as the server writes it: kept undecoded until a reader
                    # wants it (a reader may pass it over unread: see PodEvent)
                    type_, rv = head[1].decode(), int(head[4])
                    key, bound = f"{head[3].decode()}/{head[2].decode()}", b'"nodeName":"' in line
                    if rv <= self.progress:  # replayed after a resume
                        continue
                    writes = self.status_writes
                    event = PodEvent(type_, line, str(rv), key,
                                     writes.status_at(type_, key, line, head.span(4))
                                     if writes is not None and (bound or type_ == "DELETED") else None)
                else:
                    frame = orjson.loads(_without_managed_fields(line) if self.kind in _LEAN_KINDS else line)
                    type_, obj = frame.get("type"), frame.get("object") or {}
                    if type_ == "ERROR":
                        if obj.get("code") == 410:
                            self.gone = obj.get("message") or "410 Gone"
                            self.store._listeners.notify()
                            return
                        raise ApiError(obj.get("code") or 500, orjson.dumps(obj))
                    rv = _rv_int(obj["metadata"]["resourceVersion"])
                    if type_ == "BOOKMARK":
                        self.progress = max(self.progress, rv)
                        continue
                    if rv <= self.progress:  # replayed after a resume
                        continue
                    meta = obj["metadata"]
                    if (type_ == "MODIFIED" and meta.get("deletionTimestamp")
                            and meta.get("deletionGracePeriodSeconds") == 0):
                        # The server's first step of a deletion with grace period 0 (the second,
                        # DELETED, follows at once): one deletion, one event, as in the other stores.
                        self.progress = rv
                        continue
                    event = WatchEvent(type_, self.kind, _typed(self.kind, obj), str(rv))
                    key = (f"{meta.get('namespace')}/{meta['name']}" if self.kind in NAMESPACED
                           else meta["name"])
                    bound = bool((obj.get("spec") or {}).get("nodeName"))
                self.rvs.append(rv)
                self.events.append(event)
                self.progress = rv
                if self.store._awaiting:
                    self.store._arrived(self.kind, type_, key, bound)
            history = self.store.history
            if len(self.events) > history + history // 4:
                drop = len(self.events) - history
                self.start = self.rvs[drop - 1]
                self.trimmed = True
                del self.rvs[:drop], self.events[:drop]
            self.store._listeners.notify()


#: The start of a pod's watch event as the API server writes it (Go's field order: type, then
#: the object's kind, apiVersion, and metadata's name, generateName, namespace, selfLink, uid,
#: resourceVersion). An event that does not start so is decoded at once.
_POD_HEAD = re.compile(rb'\{"type":"(ADDED|MODIFIED|DELETED)","object":\{"kind":"Pod","apiVersion":"v1",'
                       rb'"metadata":\{"name":"([^"\\]+)",(?:"generateName":"[^"\\]*",)?"namespace":"([^"\\]+)",'
                       rb'(?:"selfLink":"[^"\\]*",)?"uid":"[^"\\]*","resourceVersion":"(\d+)"')


#: Kinds whose JSON, as the API server writes it (Go's field order), has metadata.managedFields
#: last in metadata and spec right after it.
_LEAN_KINDS = ("Pod", "Node")


def _without_managed_fields(data: bytes) -> bytes:
    """`data` (a watch line, or a page of a list, of a _LEAN_KINDS kind) without any object's
    metadata.managedFields, cut out before decoding: no role reads them, and they were half
    of what decoding a pod cost (1.4 of its 3.5 KB, and many small objects). The field
    ends where that object's metadata does, right before its spec (managedFields' own keys
    are "f:..." and "k:...", never "spec"); a field whose end is not found so is kept."""
    start = data.find(MANAGED_FIELDS)
    if start < 0:
        return data
    parts, at = [], 0
    while start >= 0:
        end = data.find(METADATA_END, start)
        if end < 0:
            break
        parts.append(data[at:start])
        at = end + 1  # from metadata's closing brace on
        start = data.find(MANAGED_FIELDS, at)
    parts.append(data[at:])
    return b"".join(parts)


def _trim(kind: str):
    """What an answer of `kind` is cut by before decoding (None: nothing)."""
    return _without_managed_fields if kind in _LEAN_KINDS else None


class PodEvent(WatchEvent):
    """A pod's watch event kept as the server's line until its `obj` is first read: a
    reader that passes it over by its `raw` bytes and `key` (common.runtime.intake's
    `skip_event`) never decodes it; the first reader that wants it decodes it for all. A
    creation is offered undecoded too (`document`: Informer take_undecoded), and a
    status-only write with its status hint (`status`: common.store.kube_status_writes)."""

    __slots__ = ("raw", "key", "_status_at", "_obj")

    def __init__(self, type_: str, raw: bytes, rv: str, key: str, status_at: int | None = None):
        self.type, self.kind, self.rv, self.raw, self.key, self._obj = type_, "Pod", rv, raw, key, None
        self._status_at = status_at

    @property
    def status(self) -> bytes | None:
        """A status-only write's status hint (read from the bytes when first asked for; the
        watch only told where its status starts), None for any other event, or once the
        event was decoded."""
        if self._status_at is None or self.raw is None:
            return None
        return status_hint(self.raw, self._status_at)

    @property
    def obj(self) -> dict:
        if self._obj is None:
            self._obj = _typed("Pod", orjson.loads(_without_managed_fields(self.raw))["object"])
            self.raw = None  # decoded once per process; the bytes are not needed again
        return self._obj

    @property
    def document(self) -> bytes | None:
        """A creation's bytes while undecoded (ClusterStore.read's `undecoded`; the informer
        offers them to take_undecoded), None otherwise: a shard holds another shard's
        pending pod as these bytes and decodes it only if it is ever dispatched there (the
        server's line holds the whole document, so searching it for a name finds what
        searching the document would)."""
        return self.raw if self.type == "ADDED" else None


class KubeStore(ClusterStore):
    """Client of one API server. Leases live in `lease_namespace` (default: the pod's own
    namespace in a cluster, else the kubeconfig context's, else "default")."""

    #: An informer's first list is about twenty kinds, most of them empty: one round trip
    #: each, and on a busy machine a round trip is tens of milliseconds.
    lists_in_parallel = True

    def __init__(self, kubeconfig: str | None = None, request_timeout: float = 10.0,
                 history: int = 100_000, lease_namespace: str | None = None, max_in_flight: int = _WORKERS,
                 qps: float = 0, burst: int = 0, status_hints: bool = True, direct_watch_reads: bool = True):
        """`max_in_flight`: requests one bulk write (bind_many, evict_many, create_many) sends
        at once; the HTTP connection pool is sized to match. `qps` > 0 paces every request
        but the watches to that many per second on average, `burst` at once (client-go's
        clientConnection.qps and burst). `status_hints`: tell pods' status-only writes apart
        (common.store.kube_status_writes; off only for benchmarks.follow_hint's baseline).
        `direct_watch_reads`: the watches' chunks read off the socket (common.store.kube_http's
        _Stream), not through http.client (only follow_hint's baseline)."""
        self.status_hints = status_hints
        self.timeout = float(request_timeout)
        self.history = history
        self._limiter = TokenBucket(qps, burst) if qps > 0 else None
        try:
            ep = endpoint(kubeconfig)
        except KubeconfigError as e:
            raise StoreUnavailable(f"cannot load kubeconfig {kubeconfig or '~/.kube/config'}: {e}") from None
        self._where = ep.server
        self.lease_namespace = lease_namespace or ep.namespace or "default"
        workers = max(1, min(max_in_flight, _THREADS))
        # requests: as many connections as threads may send at once, and a few for the
        # process's own reads; the watches, which hold theirs for minutes, have their own pool
        self._http = KubeHttp(ep, self.timeout, workers + 8)
        self._watch_http = KubeHttp(ep, self.timeout, len(RESOURCES), bounded=False,
                                    direct_streams=direct_watch_reads)
        self._cond = threading.Condition()
        #: told whenever the watches bring something, or one ends (`listen`)
        self._listeners = Listeners(self._cond)
        self._watches: dict[str, _KindWatch] = {}
        self._cursors: OrderedDict[str, dict[str, int]] = OrderedDict()
        self._kinds_asked: dict = {}  # the kinds of reads asked for, as `_wanted` checked them
        #: writes whose answer carries no resourceVersion (bindings, evictions): (kind, key)
        #: -> [what the watch must show: "bound" or "deleted", until when a reader waits for
        #: it, the number of its answer (None while the request is on its way)]
        self._awaiting: dict[tuple[str, str], list] = {}
        self._answers = 0
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kube-store")
        self._in_flight = workers  # requests one bulk write sends at once, threads or not
        self._unserved: set[str] = set()
        self._call("GET", "/version")

    # --- HTTP -----------------------------------------------------------------------------

    def _call(self, method: str, path: str, body=None, query: list | None = None, stream: bool = False,
              content_type: str = "application/json", timeout=None, trim=None):
        """One request; returns the parsed JSON (or the open response when `stream`, from the
        watches' own pool); `trim` cuts what is not needed from the bytes before decoding."""
        if self._limiter is not None and not stream:
            self._limiter.wait()
        try:
            if stream:
                return self._watch_http.open(method, path, body, query, content_type, timeout, stream=True)
            return self._http.call(method, path, body, query, content_type, timeout, trim)
        except HttpError as e:
            raise ApiError(e.status, e.body) from None

    def close(self) -> None:
        with self._cond:
            watches = list(self._watches.values())
            self._watches.clear()
        for w in watches:
            w.stop()
        self._pool.shutdown(wait=False)
        self._http.close()
        self._watch_http.close()

    # --- reads ----------------------------------------------------------------------------

    def _pages(self, kind: str, cached: bool, limit: int):
        """The list of `kind` page by page: (objects, the list's rv), each page decoded when
        it is reached. Paged by `limit` with continue tokens (every page of one list is
        served at the first page's rv). `cached`: resourceVersion=0, served from the API
        server's watch cache as client-go's informers list (a third of the server's CPU for
        5,000 pods, and no etcd read), possibly a moment behind; a server that serves such
        a list whole ignores the limit."""
        check_kind(kind)
        trim = _trim(kind)
        cont, rv = None, None
        while True:
            query = [("limit", str(limit))] + ([("continue", cont)] if cont else
                                               [("resourceVersion", "0")] if cached else [])
            try:
                page = self._call("GET", _path(kind), query=query, trim=trim)
            except ApiError as e:
                if e.status == 410 and cont:
                    # etcd compacted past the list's revision while it was read (a list of
                    # 500-pod round trips can outlast the compaction interval, 5 minutes by
                    # default): what is left can only come from a new list (client-go's
                    # pager lists again too)
                    raise ResourceVersionTooOld(f"the list of {kind} at resourceVersion {rv} expired before it "
                                                f"was read through (its continue token: {e})") from None
                if e.status != 404 or kind not in OPTIONAL_KINDS or cont:
                    raise
                yield [], self._not_served(kind)
                return
            meta = page.get("metadata") or {}
            rv = rv or meta["resourceVersion"]
            cont = meta.get("continue")
            yield page.get("items") or [], rv
            if not cont:
                return

    def list(self, kind: str, cached: bool = False) -> tuple[list[dict], str]:
        """A consistent (quorum) list, paged by 5,000 (see `_pages`; pods and nodes without
        managedFields, as everything this store hands out)."""
        items, rv = [], None
        for page, rv in self._pages(kind, cached, 5000):
            items += [_typed(kind, o) for o in page]
        return items, rv

    def list_iter(self, kind: str, cached: bool = False, skip=None):
        """`list` one page of _LIST_PAGE at a time, consistent: the first is read now (its rv
        is the list's), each next one when the reader has taken the last object of the one
        before, so a large list is never held whole, decoded or not. `cached`: a list of at
        most _WHOLE_FROM_CACHE objects comes whole from the watch cache instead
        (`_small_from_cache`)."""
        small = self._small_from_cache(kind) if cached else None
        if small is not None:
            pages, (first, rv) = iter(()), small
        else:
            pages = self._pages(kind, False, _LIST_PAGE)
            first, rv = next(pages)

        def each():
            page = first
            while True:
                # the next page is asked for while the reader works through this one (the
                # round trip overlaps its decoding): at most two pages are held at once
                ahead = (self._pool.submit(next, pages, None) if small is None and len(page) >= _LIST_PAGE
                         else None)
                page.reverse()
                while page:
                    obj = page.pop()
                    if skip is None or not skip.skips(obj):
                        yield _typed(kind, obj)
                nxt = ahead.result() if ahead is not None else next(pages, None)
                if nxt is None:
                    return
                page = nxt[0]
        return each(), rv

    def _small_from_cache(self, kind: str) -> tuple[list[dict], str] | None:
        """(objects, rv) of `kind` read whole from the API server's watch cache
        (resourceVersion=0) when a one-object consistent list says there are at most
        _WHOLE_FROM_CACHE (its remainingItemCount), or that one list itself when it holds
        them all; None when the list is larger or the count unknown (then it is paged).

        Why: a consistent list is served from the watch cache only where etcd answers watch
        progress requests (v3.4.31+, v3.5.13+); from an older etcd (Debian's 3.4.23, the test
        control plane's) every page is read from etcd. 5,000 pods paged so cost the API server
        218 ms of CPU and etcd 45 ms, against 77 and 3 ms from the cache (one list at a time,
        4 rounds each), and at start-up every process lists at once. A cached list is served
        whole whatever its limit (the reason larger lists stay paged: 25,000 pods were a
        480 MB peak in a dispatcher that keeps none of them)."""
        try:
            probe = self._call("GET", _path(kind), query=[("limit", "1")], trim=_trim(kind))
        except ApiError as e:
            if e.status == 404 and kind in OPTIONAL_KINDS:
                return None  # `_pages` says so once and reads the version to watch from
            raise
        meta = probe.get("metadata") or {}
        if not meta.get("continue"):
            return probe.get("items") or [], meta["resourceVersion"]
        remaining = meta.get("remainingItemCount")
        if remaining is None or remaining + 1 > _WHOLE_FROM_CACHE:
            return None
        whole = self._call("GET", _path(kind), query=[("resourceVersion", "0")], trim=_trim(kind))
        return whole.get("items") or [], whole["metadata"]["resourceVersion"]

    def _not_served(self, kind: str) -> str:
        """A kind the API server does not serve (a CRD not installed, an API group not
        enabled): warn once; the current resourceVersion (of a one-item list of pods, which
        every role may list: its ServiceAccount may not list namespaces), from which its watch
        will pick it up once it is served."""
        if kind not in self._unserved:
            self._unserved.add(kind)
            log.warning("the API server does not serve %s (%s): none are listed until it does",
                        kind, OPTIONAL_KINDS[kind])
        page = self._call("GET", "/api/v1/pods", query=[("limit", "1")])
        return page["metadata"]["resourceVersion"]

    def get(self, kind: str, key: str) -> dict | None:
        check_kind(kind)
        try:
            return _typed(kind, self._call("GET", _path(kind, *_split(kind, key)), trim=_trim(kind)))
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def _watch(self, kind: str, pos: int) -> _KindWatch:
        """The kind's watch, (re)started at `pos` when it cannot serve a reader at `pos`
        (unless it dropped events after `pos` for lack of room: then the reader is too far
        behind). Call with the lock held."""
        w = self._watches.get(kind)
        if w is not None and w.gone is not None:
            del self._watches[kind]
            if pos <= w.progress:  # the server has compacted what this reader needs
                raise ResourceVersionTooOld(f"resourceVersion {pos} is too old for {kind}: {w.gone}")
            w = None  # a reader that relisted since: start afresh from its rv
        if w is not None and w.gone is None and w.start <= pos:
            return w
        if w is not None and w.gone is None and w.trimmed and pos < w.start:
            raise ResourceVersionTooOld(f"resourceVersion {pos} is too old: this client kept the last "
                                        f"{self.history} {kind} events, from {w.start} on")
        if w is not None:
            w.stop()
        w = self._watches[kind] = _KindWatch(self, kind, pos)
        return w

    def listen(self, ring) -> bool:
        self._listeners.add(ring)
        return True

    def _read(self, since_rv, timeout, max_events, kinds, positions=None):
        wanted = self._wanted(kinds)
        since = str(since_rv)
        deadline = time.monotonic() + timeout
        catch_up = time.monotonic() + self.timeout
        with self._cond:
            known = ({k: _rv_int(v) for k, v in positions.items()} if positions
                     else self._cursors.get(since))
            base = _rv_int(since)
            pos = {k: known.get(k, base) for k in wanted} if known else dict.fromkeys(wanted, base)
            with _WRITTEN_LOCK:
                written = dict(_WRITTEN)
            answered = self._answers
            while True:
                ready, behind = self._ready(wanted, pos, written)
                behind = behind or self._awaited(wanted, answered)
                if ready and not behind:
                    break
                now = time.monotonic()
                limit = catch_up if behind else deadline
                if now >= limit:
                    if ready:
                        break
                    return [], None
                self._cond.wait(min(limit - now, 0.5))
            if len(ready) == 1:
                w, i = ready[0]
                events = w.events[i:i + max_events]
            else:
                streams = [w.events[i:i + max_events] for w, i in ready]
                events = list(heapq.merge(*streams, key=_event_rv))[:max_events]
        for ev in events:
            pos[ev.kind] = int(ev.rv)
        last = events[-1].rv
        with self._cond:
            self._cursors[last] = pos
            self._cursors.move_to_end(last)
            while len(self._cursors) > _CURSORS:
                self._cursors.popitem(last=False)
        return events, last

    def _wanted(self, kinds) -> tuple[str, ...]:
        """The kinds a read asks for, checked and in a fixed order; remembered, as a reader
        asks for the same kinds at every poll (a shard's are nineteen)."""
        wanted = self._kinds_asked.get(kinds)
        if wanted is None:
            wanted = tuple(sorted(kinds)) if kinds is not None else tuple(KINDS)
            for k in wanted:
                check_kind(k)
            self._kinds_asked[kinds] = wanted
        return wanted

    def _ready(self, wanted, pos: dict[str, int], written: dict[str, int]) -> tuple[list, bool]:
        """(watch, index of its first event after the reader's position) of each of the
        `wanted` kinds with events to read, and whether a watch has not yet shown this
        process's latest write of its kind (lock held). One pass over the kinds, each
        looked at only as far as it must be: every poll of every process comes here, most
        of them finding one or two kinds changed, or none."""
        ready, behind, watches = [], False, self._watches
        for k in wanted:
            p = pos[k]
            w = watches.get(k)
            if w is None or w.gone is not None or w.start > p:
                w = self._watch(k, p)
            if w.progress < written.get(k, 0):
                behind = True
            rvs = w.rvs
            if rvs and rvs[-1] > p:
                ready.append((w, bisect.bisect_right(rvs, p)))
        return ready, behind

    def _await(self, kind: str, key: str, what: str) -> None:
        """A write without a resourceVersion in its answer is about to be sent: from now on
        its event is looked out for (it may arrive before the answer does)."""
        with self._cond:
            self._awaiting[(kind, key)] = [what, 0.0, None]

    def _answered(self, kind: str, key: str) -> None:
        """The write was done: readers that start from now on wait for its event (for a
        few seconds at most). Readers already waiting do not: a binder always has bindings
        on their way, and a read waiting for those too would wait for ever newer ones."""
        with self._cond:
            entry = self._awaiting.get((kind, key))
            if entry is not None:
                self._answers += 1
                entry[1], entry[2] = time.monotonic() + min(self.timeout, 3.0), self._answers

    def _forget(self, kind: str, key: str) -> None:
        with self._cond:
            self._awaiting.pop((kind, key), None)

    def _arrived(self, kind: str, type_: str, key: str, bound: bool) -> None:
        """Called by a watch (lock held) for each event while writes are awaited."""
        entry = self._awaiting.get((kind, key))
        if entry is not None and (type_ == "DELETED" if entry[0] == "deleted" else bound):
            del self._awaiting[(kind, key)]

    def _awaited(self, kinds, answered: int) -> bool:
        """Whether a write of this client to one of `kinds`, answered by the `answered`th
        answer or earlier, has not shown in its watch yet (lock held; entries past their
        deadline are dropped)."""
        if not self._awaiting:
            return False
        now = time.monotonic()
        for k in [k for k, (_, until, n) in self._awaiting.items() if n is not None and until <= now]:
            del self._awaiting[k]
        return any(n is not None and n <= answered and kind in kinds
                   for (kind, _), (_, _, n) in self._awaiting.items())

    # --- generic writes -------------------------------------------------------------------

    @staticmethod
    def _object_error(kind: str, key: str, e: ApiError) -> ObjectError:
        causes = e.details.get("causes") or [{}]
        return ObjectError(f"{kind} {key}", causes[0].get("field") or "<object>", causes[0].get("message") or e.message)

    def _create(self, kind: str, key: str, stored: dict) -> dict:
        body = dict(stored)
        body["metadata"] = {k: v for k, v in stored["metadata"].items() if k not in ("uid", "creationTimestamp")}
        body["apiVersion"] = RESOURCES[kind][0]
        ns, _ = _split(kind, key)
        try:
            created = self._call("POST", _path(kind, ns), body=body, trim=_trim(kind))
        except ApiError as e:
            if e.status == 409:
                raise Conflict("AlreadyExists") from None
            if e.status in (400, 404, 422):
                raise self._object_error(kind, key, e) from None
            raise
        _wrote(kind, created["metadata"]["resourceVersion"])
        return _typed(kind, created)

    def create(self, obj: dict) -> dict:
        kind, key, stored = prepare(obj)
        return self._create(kind, key, stored)

    def create_many(self, objs: Iterable[dict]) -> list[ObjectError]:
        errors: list[ObjectError] = []

        def one(item):
            kind, key, stored = item
            try:
                self._create(kind, key, stored)
            except Conflict:
                return already_exists(kind, key)
            except ObjectError as e:
                return e
            return None

        prepared = list(prepare_many(objs, errors))
        errors += [e for e in self._pool.map(one, prepared) if e is not None]
        return errors

    def _update(self, kind, key, obj, expected_rv, subresource: str = ""):
        current = self.get(kind, key)
        check_update(current, obj, expected_rv)
        body = dict(obj)
        body["metadata"] = dict(obj["metadata"], resourceVersion=expected_rv or current["metadata"]["resourceVersion"])
        body["apiVersion"] = RESOURCES[kind][0]
        try:
            updated = self._call("PUT", _path(kind, *_split(kind, key)) + subresource, body=body, trim=_trim(kind))
        except ApiError as e:
            if e.status == 404:
                raise Conflict("NotFound") from None
            if e.status == 409:
                raise Conflict("ResourceVersionMismatch") from None
            if e.status == 422:
                raise self._object_error(kind, key, e) from None
            raise
        _wrote(kind, updated["metadata"]["resourceVersion"])
        return _typed(kind, updated)

    def _update_status(self, kind, key, obj, expected_rv):
        return self._update(kind, key, obj, expected_rv, "/status" if kind in STATUS_SUBRESOURCE else "")

    def _delete(self, kind: str, key: str, uid: str | None) -> str | None:
        """Delete at once (grace period 0: this store's DELETED event means gone), dependents
        left to the garbage collector as kubectl leaves them (Background: without it, the API
        server would hold a ReplicationController with its legacy "orphan" finalizer)."""
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                   "propagationPolicy": "Background"}
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            last = self._call("DELETE", _path(kind, *_split(kind, key)), body=options)
        except ApiError as e:
            if e.status == 404:
                return "PodNotFound"
            if e.status == 409:
                return "UIDMismatch"
            raise
        if (last.get("metadata") or {}).get("resourceVersion"):
            _wrote(kind, last["metadata"]["resourceVersion"])
        return None

    def delete(self, kind: str, key: str) -> bool:
        check_kind(kind)
        return self._delete(kind, key, None) is None

    # --- the scheduler's writes -----------------------------------------------------------

    def _bind(self, key: str, node: str, uid: str | None) -> str | None:
        # The answer is a Status without the pod's new resourceVersion: readers of this
        # client wait for their watch to show the binding instead.
        return self._post_to_pod(key, "binding", _binding(key, node, uid), "bound", _BINDING_REASONS)

    def _post_to_pod(self, key: str, subresource: str, body: dict, awaited: str,
                     reasons: dict) -> str | None:
        """POST a pod subresource whose answer carries no resourceVersion: register first
        that readers must wait for the watch to show `awaited`, then post; an API error is
        turned into the outcome `reasons[status]` (a string, or a function of the error),
        404 into "PodNotFound"."""
        ns, name = _split("Pod", key)
        self._await("Pod", key, awaited)
        try:
            self._call("POST", _path("Pod", ns, name) + "/" + subresource, body=body)
        except ApiError as e:
            self._forget("Pod", key)
            return _outcome(e, reasons)
        except BaseException:
            self._forget("Pod", key)
            raise
        self._answered("Pod", key)
        return None

    def _posts_to_pods(self, subresource: str, rows: list[tuple[str, dict]], awaited: str,
                       reasons: dict) -> list[str | None]:
        """`_post_to_pod` for each (key, body) of `rows` at once, every request written and
        its answer read by this thread (KubeHttp.request_many): a pod's rows one after
        another, in their order. Each row's outcome; when a request could not be sent or
        answered (or an answer is an error `reasons` does not name), the first such error is
        raised once every answer is in."""
        chains: dict[str, list[int]] = {}
        for i, (key, _) in enumerate(rows):
            chains.setdefault(key, []).append(i)
            self._await("Pod", key, awaited)
        requests = [[("POST", _path("Pod", *_split("Pod", rows[i][0])) + "/" + subresource, rows[i][1],
                      "application/json") for i in chain] for chain in chains.values()]
        try:
            answers = self._http.request_many(requests, self._pace, self._in_flight)
        except BaseException:
            for key in chains:
                self._forget("Pod", key)
            raise
        outcomes: list[str | None] = [None] * len(rows)
        failure = None
        for chain, chain_answers in zip(chains.values(), answers):
            for i, answer in zip(chain, chain_answers):
                key = rows[i][0]
                if answer.__class__ is tuple and 200 <= answer[0] < 300:
                    self._answered("Pod", key)
                    continue
                self._forget("Pod", key)
                if answer.__class__ is not tuple:  # not sent or not answered
                    failure = failure or answer
                    continue
                try:
                    outcomes[i] = _outcome(ApiError(*answer), reasons)
                except ApiError as e:
                    failure = failure or e
        if failure is not None:
            raise failure
        return outcomes

    @property
    def _pace(self):
        """What request_many calls before each request: the client's QPS limit, if any."""
        return self._limiter.wait if self._limiter is not None else None

    def _in_parallel(self, fn, rows: list[tuple]) -> list:
        """fn(*row) for every row, concurrently, except that rows for the same pod run in
        their given order (the second binding of a pod must see the first)."""
        if len(rows) <= 1:
            return [fn(*row) for row in rows]
        by_key: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            by_key.setdefault(row[0], []).append(i)
        results: list = [None] * len(rows)

        def run(indices):
            for i in indices:
                results[i] = fn(*rows[i])

        for f in [self._pool.submit(run, ix) for ix in by_key.values()]:
            f.result()
        return results

    def bind_many(self, bindings):
        rows = list(bindings)
        if len(rows) <= 1 or not self._http.multiplexes:
            return self._in_parallel(self._bind, rows)
        return self._posts_to_pods("binding", [(key, _binding(key, node, uid)) for key, node, uid in rows],
                                   "bound", _BINDING_REASONS)

    def _evict(self, key: str, uid: str | None) -> str | None:
        """Through the Eviction API, so PodDisruptionBudgets are honoured: a 429 (the budget
        allows no disruption now) is the outcome "DisruptionBudget", not an error."""
        ns, name = _split("Pod", key)
        options = {"gracePeriodSeconds": 0}
        if uid:
            options["preconditions"] = {"uid": uid}
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns},
                    "deleteOptions": options}
        if uid:  # the server retries a failed precondition for many seconds: look first
            pod = self.get("Pod", key)
            if pod is None:
                return "PodNotFound"
            if pod["metadata"].get("uid") != uid:
                return "UIDMismatch"
        return self._post_to_pod(key, "eviction", eviction, "deleted",
                                 {409: "UIDMismatch", 429: "DisruptionBudget"})

    def evict_many(self, evictions, respect_budgets: bool = True):
        if respect_budgets:
            return self._in_parallel(self._evict, list(evictions))
        return self._in_parallel(lambda key, uid: self._delete("Pod", key, uid), list(evictions))

    def _patch_status(self, key: str, make_patch, unchanged) -> bool:
        """A status patch of a pending pod, guarded by its resourceVersion (retried when
        someone else wrote in between); False when the pod is gone, bound or unchanged."""
        ns, name = _split("Pod", key)
        for _ in range(5):
            pod = self.get("Pod", key)
            if pod is None or (pod.get("spec") or {}).get("nodeName") or unchanged(pod):
                return False
            patch = make_patch(pod)
            patch["metadata"] = {"resourceVersion": pod["metadata"]["resourceVersion"]}
            try:
                out = self._call("PATCH", _path("Pod", ns, name) + "/status", body=patch,
                                 content_type="application/merge-patch+json")
            except ApiError as e:
                if e.status == 409:
                    continue
                if e.status == 404:
                    return False
                raise
            _wrote("Pod", out["metadata"]["resourceVersion"])
            return True
        return False

    def set_nominated_node(self, pod_key: str, node: str | None) -> bool:
        return self._patch_status(
            pod_key, lambda pod: {"status": {"nominatedNodeName": node or None}},
            lambda pod: nominated_already(pod, node))

    def set_unschedulable(self, pod_key: str, message: str) -> bool:
        def unchanged(pod):
            return unschedulable_already(pod, message)

        def patch(pod):  # the whole conditions list: a merge patch replaces lists
            status = apply_patch({"status": dict(pod.get("status") or {})},
                                 unschedulable_patch(message, now_rfc3339()))["status"]
            return {"status": {"conditions": status["conditions"]}}
        return self._patch_status(pod_key, patch, unchanged)

    def set_unschedulable_many(self, items) -> list[bool]:
        return self._in_parallel(self.set_unschedulable, list(items))

    # --- leases: coordination.k8s.io Leases ------------------------------------------------

    def _lease_name(self, role: str, id_: str) -> str:
        """`shardsched-<role>-<id>`; an election lease is named by its resourceName alone, as
        client-go's are, so RBAC can grant exactly that name."""
        return id_ if role == ELECTION_ROLE else f"shardsched-{role}-{id_}"

    def put_lease(self, role: str, id_: str, address: str, ttl_s: float) -> None:
        """Create or renew. The address is the holderIdentity; the Lease's renewTime plus
        leaseDurationSeconds (whole seconds, rounded up) is when it expires."""
        name = self._lease_name(role, id_)
        now = _rfc3339_micro(time.time())
        spec = {"holderIdentity": address, "leaseDurationSeconds": max(1, int(-(-ttl_s // 1))),
                "renewTime": now}
        # sub-second TTLs (tests) are kept exactly in an annotation
        meta = {"name": name, "namespace": self.lease_namespace, "labels": {LEASE_LABEL: role},
                "annotations": {"shardsched.io/ttl-seconds": repr(float(ttl_s))}}
        path = self._lease_path()
        try:
            self._call("PATCH", self._lease_path(name), body={"metadata": meta, "spec": spec},
                       content_type="application/merge-patch+json")
        except ApiError as e:
            if e.status != 404:
                raise
            try:
                self._call("POST", path, body={"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                               "metadata": meta, "spec": dict(spec, acquireTime=now)})
            except ApiError as e2:
                if e2.status != 409:  # created concurrently: the next renewal patches it
                    raise

    def _lease_path(self, name: str = "") -> str:
        path = f"{LEASES}/namespaces/{quote(self.lease_namespace)}/leases"
        return f"{path}/{quote(name)}" if name else path

    @staticmethod
    def _lease_live(lease: dict, now: float) -> bool:
        spec = lease.get("spec") or {}
        renew = spec.get("renewTime")
        if not renew or not spec.get("holderIdentity"):
            return False
        ttl = (lease["metadata"].get("annotations") or {}).get("shardsched.io/ttl-seconds")
        ttl = float(ttl) if ttl else float(spec.get("leaseDurationSeconds") or 0)
        return _parse_time(renew) + ttl > now

    def acquire_lease(self, role: str, id_: str, holder: str, ttl_s: float) -> bool:
        """client-go's leader election on a coordination.k8s.io Lease: create it, or update
        it (guarded by its resourceVersion) when it is ours, expired or released."""
        name = self._lease_name(role, id_)
        now = time.time()
        stamp = _rfc3339_micro(now)
        spec = {"holderIdentity": holder, "leaseDurationSeconds": max(1, int(-(-ttl_s // 1))),
                "renewTime": stamp}
        meta = {"name": name, "namespace": self.lease_namespace, "labels": {LEASE_LABEL: role},
                "annotations": {"shardsched.io/ttl-seconds": repr(float(ttl_s))}}
        try:
            lease = self._call("GET", self._lease_path(name))
        except ApiError as e:
            if e.status != 404:
                raise
            try:
                self._call("POST", self._lease_path(), body={
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                    "spec": dict(spec, acquireTime=stamp, leaseTransitions=0)})
            except ApiError as e2:
                if e2.status == 409:  # someone else created it first
                    return False
                raise
            return True
        current = lease.get("spec") or {}
        ours = current.get("holderIdentity") == holder
        if not ours and self._lease_live(lease, now):
            return False
        if not ours:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        meta["resourceVersion"] = lease["metadata"]["resourceVersion"]
        try:
            self._call("PUT", self._lease_path(name), body={
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {**current, **spec}})
        except ApiError as e:
            if e.status in (404, 409):  # changed under us: whoever changed it holds it now
                return False
            raise
        return True

    def list_leases(self, role: str) -> dict[str, str]:
        """Live leases of `role`: renewTime + duration still in the future."""
        page = self._call("GET", self._lease_path(), query=[("labelSelector", f"{LEASE_LABEL}={role}")])
        now = time.time()
        prefix = self._lease_name(role, "")
        return {lease["metadata"]["name"][len(prefix):]: lease["spec"]["holderIdentity"]
                for lease in page.get("items") or [] if self._lease_live(lease, now)}

    def drop_lease(self, role: str, id_: str, holder: str | None = None) -> None:
        """Delete the Lease; with `holder`, only while it holds it (a delete guarded by the
        resourceVersion we read, so a takeover in between is never undone)."""
        name = self._lease_name(role, id_)
        options = {"apiVersion": "v1", "kind": "DeleteOptions"}
        try:
            if holder is not None:
                lease = self._call("GET", self._lease_path(name))
                if (lease.get("spec") or {}).get("holderIdentity") != holder:
                    return
                options["preconditions"] = {"resourceVersion": lease["metadata"]["resourceVersion"]}
            self._call("DELETE", self._lease_path(name), body=options)
        except ApiError as e:
            if e.status not in (404, 409):
                raise

    # --- events: events.k8s.io/v1 Events, as client-go's event broadcaster writes them ------

    def _write_event(self, ev: dict) -> str | None:
        path, _ = _event_path(ev)
        for _ in range(2):
            if ev.get("series"):  # seen again: update the count of the one already written
                method, url, body, content_type = self._first_event_request(ev)
                try:
                    self._call(method, url, body=body, content_type=content_type)
                    return None
                except ApiError as e:
                    if e.status != 404:  # gone (expired): written afresh below
                        return str(e)
            try:
                self._call("POST", path, body=ev)
                return None
            except ApiError as e:
                if e.status != 409:
                    return str(e)
                if not ev.get("series"):
                    return None  # a name of our own making exists: an earlier try wrote it
        return "the event changed under us twice"

    def write_events(self, events: list[dict]) -> list[str | None]:
        rows = [(f"{e['metadata']['namespace']}/{e['metadata']['name']}", e) for e in events]
        if len(rows) <= 1 or not self._http.multiplexes or len({k for k, _ in rows}) < len(rows):
            return self._in_parallel(lambda key, ev: self._write_event(ev), rows)
        # each event's first request at once from this thread (KubeHttp.request_many); the
        # rare answer that needs another step (a series whose event expired, a name taken)
        # goes through _write_event's whole dance after
        answers = self._http.request_many([[self._first_event_request(ev)] for ev in events], self._pace,
                                          self._in_flight)
        out: list[str | None] = []
        failure = None
        for ev, (answer,) in zip(events, answers):
            if answer.__class__ is not tuple:  # not sent or not answered
                failure = failure or answer
                out.append(None)
            elif 200 <= answer[0] < 300 or (answer[0] == 409 and not ev.get("series")):
                out.append(None)  # written (409: a name of our own making exists already)
            elif answer[0] in (404, 409):
                out.append(self._write_event(ev))
            else:
                out.append(str(ApiError(*answer)))
        if failure is not None:
            raise failure
        return out

    @staticmethod
    def _first_event_request(ev: dict) -> tuple[str, str, dict, str]:
        """The first request that writes `ev`: the series' PATCH, or the POST (_write_event
        sends the PATCH through it; write_events sends either for many events at once)."""
        path, name = _event_path(ev)
        if ev.get("series"):
            return "PATCH", f"{path}/{quote(name)}", {"series": ev["series"]}, "application/merge-patch+json"
        return "POST", path, ev, "application/json"

    def list_events(self) -> list[dict]:
        items, cont = [], None
        while True:
            query = [("limit", "5000")] + ([("continue", cont)] if cont else [])
            page = self._call("GET", f"{EVENTS}/events", query=query)
            items += [dict(o, apiVersion="events.k8s.io/v1", kind="Event") for o in page.get("items") or []]
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items
