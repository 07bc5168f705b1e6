"""One way in for store events: a role declares the kinds it keeps, the intake applies them.

Every runtime process follows the store (common.runtime.informer) and keeps some kinds of objects:
the shard its cache, queue and volumes, the binder its view, the dispatcher its pending pods
and the PodGroups' status. Each declares, per kind, what it does with that kind's events
(`Kind`), and `Intake` routes every event to the declarations of its kind, once, in the
order they were given. The informer's watch kinds come from the declarations (`kinds`, in
the object model's CREATE_ORDER: PriorityClasses before the Pods that refer to them), so a
new kind is one declaration per role that keeps it (after common.model.objects has learnt to parse
it and the stores to hold it: CREATE_ORDER, NAMESPACED).

A declaration applies its kind in one of three ways:

* `keep`: a dict the parsed objects are kept in under their key, dropped on DELETED (the
  PodDisruptionBudgets, the PriorityClasses);
* `put` and `drop`: `put(parsed)` on ADDED and MODIFIED, `drop(key)` on DELETED (a keyed
  collection behind methods: the volume kinds in common.scheduling.volumes.VolumeState);
* `handle`: `handle(type_, obj)` with the raw object, for kinds a role follows closely
  (pods, nodes, PodGroups); it parses what it needs through `Intake.parse`.

A declaration may also say what its kind's initial list may pass over unread (`skip_listed`,
a common.store.base.ListSkip: the dispatcher, which needs pending pods only, skips bound
ones); the list skips a pod only when every declaration of the kind allows it. Likewise
`skip_event(type_, key, bound, data)`: the watch events it may pass over before they are
decoded (on a store that can: common.store.base.ClusterStore.read), e.g. the dispatcher's
events of bound pods it does not hold. And `take_status(type_, key, status)`: a pod's
status-only write (an event with the store's status hint, Redis's StatusEvent) the role
applies from the hint alone, its document never decoded (the shard's and the binder's
bound pods: `status_hinted`); asked in the events' order, and only of a kind with one
declaration; what it declines is decoded and applied as usual. Likewise
`take_undecoded(type_, key, document, event)`: an event the store hands over undecoded (a
pod's creation on Redis, its `document` the stored bytes) the role holds as it is, decoding
it only if it ever needs it (the shard, another shard's pending pod: Informer.decoded).

and may add `then()`, called after each event `keep` or `put`/`drop` applied (what to wake
up), `parse` (the kind's parse function; common.model.objects.parse_object by default), and
`current(key)` with `unchanged(old_raw, new_raw)`: an update `unchanged` finds no different
from the version kept now is skipped before any parse (a node's heartbeat).

An object that cannot be parsed (`ObjectError`) is recorded in `errors` under the object's
name ("Pod default/web") and logged once; it is left out and the rest flows. Any other
exception a declaration raises reaches the informer, which skips the object and counts it
(its `skipped`: the roles' `skipped_objects`); records a store cannot decode at all are the
store's `skipped_records`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable

import orjson

from ..errors import ObjectError
from .informer import Informer
from ..model.objects import CREATE_ORDER, object_key, parse_object
from ..model.parsing import TERMINAL_PHASES, cached_time
from ..store.base import WATCH_LINGER_S

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    """What a role does with the events of one kind (see the module doc)."""

    kind: str
    keep: dict | None = None
    put: Callable[[Any], None] | None = None
    drop: Callable[[str], None] | None = None
    handle: Callable[[str, dict], None] | None = None
    then: Callable[[], None] | None = None
    parse: Callable[[dict], Any] | None = None
    current: Callable[[str], Any] | None = None
    unchanged: Callable[[dict, dict], bool] | None = None
    #: what the initial list may pass over unread (common.store.base.ListSkip; kind Pod):
    #: used only when every declaration of the kind allows it, as what all of them skip
    skip_listed: Any = None
    #: `(type_, key, bound, data) -> bool`: the watch events the role may pass over unread
    #: (common.store.base.EventSkip, without the kind); used only when every declaration of
    #: the kind passes over the event
    skip_event: Callable[[str, str, bool, bytes], bool] | None = None
    #: `(type_, key, status) -> bool`: a status-only write applied from its hint (kind Pod;
    #: the kind's only declaration), True when taken
    take_status: Callable[[str, str, bytes], bool] | None = None
    #: `(type_, key, document, event) -> bool`: an undecoded event held as it is (kind Pod;
    #: the kind's only declaration), True when taken
    take_undecoded: Callable[[str, str, bytes, Any], bool] | None = None

    def __post_init__(self):
        ways = [self.keep is not None, self.put is not None or self.drop is not None, self.handle is not None]
        if sum(ways) != 1:
            raise ValueError(f"{self.kind}: declare one of keep, put and drop, or handle")
        if ways[1] and (self.put is None or self.drop is None):
            raise ValueError(f"{self.kind}: put and drop go together")
        if ways[2] and (self.then is not None or self.parse is not None):
            raise ValueError(f"{self.kind}: a handler parses and wakes what it needs itself")
        if (self.current is None) != (self.unchanged is None):
            raise ValueError(f"{self.kind}: current and unchanged go together")
        if (self.skip_listed is not None or self.skip_event is not None or self.take_status is not None
                or self.take_undecoded is not None) and self.kind != "Pod":
            raise ValueError(f"{self.kind}: only a Pod list or watch can skip what it does not need")


def _locked(take: Callable[..., bool] | None, lock) -> Callable[..., bool] | None:
    """`take` called under `lock` (when both are given)."""
    if take is None or lock is None:
        return take

    def locked(*event) -> bool:
        with lock:
            return take(*event)
    return locked


def _of_sole_declarations(by_kind: dict[str, list[Kind]], field: str) -> dict:
    """kind -> `field` of the kind's declaration, for the kinds declared once with it set: a
    taker that may pass over an event's decoding must be the only one that reads it."""
    return {kind: getattr(decls[0], field) for kind, decls in by_kind.items()
            if len(decls) == 1 and getattr(decls[0], field) is not None}


