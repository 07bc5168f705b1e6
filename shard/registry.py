"""Names of the scheduling plugins a profile can enable, disable, weight or configure."""
from __future__ import annotations

from common.config import DEFAULT_PLUGINS


def known_plugins() -> set[str]:
    return set(DEFAULT_PLUGINS)
