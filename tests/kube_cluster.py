"""The session's real control plane (benchmarks/kube_cluster.py) as a pytest fixture.

A control plane that cannot be built or started fails the tests that need it, with the
reason; nothing is skipped.
"""
from __future__ import annotations

import pytest

from benchmarks.kube_cluster import ClusterError, KubeCluster, free_port, kube_bin_dir, write_kubeconfig

__all__ = ["kube_cluster", "free_port", "write_kubeconfig"]


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory):
    """One control plane for the session; tests isolate themselves (namespaces, cleanup)."""
    try:
        cluster = KubeCluster(tmp_path_factory.mktemp("kube"), kube_bin_dir())
        cluster.start()
    except ClusterError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