#: the kinds a common.scheduling.volumes.VolumeState keeps
VOLUME_KINDS = ("StorageClass", "CSINode", "PersistentVolume", "PersistentVolumeClaim")
#: the kinds a common.scheduling.device_state.DeviceState keeps
DEVICE_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim")
#: the kinds a common.scheduling.workloads.Workloads keeps
WORKLOAD_KINDS = ("Service", "ReplicaSet", "StatefulSet", "ReplicationController")


def volume_kinds(volumes, then: Callable[[], None] | None = None) -> list[Kind]:
    """The declarations of the storage kinds kept in `volumes` (a common.scheduling.volumes.VolumeState)."""
    return [Kind(k, put=volumes.set, drop=partial(volumes.remove, k), then=then) for k in VOLUME_KINDS]


def device_kinds(devices, then: Callable[[], None] | None = None) -> list[Kind]:
    """The declarations of DRA's kinds kept in `devices` (a common.scheduling.device_state.DeviceState)."""
    return [Kind(k, put=devices.set, drop=partial(devices.remove, k), then=then) for k in DEVICE_KINDS]


def workload_kinds(workloads) -> list[Kind]:
    """The declarations of the kinds default spreading reads, kept in `workloads` (a
    common.scheduling.workloads.Workloads); they wake no pod (they change scores only)."""
    return [Kind(k, put=workloads.set, drop=partial(workloads.remove, k)) for k in WORKLOAD_KINDS]


def key_of(kind: str, obj: dict) -> str:
    """The key an object of `kind` is kept under ("namespace/name", or the name of a
    cluster-scoped one), read from the raw object."""
    meta = obj.get("metadata") or {}
    return object_key(kind, meta.get("namespace") or "default", meta.get("name"))


