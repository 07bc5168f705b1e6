"""PrioritySort: higher priority first, then the pod that entered the queue earlier."""
from __future__ import annotations

from common.plugins import priority_sort
from ..framework import Plugin


class PrioritySort(Plugin, priority_sort.PrioritySort):
    def less(self, a, b) -> bool:
        """`a` and `b` are queued pod entries (pod, queued_at)."""
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        return a.queued_at < b.queued_at
