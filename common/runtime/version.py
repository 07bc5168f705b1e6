"""shardsched's version: what `shardsched --version`, every Status reply and the
`shardsched_build_info` metric report, taken from the installed package's metadata so that
there is one place to change it (pyproject.toml)."""
from __future__ import annotations

import platform
from importlib import metadata


def _installed() -> str:
    try:
        return metadata.version("shardsched")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


VERSION = _installed()
PYTHON = platform.python_version()