def same_version(known, obj: dict) -> bool:
    """Whether `obj` is the version of `known` (a parsed object) already applied: the same
    resourceVersion (a watch and another path delivering one object twice)."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return known is not None and bool(rv) and known.resource_version == rv


def status_update(known, obj: dict):
    """`known` (a parsed bound pod) with `obj`'s status, when `obj` is only a status update of
    it (Pod.status_only, common.model.changes.pod_status_only's rule on what the pod keeps: a
    kubelet saying it runs); None when it must be parsed in full, which also reports it if it
    cannot be read. `known` itself when the update changes nothing it keeps (no copy)."""
    if known is None or not known.status_only(obj):
        return None
    try:
        return known.with_status(obj)
    except ObjectError:
        return None


def status_hinted(known, status: bytes):
    """`known` (a parsed bound pod) as a status-only write's hint shows it (the store's
    status hint: a JSON list of its new phase, startTime and nominatedNodeName; see
    common.store.base.EventSkip), without its document; `known` itself when nothing it keeps
    changed. None when the hint cannot be taken alone: the phase crosses to or from terminal
    (the pod leaves or rejoins its node's accounting), the hint is not that list, or the
    start time does not parse; the event is then read in full, which reports what is wrong."""
    try:
        hint = orjson.loads(status)
    except orjson.JSONDecodeError:
        return None
    if hint.__class__ is not list or len(hint) != 3:
        return None
    phase, started, nominated = hint
    if phase.__class__ is not str or started.__class__ is not str or nominated.__class__ is not str:
        return None
    if known is None or not known.node_name or (known.phase in TERMINAL_PHASES) != (phase in TERMINAL_PHASES):
        return None
    start_time = cached_time(started) if started else known.start_time
    if start_time is None:
        return None  # not a time: read in full, which names the field
    # the usual case, a pod's later status writes: nothing it keeps changes, nothing is built
    if (start_time == known.start_time and (phase or known.phase) == known.phase
            and (nominated or None) == (known.nominated_node or None)):
        return known
    return known.with_hinted_status(phase, start_time, nominated)


def bound_from_patch(known, event):
    """`known`, a pending pod this process parsed, as the binding `event` (a store's event
    handed over undecoded: its stored `document` and pending `patch`, Redis's StoredEvent)
    shows it, from the patch alone: the binding's patch sets the node, the phase and the
    nominated node, all that common.model.objects.Pod.bound_copy reads of the document.
    None when the patch does not set all three, or the document is not `known`'s (another
    uid, searched in its bytes): then it is decoded and applied as usual."""
    patch = event.patch
    if patch is None or not known.uid:
        return None
    node, phase, nominated = patch.get("node"), patch.get("phase"), patch.get("nominated")
    if node.__class__ is not str or not node or phase.__class__ is not str or nominated.__class__ is not str:
        return None
    if f'"uid":"{known.uid}"'.encode() not in event.document:
        return None
    return known.bound_to(node, phase, nominated)


class Intake:
    """Routes a store's events to the declarations of their kind.

    `priority_classes`: the dict the role keeps its PriorityClasses in (pods are parsed
    against it); `logger`: where an unreadable object is reported.
    """

    def __init__(self, declarations: Iterable[Kind], *, priority_classes: dict | None = None,
                 logger: logging.Logger | None = None):
        self.declarations = tuple(declarations)
        self.priority_classes = priority_classes if priority_classes is not None else {}
        self.log = logger or log
        #: what could not be parsed: the object's name ("Pod default/web") -> why
        self.errors: dict[str, ObjectError] = {}
        by_kind: dict[str, list[Kind]] = {}
        for d in self.declarations:
            if d.kind not in CREATE_ORDER:
                raise ValueError(f"{d.kind}: not a kind the stores hold (common.model.objects.CREATE_ORDER)")
            by_kind.setdefault(d.kind, []).append(d)
        #: the kinds to watch, in the order they are listed
        self.kinds = tuple(k for k in CREATE_ORDER if k in by_kind)
        #: kind -> what its initial list may pass over (every declaration of it agreeing)
        self.skips = {}
        for kind, decls in by_kind.items():
            if all(d.skip_listed is not None for d in decls):
                skip = decls[0].skip_listed
                for d in decls[1:]:
                    skip = skip | d.skip_listed
                self.skips[kind] = skip
        #: kind -> what its watch events may pass over (every declaration of it agreeing)
        self.event_skips = {kind: [d.skip_event for d in decls] for kind, decls in by_kind.items()
                            if all(d.skip_event is not None for d in decls)}
        #: kind -> what takes its status-only writes from their hint (its one declaration)
        self.status_takers = _of_sole_declarations(by_kind, "take_status")
        #: kind -> what holds its undecoded events (its one declaration)
        self.undecoded_takers = _of_sole_declarations(by_kind, "take_undecoded")
        self._routes: dict[str, Callable[[str, dict], None]] = {
            kind: self._route(kind, decls) for kind, decls in by_kind.items()}

    # --- applying -------------------------------------------------------------------------

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        """One event (ADDED, MODIFIED or DELETED); kinds nobody declared are ignored."""
        route = self._routes.get(kind)
        if route is not None:
            route(type_, obj)

    def informer(self, store, on_relist: Callable[[], None] | None = None,
                 apply: Callable[[str, str, dict], None] | None = None,
                 linger_s: float = WATCH_LINGER_S, lock=None, listing=None) -> Informer:
        """An informer over the declared kinds that feeds `apply` (a role that applies under a
        lock passes its own, which calls this intake's, and the lock, which `take_status`
        takes too); `linger_s`: its syncs' linger (store.watchLingerSeconds); `listing`: the
        Informer's (what each list is delivered within)."""
        take = _locked(self.take_status if self.status_takers else None, lock)
        hold = _locked(self.take_undecoded if self.undecoded_takers else None, lock)
        return Informer(store, self.kinds, apply or self.apply, on_relist, self.skips,
                        self.skip_event if self.event_skips else None, linger_s,
                        listing=listing, take_status=take, take_undecoded=hold)

    def skip_event(self, kind: str, type_: str, key: str, bound: bool, data: bytes) -> bool:
        """The store's EventSkip over the declarations: an event every declaration of its
        kind passes over."""
        skips = self.event_skips.get(kind)
        return skips is not None and all(skip(type_, key, bound, data) for skip in skips)

    def take_status(self, kind: str, type_: str, key: str, status: bytes) -> bool:
        """A status-only write taken from its hint by its kind's declaration (True), or not
        (then it is decoded and applied)."""
        take = self.status_takers.get(kind)
        return take is not None and take(type_, key, status)

    def take_undecoded(self, kind: str, type_: str, key: str, document: bytes, event) -> bool:
        """An undecoded event held as it is by its kind's declaration (True), or not (then it
        is decoded and applied)."""
        take = self.undecoded_takers.get(kind)
        return take is not None and take(type_, key, document, event)

    def parse(self, obj: dict, parse: Callable[[dict], Any] | None = None):
        """`obj` parsed (by `parse`, else common.model.objects.parse_object against the kept
        PriorityClasses, lean: a bound pod keeps no raw document), or None when it cannot be:
        then reported."""
        try:
            return parse(obj) if parse is not None else parse_object(obj, self.priority_classes, lean=True)
        except ObjectError as e:
            self.report(e)
            return None

    def report(self, e: ObjectError) -> None:
        """An object the store holds that cannot be read: recorded in `errors`, logged once."""
        if e.obj not in self.errors:
            self.log.warning("ignoring an object the store holds but shardsched cannot read: %s", e)
        self.errors[e.obj] = e

    # --- building the routes --------------------------------------------------------------

    def _route(self, kind: str, decls: list[Kind]) -> Callable[[str, dict], None]:
        steps = [self._step(kind, d) for d in decls]
        if len(steps) == 1:
            return steps[0]

        def all_of(type_: str, obj: dict) -> None:
            for step in steps:
                step(type_, obj)
        return all_of

    def _step(self, kind: str, d: Kind) -> Callable[[str, dict], None]:
        if d.handle is not None:
            step = d.handle
        else:
            if d.keep is not None:
                into = d.keep
                put, drop = (lambda o: into.__setitem__(o.key, o)), (lambda key: into.pop(key, None))
            else:
                put, drop = d.put, d.drop
            parse, then = d.parse, d.then

            def step(type_: str, obj: dict) -> None:
                if type_ == "DELETED":
                    drop(key_of(kind, obj))
                else:
                    parsed = self.parse(obj, parse)
                    if parsed is None:
                        return
                    put(parsed)
                if then is not None:
                    then()
        if d.current is None:
            return step
        current, unchanged, inner = d.current, d.unchanged, step

        def step(type_: str, obj: dict) -> None:
            if type_ != "DELETED":
                old = current(key_of(kind, obj))
                if old is not None and unchanged(old.raw, obj):
                    return
            inner(type_, obj)
        return step
