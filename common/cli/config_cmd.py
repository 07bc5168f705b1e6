"""`shardsched config defaults|validate|convert`."""
from __future__ import annotations

import sys

from .. import config as config_mod
from .errors import EXIT_OK


def cmd_defaults(args) -> int:
    sys.stdout.write(config_mod.dump(config_mod.defaults()))
    return EXIT_OK


def cmd_validate(args) -> int:
    """Every check a process makes of its config (plugin args included), so a file this
    passes never stops a process. Exit 1 for invalid content, 2 for an unreadable file (via
    the CLI's ConfigError rule); notes on what a KubeSchedulerConfiguration leaves out go to
    stderr."""
    _, notes = config_mod.load_with_notes(args.file)
    _print_notes(args.file, notes)
    print(f"{args.file}: valid")
    return EXIT_OK


def cmd_convert(args) -> int:
    """The full ShardschedConfiguration a file means (a KubeSchedulerConfiguration mapped
    onto shardsched's sections, defaults filled in), on stdout; notes on stderr."""
    cfg, notes = config_mod.load_with_notes(args.file)
    _print_notes(args.file, notes)
    sys.stdout.write(config_mod.dump(cfg))
    return EXIT_OK


def _print_notes(file: str, notes: list[str]) -> None:
    for note in notes:
        print(f"{file}: note: {note}", file=sys.stderr)
