"""ImageLocality: nodes that already hold the pod's images score higher."""
from __future__ import annotations

from .interface import ScorePlugin
from .spec import PluginSpec


class ImageLocality(PluginSpec, ScorePlugin):
    name = "ImageLocality"
