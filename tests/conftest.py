"""Shared fixtures."""
import shutil

import pytest

from kube_cluster import kube_cluster  # noqa: F401  (etcd + kube-apiserver + kwok, built by make kube-bins)


@pytest.fixture(scope="session")
def redis_url():
    """One throwaway redis-server for the whole run; tests isolate themselves by key prefix."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    from common.store.embedded import EmbeddedRedis

    with EmbeddedRedis() as server:
        yield server.url
