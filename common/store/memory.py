"""`memory://`: a single-process store for unit tests and `shardsched simulate`.

One condition variable guards everything; pollers wait on it and every write wakes them.
Objects and events are kept as orjson bytes, so a caller mutating a dict it got back can
never corrupt the store, and every read hands out a fresh copy cheaply.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import orjson

from ..errors import Conflict, ObjectError, ResourceVersionTooOld
from ..model.objects import KINDS
from .base import (EVENT_TTL_S, ClusterStore, Listeners, WatchEvent, already_exists, check_kind, check_update,
                   prepare, prepare_many)
from .podstatus import (SCHEDULING_GATED, apply_patch, bound_patch, gated, nominated_already, nominated_patch, now_rfc3339,
                        unschedulable_already, unschedulable_patch)


class MemoryStore(ClusterStore):
    """Thread-safe in-process store. rvs are consecutive integers, one per event.

    `history` bounds the events kept for watchers; older ones are dropped in chunks of a
    quarter of it (so trimming is amortised O(1) per write) and asking for them raises
    ResourceVersionTooOld, exactly as with a real API server's compacted etcd.
    """

    def __init__(self, history: int = 100_000):
        if history < 1:
            raise ValueError("history must be at least 1")
        self._history = history
        self._cond = threading.Condition()
        self._listeners = Listeners(self._cond)  # told of every event (`listen`)
        self._objects: dict[str, dict[str, bytes]] = {kind: {} for kind in KINDS}
        self._events: list[tuple[str, str, bytes]] = []  # the rv of _events[i] is _base + i
        self._base = 1
        self._rv = 0
        self._leases: dict[str, dict[str, tuple[str, float]]] = {}
        #: "namespace/name" -> (the Event as JSON, when it was last written)
        self._stored_events: dict[str, tuple[bytes, float]] = {}

    # --- the one write path: call with the lock held ----------------------------------------

    def _write(self, type_: str, kind: str, key: str, obj: dict) -> dict:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        data = orjson.dumps(obj)
        if type_ == "DELETED":
            del self._objects[kind][key]
        else:
            self._objects[kind][key] = data
        self._events.append((type_, kind, data))
        if len(self._events) > self._history + self._history // 4:
            drop = len(self._events) - self._history
            del self._events[:drop]
            self._base += drop
        self._listeners.notify()
        return obj

    def _load(self, kind: str, key: str) -> dict | None:
        data = self._objects[kind].get(key)
        return orjson.loads(data) if data is not None else None

    # --- reads ----------------------------------------------------------------------------

    def list(self, kind: str, cached: bool = False) -> tuple[list[dict], str]:
        check_kind(kind)
        with self._cond:
            items = list(self._objects[kind].values())
            rv = str(self._rv)
        return [orjson.loads(d) for d in items], rv

    def list_iter(self, kind: str, cached: bool = False, skip=None):
        check_kind(kind)
        with self._cond:
            items = list(self._objects[kind].values())
            rv = str(self._rv)
        items.reverse()

        def each():
            while items:
                obj = orjson.loads(items.pop())
                if skip is None or kind != "Pod" or not skip.skips(obj):
                    yield obj
        return each(), rv

    def get(self, kind: str, key: str) -> dict | None:
        check_kind(kind)
        with self._cond:
            return self._load(kind, key)

    def listen(self, ring) -> bool:
        self._listeners.add(ring)
        return True

    def _read(self, since_rv, timeout, max_events, kinds, positions=None):
        since = int(since_rv)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if since < self._base - 1:
                    raise ResourceVersionTooOld(
                        f"resourceVersion {since_rv} is too old: history starts after {self._base - 1}")
                start = since + 1 - self._base
                batch = self._events[start:start + max_events]
                remaining = deadline - time.monotonic()
                if batch or remaining <= 0:
                    break
                self._cond.wait(remaining)
        first = since + 1
        events = [WatchEvent(t, k, orjson.loads(d), str(first + i))
                  for i, (t, k, d) in enumerate(batch) if kinds is None or k in kinds]
        return events, (str(first + len(batch) - 1) if batch else None)

    # --- generic writes -------------------------------------------------------------------

    def create(self, obj: dict) -> dict:
        kind, key, stored = prepare(obj)
        with self._cond:
            if key in self._objects[kind]:
                raise Conflict("AlreadyExists")
            return self._write("ADDED", kind, key, stored)

    def create_many(self, objs: Iterable[dict]) -> list[ObjectError]:
        errors: list[ObjectError] = []
        for kind, key, stored in prepare_many(objs, errors):
            with self._cond:
                if key in self._objects[kind]:
                    errors.append(already_exists(kind, key))
                else:
                    self._write("ADDED", kind, key, stored)
        return errors

    def _update(self, kind, key, obj, expected_rv):
        with self._cond:
            current = self._load(kind, key)
            check_update(current, obj, expected_rv)
            return self._write("MODIFIED", kind, key, obj)

    def delete(self, kind: str, key: str) -> bool:
        check_kind(kind)
        with self._cond:
            current = self._load(kind, key)
            if current is None:
                return False
            self._write("DELETED", kind, key, current)
            return True

    # --- the scheduler's writes -----------------------------------------------------------

    def _pod(self, key: str, uid: str | None) -> tuple[dict | None, str | None]:
        """The pod, or the conflict reason that stops a write to it."""
        pod = self._load("Pod", key)
        if pod is None:
            return None, "PodNotFound"
        if uid and pod["metadata"].get("uid") != uid:
            return None, "UIDMismatch"
        return pod, None

    def bind_many(self, bindings):
        now = now_rfc3339()
        results = []
        with self._cond:
            for key, node, uid in bindings:
                pod, reason = self._pod(key, uid)
                if pod is not None and (pod.get("spec") or {}).get("nodeName"):
                    reason = "AlreadyBound"
                elif pod is not None and gated(pod):
                    reason = SCHEDULING_GATED
                if reason is None:
                    self._write("MODIFIED", "Pod", key, apply_patch(pod, bound_patch(node, now)))
                results.append(reason)
        return results

    def evict_many(self, evictions, respect_budgets: bool = True):
        results = []
        with self._cond:
            for key, uid in evictions:
                pod, reason = self._pod(key, uid)
                if reason is None:
                    self._write("DELETED", "Pod", key, pod)
                results.append(reason)
        return results

    def _patch_pending(self, key: str, patch: dict, unchanged) -> bool:
        with self._cond:
            pod = self._load("Pod", key)
            if pod is None or (pod.get("spec") or {}).get("nodeName") or unchanged(pod):
                return False
            self._write("MODIFIED", "Pod", key, apply_patch(pod, patch))
            return True

    def set_nominated_node(self, pod_key: str, node: str | None) -> bool:
        return self._patch_pending(pod_key, nominated_patch(node),
                                   lambda pod: nominated_already(pod, node))

    def set_unschedulable(self, pod_key: str, message: str) -> bool:
        return self._patch_pending(pod_key, unschedulable_patch(message, now_rfc3339()),
                                   lambda pod: unschedulable_already(pod, message))

    # --- leases ---------------------------------------------------------------------------

    def put_lease(self, role: str, id_: str, address: str, ttl_s: float) -> None:
        with self._cond:
            self._leases.setdefault(role, {})[id_] = (address, time.monotonic() + ttl_s)

    def list_leases(self, role: str) -> dict[str, str]:
        now = time.monotonic()
        with self._cond:
            leases = self._leases.get(role, {})
            for id_ in [i for i, (_, expiry) in leases.items() if expiry <= now]:
                del leases[id_]
            return {id_: address for id_, (address, _) in leases.items()}

    def acquire_lease(self, role: str, id_: str, holder: str, ttl_s: float) -> bool:
        now = time.monotonic()
        with self._cond:
            leases = self._leases.setdefault(role, {})
            current = leases.get(id_)
            if current is not None and current[0] != holder and current[1] > now:
                return False
            leases[id_] = (holder, now + ttl_s)
            return True

    def drop_lease(self, role: str, id_: str, holder: str | None = None) -> None:
        with self._cond:
            leases = self._leases.get(role, {})
            if holder is None or leases.get(id_, ("",))[0] == holder:
                leases.pop(id_, None)

    # --- events ---------------------------------------------------------------------------

    def write_events(self, events: list[dict]) -> list[str | None]:
        now = time.monotonic()
        with self._cond:
            for ev in events:
                meta = ev["metadata"]
                self._stored_events[f"{meta['namespace']}/{meta['name']}"] = (orjson.dumps(ev), now)
            self._expire_events(now)
        return [None] * len(events)

    def list_events(self) -> list[dict]:
        with self._cond:
            self._expire_events(time.monotonic())
            return [orjson.loads(data) for data, _ in self._stored_events.values()]

    def _expire_events(self, now: float) -> None:
        for key in [k for k, (_, at) in self._stored_events.items() if at < now - EVENT_TTL_S]:
            del self._stored_events[key]
