"""The `shardsched` command line: every subcommand, its flags and its exit status.

Each command module here defines its parser beside its handler: `register(sub)` adds its
subcommand(s) to `sub` and sets `handler` to the function that runs it; `build_parser` lists
the modules (their order is the order of `shardsched --help`). This package is the one place
in common/ that may import the roles (shard, binder, dispatcher) and benchmarks/; a command
module does so only inside the handler that needs them (as it does redis and rich), so
`shardsched --help` or `shardsched get` never loads the scheduler or the benchmark harness.
Exit statuses are in errors.py.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import config as config_mod
from ..errors import StoreUnavailable
from ..runtime.version import VERSION
from . import bench, certs, config_cmd, fleet, manage, simulate, up
from .errors import EXIT_REJECTED, EXIT_USAGE, fail

#: What a shell reports for a process SIGPIPE ended (128 + 13): `shardsched get ... | head`
#: stops as `cat` or `kubectl` would there.
EXIT_BROKEN_PIPE = 141

#: The command modules, in the order `shardsched --help` lists their commands.
COMMANDS = (fleet, simulate, config_cmd, up, bench, certs, manage)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardsched", description="A sharded Kubernetes scheduler.")
    p.add_argument("--version", action="version", version=f"shardsched {VERSION}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for command in COMMANDS:
        command.register(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # here, not at exit, where a closed pipe could no longer be caught
        return code
    except BrokenPipeError:  # the reader (`| head`) has gone: nothing is left to say to it
        # stdout still holds unwritten bytes that the interpreter would try to flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except config_mod.ConfigError as e:  # --config: unreadable (2) or invalid content (1)
        return fail(str(e), EXIT_USAGE if e.unreadable else EXIT_REJECTED)
    except (StoreUnavailable, ValueError) as e:  # unreachable store, no store URL, bad URL scheme
        return fail(str(e))
    except KeyboardInterrupt:
        return 130

