"""`shardsched config defaults|validate`."""
from __future__ import annotations

import sys

from .. import config as config_mod
from .errors import EXIT_OK


def cmd_defaults(args) -> int:
    sys.stdout.write(config_mod.dump(config_mod.defaults()))
    return EXIT_OK


def cmd_validate(args) -> int:
    """Exit 1 for invalid content, 2 for an unreadable file (via the CLI's ConfigError rule)."""
    config_mod.load(args.file)
    print(f"{args.file}: valid")
    return EXIT_OK
