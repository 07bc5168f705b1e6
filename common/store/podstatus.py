"""The scheduler's writes to a pod, expressed as one small "patch" dict.

Binding, nominating and marking a pod unschedulable touch only a handful of string fields.
Both backends describe such a write with the same patch shape and fold it into the pod with
`apply_patch`, so they cannot drift apart. The Redis backend needs the patch form for a
second reason: its Lua scripts must not decode and re-encode whole objects, because Redis's
cjson turns empty lists into `{}` and rounds integers to 14 digits. A patch holds only
strings, which cjson round-trips exactly.

Patch keys (all optional):
  node       spec.nodeName
  phase      status.phase
  nominated  status.nominatedNodeName ("" removes it)
  cond       the PodScheduled condition: {"status", "reason"?, "message"?, "time"}
"""
from __future__ import annotations

import time

#: (second since the epoch, its RFC 3339 form) of the last now_rfc3339: a binder stamps
#: every binding, hundreds a second, and formatting a time costs more than the rest of the
#: patch. Replaced whole, so any thread may read it.
_last_second: tuple[int, str] = (-1, "")


def now_rfc3339(clock_ns=time.time_ns) -> str:
    """Kubernetes timestamps: second precision, UTC, 'Z' suffix (the second that
    `datetime.now(timezone.utc)` would give, formatted once per second)."""
    global _last_second
    second = clock_ns() // 1_000_000_000
    last = _last_second
    if last[0] != second:
        last = _last_second = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return last[1]


#: The PodScheduled condition the API server gives a pod created with scheduling gates.
SCHEDULING_GATED = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def gated(pod: dict) -> bool:
    """Whether the pod has scheduling gates (a binding is refused while it has)."""
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def mark_gated(pod: dict, now: str) -> None:
    """What the API server does to a new pod with scheduling gates (and no PodScheduled
    condition yet): PodScheduled=False, reason SchedulingGated. Modifies `pod`'s status in
    place; the caller passes its own copy."""
    if not gated(pod) or scheduled_condition(pod) is not None:
        return
    status = pod["status"] = dict(pod.get("status") or {})
    conditions = list(status.get("conditions") or [])
    conditions.append({"type": "PodScheduled", "status": "False", "reason": SCHEDULING_GATED,
                       "message": GATED_MESSAGE, "lastTransitionTime": now})
    status["conditions"] = conditions


def bound_patch(node: str, now: str) -> dict:
    """What a successful binding writes (the nomination is fulfilled, so it is cleared)."""
    return {"node": node, "phase": "Running", "nominated": "", "cond": {"status": "True", "time": now}}


def unschedulable_patch(message: str, now: str) -> dict:
    return {"cond": {"status": "False", "reason": "Unschedulable", "message": message, "time": now}}


def unschedulable_already(pod: dict, message: str) -> bool:
    """Whether the pod already says PodScheduled=False/Unschedulable with this message."""
    c = scheduled_condition(pod)
    return c is not None and (c.get("status"), c.get("reason"), c.get("message")) == (
        "False", "Unschedulable", message)


def nominated_already(pod: dict, node: str | None) -> bool:
    return (pod.get("status") or {}).get("nominatedNodeName", "") == (node or "")


def nominated_patch(node: str | None) -> dict:
    return {"nominated": node or ""}


def apply_patch(pod: dict, patch: dict) -> dict:
    """Fold `patch` into the pod dict in place (and return it)."""
    if "node" in patch:
        pod.setdefault("spec", {})["nodeName"] = patch["node"]
    status = pod.get("status")
    if status is None:
        status = pod["status"] = {}
    if "phase" in patch:
        status["phase"] = patch["phase"]
    if "nominated" in patch:
        if patch["nominated"]:
            status["nominatedNodeName"] = patch["nominated"]
        else:
            status.pop("nominatedNodeName", None)
    cond = patch.get("cond")
    if cond is not None:
        _set_scheduled_condition(status, cond)
    return pod


def _set_scheduled_condition(status: dict, cond: dict) -> None:
    """Replace the PodScheduled condition; like the API server, lastTransitionTime only moves
    when the status value actually changes."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
    new = {"type": "PodScheduled", "status": cond["status"]}
    if cond.get("reason"):
        new["reason"] = cond["reason"]
    if cond.get("message"):
        new["message"] = cond["message"]
    same = old is not None and old.get("status") == cond["status"] and old.get("lastTransitionTime")
    new["lastTransitionTime"] = old["lastTransitionTime"] if same else cond["time"]
    status["conditions"] = [new if c is old else c for c in conditions] if old is not None else conditions + [new]


def scheduled_condition(pod: dict) -> dict | None:
    """The pod's PodScheduled condition, if any.

    Writing the same Unschedulable message again would emit an event that makes every shard
    requeue the pod, fail again and write again; callers compare against this first."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "PodScheduled":
            return c
    return None
