"""Children that never outlive the process that started them (`up`, `bench`, the tests'
LocalCluster): a kill -9 of `up` left the binders, shards and dispatcher retrying a dead store.

The parent names itself in the child's environment (`PARENT_ENV`); the child, first thing
after it starts, asks the kernel for SIGTERM when its parent dies (PR_SET_PDEATHSIG) and
stops as on Ctrl-C; if the parent is already gone by then, it stops at once. The request is
made by the child itself, after exec: a `preexec_fn` would run Python between fork and exec
in a parent full of gRPC threads, which aborted children (SIGABRT) under load. The signal
comes when the parent's *thread* that started the child ends, so only children started from
the parent's main thread are named.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

PARENT_ENV = "SHARDSCHED_DIE_WITH_PARENT"
_PR_SET_PDEATHSIG = 1


def child_env() -> dict:
    """What to add to a child's environment so that it dies with us ({} when it cannot)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return {}
    return {PARENT_ENV: str(os.getpid())}


def die_with_parent() -> None:
    """In the child: ask for SIGTERM when the parent named in the environment dies."""
    parent = os.environ.pop(PARENT_ENV, "")
    if not parent or not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(parent):  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)
