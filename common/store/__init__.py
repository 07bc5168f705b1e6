"""Cluster stores. Code above this package sees only `ClusterStore`, never a backend."""
from __future__ import annotations

from .base import ClusterStore, WatchEvent

__all__ = ["ClusterStore", "WatchEvent", "open_store", "store_options"]


def store_options(cfg: dict) -> dict:
    """open_store's keyword arguments from a loaded config's `store` section."""
    return {"kubeconfig": cfg["store"]["kubeconfig"], "request_timeout": cfg["store"]["requestTimeoutSeconds"]}


def open_store(url: str, kubeconfig: str | None = None, request_timeout: float = 10.0) -> ClusterStore:
    """The store behind `url`: memory://, redis[s]://host:port/db (unix:// sockets too), or
    kube:// (a Kubernetes API server: `kubeconfig`, else in-cluster config or ~/.kube/config)
    and kube:///path/to/kubeconfig.

    No URL at all (an embedded redis-server) is the CLI's business: see embedded.py.
    """
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "memory":
        from .memory import MemoryStore
        return MemoryStore()
    if scheme in ("redis", "rediss", "unix"):
        from .redis_store import RedisStore
        return RedisStore(url)
    if scheme == "kube":
        from .kube_store import KubeStore
        path = url.split("://", 1)[1].split("?", 1)[0]
        return KubeStore(kubeconfig=path or kubeconfig, request_timeout=request_timeout)
    raise ValueError(f"unsupported store URL {url!r}: use memory://, redis://HOST:PORT/DB, kube://, "
                     f"or leave --store out to run an embedded redis-server")
