"""DefaultBinder: commit the placement by binding the pod in the cluster store."""
from __future__ import annotations

from .interface import BindPlugin
from .spec import PluginSpec


class DefaultBinder(PluginSpec, BindPlugin):
    name = "DefaultBinder"
