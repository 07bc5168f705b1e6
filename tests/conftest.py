"""Shared fixtures."""
import shutil

import pytest
from hypothesis import settings

# No deadline for any example: the machine is shared and a loaded one ran a 0.01 ms example
# for 740 ms (tests/common/model/test_resources.py failed as "flaky"); tests hold under load.
settings.register_profile("shared-machine", deadline=None)
settings.load_profile("shared-machine")

from kube_cluster import kube_cluster  # noqa: F401  (etcd + kube-apiserver + kwok, built by make kube-bins)


@pytest.fixture(scope="session")
def redis_url():
    """One throwaway redis-server for the whole run; tests isolate themselves by key prefix."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    from common.store.embedded import EmbeddedRedis

    with EmbeddedRedis() as server:
        yield server.url
