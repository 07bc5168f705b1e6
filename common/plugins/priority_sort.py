"""PrioritySort: the queue orders pods by priority, then by when they were queued."""
from __future__ import annotations

from .interface import QueueSortPlugin
from .spec import PluginSpec


class PrioritySort(PluginSpec, QueueSortPlugin):
    name = "PrioritySort"
