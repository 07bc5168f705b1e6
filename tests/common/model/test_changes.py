"""common.model.changes: the updates that change nothing a scheduler reads, told apart on the raw
objects."""
from __future__ import annotations

import copy

import pytest

from common.model.changes import node_unchanged, pod_status_only
from builders import node, pod


def heartbeat(d: dict, stamp: str = "2026-11-23T10:00:00Z") -> dict:
    d = copy.deepcopy(d)
    d["metadata"]["resourceVersion"] = "99"
    d["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}]
    d["status"]["addresses"] = [{"type": "InternalIP", "address": "10.0.0.1"}]
    return d


def changed(d: dict, path: str, value) -> dict:
    d = copy.deepcopy(d)
    *parents, last = path.split(".")
    at = d
    for p in parents:
        at = at.setdefault(p, {})
    at[last] = value
    return d


NODE = node("n1", labels={"zone": "a"}, taints=["dedicated=x:NoSchedule"], images={"img:1": 1000})


@pytest.mark.parametrize("update, unchanged", [
    (heartbeat(NODE), True),
    (heartbeat(heartbeat(NODE), "2026-11-23T10:05:00Z"), True),
    (changed(NODE, "metadata.labels", {"zone": "b"}), False),
    (changed(NODE, "metadata.annotations", {"a": "b"}), False),
    (changed(NODE, "spec.unschedulable", True), False),
    (changed(NODE, "spec.taints", []), False),
    (changed(NODE, "status.allocatable", {"cpu": "8", "memory": "8Gi", "pods": "110"}), False),
    (changed(NODE, "status.images", []), False),
    (changed(NODE, "metadata.uid", "recreated"), False),
])
def test_node_unchanged(update, unchanged):
    assert node_unchanged(NODE, update) is unchanged


BOUND = pod("p", cpu="1", node_name="n1", phase="Pending")


@pytest.mark.parametrize("update, status_only", [
    (changed(changed(BOUND, "status.phase", "Running"), "status.startTime", "2026-11-23T10:00:00Z"), True),
    (changed(BOUND, "status.podIP", "10.1.2.3"), True),
    (changed(BOUND, "status.phase", "Succeeded"), False),
    (changed(BOUND, "status.phase", "Failed"), False),
    (changed(BOUND, "metadata.deletionTimestamp", "2026-11-23T10:00:00Z"), False),
    (changed(BOUND, "metadata.labels", {"app": "other"}), False),
    (changed(BOUND, "spec.nodeName", "n2"), False),
    (changed(BOUND, "spec.containers", [{"name": "c0", "image": "x", "resources": {"requests": {"cpu": "2"}}}]),
     False),
    (changed(BOUND, "metadata.uid", "recreated"), False),
])
def test_pod_status_only(update, status_only):
    assert pod_status_only(BOUND, update) is status_only
