"""`shardsched simulate`: schedule the pending pods of some manifests on the memory store.

Pods with spec.nodeName are running; the other pods are pending, queued in file order, and
scheduled through the real shard code until nothing more can change (a pass in which no
pod was bound or evicted). Pods whose schedulerName is `default-scheduler` (the API's
default) are scheduled too, by the first profile: a manifest written for any cluster
should simulate without edits.
"""
from __future__ import annotations

import orjson

from common.errors import Conflict, ObjectError
from common.manifests import read_documents
from common.objects import CREATE_ORDER, parse_object
from common.store.memory import MemoryStore
from .loop import ShardLoop


def _describe(doc) -> str:
    if not isinstance(doc, dict):
        return "<object>"
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    kind = doc.get("kind") or "<no kind>"
    ns = meta.get("namespace") or ("default" if kind in ("Pod", "PodDisruptionBudget") else "")
    return f"{kind} {ns + '/' if ns else ''}{meta.get('name', '<unnamed>')}"


def simulate(paths, cfg: dict, seed: int = 0) -> tuple[dict, int]:
    """Returns (the JSON document, exit status 0 or 1)."""
    docs = [doc for path in paths for doc in read_documents(path)]
    errors = []
    accepted = []
    classes = {}
    for doc in docs:  # PriorityClasses first, so pods resolve their priority from them
        if isinstance(doc, dict) and doc.get("kind") == "PriorityClass":
            try:
                pc = parse_object(doc)
                classes[pc.key] = pc
            except ObjectError:
                pass
    for doc in docs:
        try:
            obj = parse_object(doc, classes)
        except ObjectError as e:
            errors.append(e.as_dict())
            continue
        accepted.append((obj, doc))
    store = MemoryStore()
    order = {k: i for i, k in enumerate(CREATE_ORDER)}
    accepted.sort(key=lambda od: order[od[0].kind])  # stable: pods keep file order
    pods = []
    for obj, doc in accepted:
        try:
            store.create(doc)
        except Conflict:
            errors.append({"object": _describe(doc), "field": "metadata.name", "message": "already exists"})
            continue
        if obj.kind == "Pod":
            pods.append(obj.key)
    clock = _VirtualClock()
    loop = ShardLoop(cfg, store, seed=seed, accept_default=True, clock=clock)
    loop.start()
    _run_until_stable(loop, clock)
    return _report(store, loop, pods, errors), (1 if errors else 0)


class _VirtualClock:
    """Simulated time. It stands still during a pass over the queue (assumptions never
    expire, and a pod that failed waits in backoff for the next pass instead of spinning),
    moves on by the longest backoff between passes, and jumps far ahead when only time can
    release pods held at Permit, so that they time out instead of hanging the simulation."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run_until_stable(loop: ShardLoop, clock: _VirtualClock) -> None:
    """Passes over the queue until one changes nothing in the store."""
    while True:
        changed = 0
        while loop.schedule_next() is not None:
            loop.release_waiting()
            changed += loop.sync()
        loop.release_waiting()
        changed += loop.sync()
        if loop.waiting.pods:  # only time can release them now
            clock.now += 1e9
            loop.release_waiting()
            changed += loop.sync()
        if not changed:
            break
        clock.now += loop.queue.max_backoff
        loop.queue.move_all_to_active()


def _report(store, loop: ShardLoop, pods: list, errors: list) -> dict:
    out = {}
    current = {}
    objs, _ = store.list("Pod")
    for d in objs:
        meta = d["metadata"]
        current[f"{meta.get('namespace') or 'default'}/{meta['name']}"] = d
    for key in pods:
        d = current.get(key)
        if d is None:  # only an eviction removes a pod during a simulation
            out[key] = {"status": "Evicted", "node": None, "nominatedNode": None,
                        "message": "", "evictedBy": loop.evicted_by.get(key)}
            continue
        spec, status = d.get("spec") or {}, d.get("status") or {}
        node = spec.get("nodeName")
        entry = {"status": "Bound" if node else "Unschedulable", "node": node or None,
                 "nominatedNode": status.get("nominatedNodeName") or None, "message": "",
                 "evictedBy": None}
        if not node:
            entry["message"] = loop.messages.get(key) or _invalid_message(loop, key)
        out[key] = entry
    return {"pods": out, "errors": errors}


def _invalid_message(loop: ShardLoop, key: str) -> str:
    err = loop.errors.get(f"Pod {key}")
    return f"invalid pod: {err.field}: {err.message}" if err else "not scheduled"


def dumps(doc: dict) -> str:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
