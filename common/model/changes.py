"""Which watch events change nothing a scheduler reads, recognised on the raw objects before
any parse, in every process.

Most of a real cluster's events are such updates: kubelets (and kwok) rewrite a node's status
every few minutes to say it is alive (heartbeat times, the same conditions), and set a bound
pod's status as it starts (phase Running, IPs, container states, its start time). Parsing
them, cloning the node into the next snapshot and moving every unschedulable pod back to the
active queue would cost more than the scheduling they cannot influence. Dict comparisons of
the few sections that matter are done in C and cost a microsecond or two.
"""
from __future__ import annotations

from .objects import TERMINAL_PHASES


def node_unchanged(old: dict, new: dict) -> bool:
    """Whether `new` is `old` with only what no plugin reads changed: its status conditions,
    heartbeat times, addresses, daemon endpoints, node info, resourceVersion, managedFields.
    What is read: uid, labels, annotations, spec (taints, unschedulable), allocatable (or
    capacity) and images."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if (om.get("uid") != nm.get("uid") or om.get("labels") != nm.get("labels")
            or om.get("annotations") != nm.get("annotations") or old.get("spec") != new.get("spec")):
        return False
    os_, ns = old.get("status") or {}, new.get("status") or {}
    return (os_.get("allocatable") == ns.get("allocatable") and os_.get("capacity") == ns.get("capacity")
            and os_.get("images") == ns.get("images"))


def pod_status_only(old: dict, new: dict) -> bool:
    """Whether `new` is a status update of the bound pod `old` that leaves what it holds as it
    was: the same uid, node, spec, labels and annotations, not being deleted, and its phase on
    the same side of terminal (Pending -> Running, a new IP, container states, a start time).
    The roles, which keep no document of a bound pod, judge the same rule on what they keep
    (common.model.objects.Pod.status_only)."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if (om.get("uid") != nm.get("uid") or nm.get("deletionTimestamp") or old.get("spec") != new.get("spec")
            or om.get("labels") != nm.get("labels") or om.get("annotations") != nm.get("annotations")):
        return False
    old_phase = (old.get("status") or {}).get("phase")
    new_phase = (new.get("status") or {}).get("phase")
    return (old_phase in TERMINAL_PHASES) == (new_phase in TERMINAL_PHASES)
