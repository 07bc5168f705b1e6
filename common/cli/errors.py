"""Exit statuses and usage errors of every `shardsched` command.

0: done. 1: the command ran, but some input was rejected (the rest was done), objects were
not found, the store breaks an invariant, or a configuration file's content is invalid.
2: nothing was done: bad flags, an unreadable file, no store given, an unreachable store.
"""
from __future__ import annotations

import sys

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Unreadable input or a malformed argument: exit status 2, nothing is done."""


def print_error(message: str) -> None:
    print(f"shardsched: error: {message}", file=sys.stderr)


def fail(message: str, code: int = EXIT_USAGE) -> int:
    """Print the error line and return `code` for the handler to return."""
    print_error(message)
    return code
