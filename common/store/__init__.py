"""Cluster stores. Code above this package sees only `ClusterStore`, never a backend."""
from __future__ import annotations

from .base import ClusterStore, WatchEvent

__all__ = ["ClusterStore", "WatchEvent", "open_store", "open_configured", "configured_url", "implied_url"]


def implied_url(cfg) -> str | None:
    """The config's store.url; else kube:// when it names a kubeconfig (store.kubeconfig, a
    KubeSchedulerConfiguration's clientConnection.kubeconfig), whose API server is then the
    store, as it is kube-scheduler's; else None."""
    return cfg.store.url or ("kube://" if cfg.store.kubeconfig else None)


def configured_url(url: str | None, cfg, who: str) -> str:
    """`url` (a --store flag), else the config's (implied_url); ValueError naming `who` (the
    command or process) when there is none."""
    url = url or implied_url(cfg)
    if not url:
        raise ValueError(f"{who} needs a store: give --store URL, or store.url or store.kubeconfig in the config")
    return url


def open_configured(cfg, url: str, max_in_flight: int | None = None) -> "ClusterStore":
    """The store at `url`, with the config's (a common.config.Config) kubeconfig, request
    timeout and (kube://) rate limit."""
    s = cfg.store
    return open_store(url, kubeconfig=s.kubeconfig, request_timeout=s.request_timeout_seconds,
                      max_in_flight=max_in_flight, qps=s.qps, burst=s.burst, history_seconds=s.history_seconds)


def open_store(url: str, kubeconfig: str | None = None, request_timeout: float = 10.0,
               max_in_flight: int | None = None, qps: float = 0, burst: int = 0,
               history_seconds: float | None = None) -> ClusterStore:
    """The store behind `url`: memory://, redis[s]://host:port/db (unix:// sockets too), or
    kube:// (a Kubernetes API server: `kubeconfig`, else in-cluster config or ~/.kube/config)
    and kube:///path/to/kubeconfig (`qps` > 0 paces its requests, `burst` at once).
    `history_seconds`: how long a Redis store's writes keep events (None: RedisStore's default).

    No URL at all (an embedded redis-server) is the CLI's business: see embedded.py.
    """
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "memory":
        from .memory import MemoryStore
        return MemoryStore()
    if scheme in ("redis", "rediss", "unix"):
        from .redis_store import RedisStore
        return RedisStore(url, max_in_flight=max_in_flight,
                          **({"history_seconds": history_seconds} if history_seconds is not None else {}))
    if scheme == "kube":
        from .kube_store import KubeStore
        path = url.split("://", 1)[1].split("?", 1)[0]
        return KubeStore(kubeconfig=path or kubeconfig, request_timeout=request_timeout, qps=qps, burst=burst,
                         **({"max_in_flight": max_in_flight} if max_in_flight else {}))
    raise ValueError(f"unsupported store URL {url!r}: use memory://, redis://HOST:PORT/DB, kube://, "
                     f"or leave --store out to run an embedded redis-server")
