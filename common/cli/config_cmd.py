"""`shardsched config defaults|validate|convert`."""
from __future__ import annotations

import argparse
import sys

from .. import config as config_mod
from .errors import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("config", help="print or check a configuration file")
    csub = c.add_subparsers(dest="config_cmd", required=True)
    csub.add_parser("defaults", help="print the full default configuration").set_defaults(handler=cmd_defaults)
    v = csub.add_parser("validate", help="check one configuration file (shardsched's or a "
                                         "KubeSchedulerConfiguration) as every process would")
    v.add_argument("file")
    v.set_defaults(handler=cmd_validate)
    cv = csub.add_parser("convert", help="print the full shardsched configuration a file means")
    cv.add_argument("file")
    cv.set_defaults(handler=cmd_convert)


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
