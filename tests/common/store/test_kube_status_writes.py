"""common.store.kube_status_writes: a pod's status-only writes told from the server's bytes."""
from __future__ import annotations

import orjson

from common.store.kube_status_writes import StatusWrites, hint as status_hint
from builders import api_pod


def line(type_: str, rv: int, node: str = "", labels=None, status=None, managed_at: str = "t0") -> bytes:
    """A pod's watch event as the API server writes it (its fields in Go's order)."""
    base = api_pod("p")
    meta = {"name": "p", "namespace": "default", "uid": "u-1", "resourceVersion": str(rv),
            "creationTimestamp": "2026-11-27T09:00:00Z", "labels": labels or {"app": "a"},
            "managedFields": [{"manager": "kubelet", "operation": "Update", "time": managed_at}]}
    spec = {**base["spec"], **({"nodeName": node} if node else {})}
    return orjson.dumps({"type": type_, "object": {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec,
                                                   "status": status or {"phase": "Pending"}}})


def hint(writes: StatusWrites, type_: str, data: bytes, key: str = "default/p"):
    """The event's status hint, None when the writes say it is not a status-only one."""
    start = data.index(b'"resourceVersion":"') + len(b'"resourceVersion":"')
    at = writes.status_at(type_, key, data, (start, data.index(b'"', start)))
    return None if at is None else status_hint(data, at)


def test_a_write_that_changed_only_the_status_has_its_hint():
    writes = StatusWrites()
    assert hint(writes, "ADDED", line("ADDED", 5)) is None
    assert hint(writes, "MODIFIED", line("MODIFIED", 6, node="n1")) is None  # the binding: spec changed
    running = {"phase": "Running", "startTime": "2026-11-27T09:00:01Z", "conditions": [{"type": "Ready",
                                                                                         "status": "True"}]}
    got = hint(writes, "MODIFIED", line("MODIFIED", 7, node="n1", status=running, managed_at="t1"))
    assert orjson.loads(got) == ["Running", "2026-11-27T09:00:01Z", ""]
    nominated = {"phase": "Pending", "nominatedNodeName": "n2"}
    assert orjson.loads(hint(writes, "MODIFIED", line("MODIFIED", 8, node="n1", status=nominated))) == \
        ["Pending", "", "n2"]


def test_a_write_that_changed_anything_else_has_none():
    writes = StatusWrites()
    hint(writes, "MODIFIED", line("MODIFIED", 6, node="n1"))
    assert hint(writes, "MODIFIED", line("MODIFIED", 7, node="n1", labels={"app": "b"},
                                         status={"phase": "Running"})) is None
    # (and the relabelled document is what the next write is compared with)
    assert hint(writes, "MODIFIED", line("MODIFIED", 8, node="n1", labels={"app": "b"},
                                         status={"phase": "Running", "startTime": "x"})) is not None


def test_a_pod_not_seen_before_a_deleted_one_and_one_forgotten_for_room_have_none():
    writes = StatusWrites(capacity=2)
    assert hint(writes, "MODIFIED", line("MODIFIED", 6, node="n1", status={"phase": "Running"})) is None
    hint(writes, "DELETED", line("DELETED", 7, node="n1"))
    assert hint(writes, "MODIFIED", line("MODIFIED", 8, node="n1", status={"phase": "Running"})) is None
    for other in ("default/q", "default/r"):  # two other pods seen since: p is forgotten
        hint(writes, "MODIFIED", line("MODIFIED", 9), key=other)
    assert len(writes) == 2
    assert hint(writes, "MODIFIED", line("MODIFIED", 10, node="n1", status={"phase": "Succeeded"})) is None


def test_a_status_that_does_not_decode_has_no_hint_and_is_left_to_the_full_decoding():
    writes = StatusWrites()
    hint(writes, "MODIFIED", line("MODIFIED", 6, node="n1"))
    broken = line("MODIFIED", 7, node="n1", status={"phase": "Running"}).replace(b'"phase":"Running"', b'"phase":Running')
    assert hint(writes, "MODIFIED", broken) is None
