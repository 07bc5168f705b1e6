"""`shardsched config defaults|validate`."""
from __future__ import annotations

import sys

from .. import config as config_mod
from ..leader_election import check_config as check_leader_election
from .errors import EXIT_OK


def cmd_defaults(args) -> int:
    sys.stdout.write(config_mod.dump(config_mod.defaults()))
    return EXIT_OK


def cmd_validate(args) -> int:
    """Exit 1 for invalid content, 2 for an unreadable file (via the CLI's ConfigError rule)."""
    cfg = config_mod.load(args.file)
    check_leader_election(cfg)  # what the dispatcher checks at start
    print(f"{args.file}: valid")
    return EXIT_OK
