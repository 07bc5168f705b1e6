"""Who a replica is in the leases it competes for: the same replica keeps its identity across
restarts, so a restarted leader takes its own lease back at once instead of waiting it out.

The identity comes from `leaderElection.identity`, a template of `{hostname}` (a pod's name
is its hostname: a container restarted in its pod keeps it, a new pod has a new one), `{role}`
and `{id}` (the process's --id); the default `{hostname}_{role}-{id}` tells `up`'s replicas
on one machine apart. It used to be the process's address, which changes with every restart
on `port: 0` (the restarted dispatcher then counted as another holder and waited the full
leaseDurationSeconds, 17 s of no dispatching after each crash). A different replica (another
pod, another id) still waits for the lease as client-go's election does. Where the replica
listens is published separately, in its own lease (`shardsched:lease:<role>:<id>`).

Two live processes must not share an identity (two dispatchers of the same --id on one
host would both lead), as two pods cannot share a name.
"""
from __future__ import annotations

import socket

DEFAULT = "{hostname}_{role}-{id}"
FIELDS = ("hostname", "role", "id")


def check(template: str) -> str | None:
    """Why `template` cannot be used (None when it can)."""
    try:
        template.format(hostname="h", role="r", id="i")
    except (KeyError, IndexError, ValueError) as e:
        return f"may use only {', '.join('{' + f + '}' for f in FIELDS)}: {e!r}"
    if not template.strip():
        return "must not be empty"
    return None


def replica_identity(template: str, role: str, id_: str) -> str:
    return template.format(hostname=socket.gethostname(), role=role, id=id_)
