"""Which of the API server's pod events are status-only writes, told from the server's bytes.

A kubelet (kwok, in the benchmarks) writes a pod's status through the status subresource a
few times as it starts the pod: Running, Ready, its containers. Each write is a MODIFIED
event of the whole pod to every watcher, and the binder and the shards decoded every one in
full (a few kilobytes of JSON, then a parse) to learn a phase and a start time. The Redis
store knows its own status writes and hands them over with a hint (common.store.base's
EventSkip: a JSON list of the new phase, startTime and nominatedNodeName), which the roles
apply to the pod they hold without decoding the document (common.runtime.intake's
`status_hinted`). The API server says nothing of the kind, so `StatusWrites` tells them
apart itself: it keeps a fingerprint of each recent pod's event less its status,
resourceVersion and managedFields (which every write changes), and an event whose
fingerprint equals the pod's previous one changed nothing but those. Its hint is then read
from the status alone (a kilobyte instead of the whole line).

Only the pods seen last are remembered (CAPACITY): a pod's start-up writes follow its
binding within seconds, and a fingerprint per running pod in every process would cost what
the lean pods saved. An event of a pod not remembered is decoded in full, as before, and so
is any event whose hint a role cannot take alone (common.runtime.intake's status_hinted: a
phase turning terminal, a pod it does not hold bound).

The fingerprint is Python's hash of the document's bytes around the status: the server
writes a given object as the same bytes every time (Go's fixed field order, map keys
sorted), so equal bytes mean an unchanged object, and two different documents of one pod
share a 64-bit hash by chance once in 2**64.
"""
from __future__ import annotations

from collections import OrderedDict

import orjson

#: Pods whose fingerprints are kept, the ones seen last (about 200 bytes each: 10 MB at most).
CAPACITY = 50_000

#: Where a pod's status starts in the server's line: the end of its spec, then the status
#: (the object's last field; no field of the spec is called "status").
_STATUS = b'},"status":{'
#: Where an object's metadata.managedFields starts in the server's bytes, and where they end
#: (the end of its metadata, right before its spec): kube_store cuts them out before decoding.
MANAGED_FIELDS, METADATA_END = b',"managedFields":[', b']},"spec":{'


class StatusWrites:
    """The fingerprints of the pods seen last, and which of their events are status-only."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._seen: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def status_at(self, type_: str, key: str, line: bytes, rv_span: tuple[int, int]) -> int | None:
        """Where the status of pod `key`'s event `line` starts (the server's bytes, the
        object's metadata.resourceVersion at `rv_span`) when the event is a status-only
        write of a pod seen just before (`hint(line, at)` then reads its hint); None
        otherwise. Every event of the pod is remembered (a deletion forgotten), in the order
        the watch brings them. Only bound pods' events need be shown it: the roles take hints
        of bound pods alone."""
        seen = self._seen
        before = seen.pop(key, None)
        if type_ == "DELETED":
            return None
        cut = line.rfind(_STATUS)
        if cut < 0:
            return None
        start, end = rv_span
        view = memoryview(line)  # (hashed where they lie: no copies of the document)
        managed = line.find(MANAGED_FIELDS, end, cut)
        metadata_end = line.find(METADATA_END, managed, cut) if managed >= 0 else -1
        if metadata_end >= 0:
            fingerprint = hash((view[:start], view[end:managed], view[metadata_end + 1:cut]))
        else:
            fingerprint = hash((view[:start], view[end:cut]))
        seen[key] = fingerprint
        if len(seen) > self.capacity:
            seen.popitem(last=False)
        return cut if type_ == "MODIFIED" and before == fingerprint else None


def hint(line: bytes, at: int) -> bytes | None:
    """The status hint of the status-only write `line` whose status starts at `at`
    (StatusWrites.status_at): the JSON list of its phase, startTime and nominatedNodeName;
    None when the status does not decode (the event is then decoded in full, which says
    what is wrong)."""
    tail = line.rstrip()
    if not tail.endswith(b"}}}"):
        return None
    try:
        status = orjson.loads(tail[at + len(_STATUS) - 1:-2])
    except orjson.JSONDecodeError:
        return None
    if status.__class__ is not dict:
        return None
    return orjson.dumps([status.get("phase") or "", status.get("startTime") or "",
                         status.get("nominatedNodeName") or ""])
