"""Pods held at Permit: each plugin that answered "wait" must allow them before binding.

A pod leaves when every waiting plugin allowed it (it goes on to PreBind/Bind), when any
plugin rejects it, or when a plugin's timeout passes first (rejected "due to timeout", naming the wait as kube's framework
does, in Go's duration form: "after waiting 5m0s at plugin GangScheduling").
This is what gang scheduling builds on: a Permit plugin holds members until the group is
complete, then allows them all.
"""
from __future__ import annotations

from common.validation import format_duration

#: The start of kube's message for a pod whose Permit wait ran out ("... waiting 5m0s at
#: plugin NAME").
TIMED_OUT = "rejected due to timeout after waiting "


class Wait:
    """What a Permit plugin returns to hold the pod for up to `timeout` seconds."""

    __slots__ = ("timeout",)

    def __init__(self, timeout: float):
        self.timeout = timeout


class WaitingPod:
    __slots__ = ("entry", "result", "pending", "timeouts", "rejected", "unit")

    def __init__(self, entry, result, pending: dict, timeouts: dict, unit: str | None = None):
        self.entry = entry
        self.result = result
        self.pending = pending   # plugin name -> deadline
        self.timeouts = timeouts  # plugin name -> the wait it asked for (its timeout message names it)
        self.rejected = None     # message once a plugin rejected it
        self.unit = unit         # the pod group it is bound with, if any


class WaitingPods:
    def __init__(self, clock):
        self.clock = clock
        self.pods: dict[str, WaitingPod] = {}

    def __contains__(self, key: str) -> bool:
        return key in self.pods

    def hold(self, entry, result, waits: dict, unit: str | None = None) -> None:
        """Hold a pod until every plugin of `waits` allows it; `unit` names the pod group it
        is committed with (see take_ready)."""
        now = self.clock()
        pending = {name: now + w.timeout for name, w in waits.items()}
        timeouts = {name: w.timeout for name, w in waits.items()}
        self.pods[entry.pod.key] = WaitingPod(entry, result, pending, timeouts, unit)

    def in_unit(self, unit: str) -> list[str]:
        """Keys of the waiting pods of `unit`."""
        return [k for k, wp in self.pods.items() if wp.unit == unit]

    def take_ready(self, unit: str) -> list[WaitingPod]:
        """The pods of `unit` every plugin has allowed (not rejected), removed from the set:
        they are committed together with the member that completed the unit."""
        ready = [wp for wp in self.pods.values() if wp.unit == unit and not wp.pending and wp.rejected is None]
        for wp in ready:
            del self.pods[wp.entry.pod.key]
        return ready

    def allow(self, key: str, plugin: str) -> None:
        wp = self.pods.get(key)
        if wp is not None:
            wp.pending.pop(plugin, None)

    def reject(self, key: str, plugin: str, message: str) -> None:
        wp = self.pods.get(key)
        if wp is not None and wp.rejected is None:
            wp.rejected = f"rejected by {plugin}: {message}"

    def due(self):
        """(ready to bind, rejected with their message) — both removed from the waiting set."""
        now = self.clock()
        ready, rejected = [], []
        for key, wp in list(self.pods.items()):
            if wp.rejected is None:
                late = [name for name, deadline in wp.pending.items() if deadline <= now]
                if late:
                    waited = format_duration(wp.timeouts[late[0]])
                    wp.rejected = f"{TIMED_OUT}{waited} at plugin {late[0]}"
            if wp.rejected is not None:
                rejected.append((wp, wp.rejected))
            elif not wp.pending:
                ready.append(wp)
            else:
                continue
            del self.pods[key]
        return ready, rejected
