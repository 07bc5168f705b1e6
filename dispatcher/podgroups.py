"""The dispatcher keeps each scheduler-plugins PodGroup's status current, as scheduler-plugins'
PodGroup controller does (kube's own PodGroups are followed to keep a group on one shard, but
their status, conditions kube-scheduler writes, is not this controller's): phase (Pending, Scheduling, Scheduled, Running, Finished, Failed) and the
counts of members scheduled, running, succeeded and failed (common.model.podgroup.status_of).

It follows PodGroups and every pod's group label from the dispatcher's own watch, marks a
group dirty when it or one of its members changes, and writes the status of dirty groups at
most every WRITE_EVERY_S, each write guarded by the group's resourceVersion: a write that
lost a race (the binder's intent annotation, a user's edit) is retried with the next view.
"""
from __future__ import annotations

import copy
import logging
import time

from common.errors import Conflict
from common.runtime.intake import Kind
from common.model.objects import raw_pod_key
from common.model.podgroup import KIND, NATIVE_KIND, POD_GROUP_LABEL, GroupIndex, index_key_of, status_differs, status_of
from common.store.base import ListSkip

log = logging.getLogger(__name__)

WRITE_EVERY_S = 0.5


#: what a member pod's stored document holds (common.model.podgroup.raw_group_key reads them)
_MEMBER_MARKERS = (f'"{POD_GROUP_LABEL}"'.encode(), b'"schedulingGroup"')


class GroupStatus:
    def __init__(self, store, errors, clock=time.monotonic):
        """`errors`: the component's ErrorLog (a failing write is logged once, retried)."""
        self.store = store
        self.errors = errors
        self.clock = clock
        self.index = GroupIndex()
        self.dirty: set[str] = set()
        self._written_at = 0.0
        #: what it keeps of each kind (common.runtime.intake), among the dispatcher's declarations
        self.kinds = [Kind("PodGroup", handle=self._apply_group), Kind(NATIVE_KIND, handle=self._apply_group),
                      Kind("Pod", handle=self._apply_pod, skip_listed=ListSkip((POD_GROUP_LABEL,)),
                           skip_event=self._passes_over)]

    def _apply_group(self, type_: str, obj: dict) -> None:
        self.index.apply_group(type_, obj)
        self.dirty.add(index_key_of(obj))

    def _passes_over(self, type_: str, key: str, bound: bool, data: bytes) -> bool:
        """A pod event that cannot concern a group (the store's EventSkip, undecoded): the pod
        is no member now and its document names neither a pod-group label nor a native
        scheduling group."""
        return key not in self.index.group_of and not any(m in data for m in _MEMBER_MARKERS)

    def _apply_pod(self, type_: str, obj: dict) -> None:
        group = self.index.apply_pod(type_, raw_pod_key(obj), obj)
        if group is not None:
            self.dirty.add(group)

    def relist(self) -> None:
        self.index = GroupIndex()
        self.dirty.clear()

    def step(self) -> int:
        """Write the status of the dirty groups whose status changed; returns how many."""
        now = self.clock()
        if not self.dirty or now - self._written_at < WRITE_EVERY_S:
            return 0
        self._written_at = now
        dirty, self.dirty = self.dirty, set()
        written = 0
        for key in dirty:
            group = self.index.groups.get(key)
            if group is None or group.kind != KIND:
                continue  # (kube's PodGroup has no such status: its scheduler writes conditions)
            status = status_of(group, self.index.counts(key))
            if not status_differs(group.raw, status):
                continue
            obj = copy.deepcopy(group.raw)
            obj["status"] = {**(obj.get("status") or {}), **status}
            try:
                self.store.update_status(obj)
                written += 1
            except Conflict as e:
                if e.reason != "NotFound":
                    self.dirty.add(key)  # changed meanwhile: the watch brings the new version
            except Exception as e:
                self.errors.error(f"writing the status of PodGroup {key}", e)
                self.dirty.add(key)
        return written
