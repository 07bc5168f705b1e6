"""Cluster stores. Code above this package sees only `ClusterStore`, never a backend."""
from __future__ import annotations

from .base import ClusterStore, WatchEvent

__all__ = ["ClusterStore", "WatchEvent", "open_store"]


def open_store(url: str) -> ClusterStore:
    """The store behind `url`: memory:// or redis[s]://host:port/db (unix:// sockets too).

    No URL at all (an embedded redis-server) is the CLI's business: see embedded.py.
    """
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "memory":
        from .memory import MemoryStore
        return MemoryStore()
    if scheme in ("redis", "rediss", "unix"):
        from .redis_store import RedisStore
        return RedisStore(url)
    raise ValueError(f"unsupported store URL {url!r}: use memory://, redis://HOST:PORT/DB, "
                     f"or leave --store out to run an embedded redis-server")
