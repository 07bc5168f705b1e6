"""SchedulingGates: a pod with scheduling gates waits out of the queue until they are gone."""
from __future__ import annotations

from .interface import PreEnqueuePlugin
from .spec import PluginSpec


class SchedulingGates(PluginSpec, PreEnqueuePlugin):
    name = "SchedulingGates"
