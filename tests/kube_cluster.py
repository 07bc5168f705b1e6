"""The session's real control plane (benchmarks/kube_cluster.py) as a pytest fixture.

A control plane that cannot be built or started fails the tests that need it, with the
reason; nothing is skipped.
"""
from __future__ import annotations

import contextlib
import copy
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from benchmarks.kube_cluster import ClusterError, KubeCluster, free_port, kube_bin_dir, print_logs, write_kubeconfig
from common.tools.local_cluster import LocalCluster
from common.store.kube_store import KubeStore
from builders import stack_config

__all__ = ["kube_cluster", "control_plane", "kwok_nodes", "wait_for", "free_port", "print_logs", "write_kubeconfig", "ServiceAccountCluster",
           "service_account_kubeconfigs", "shardsched_on", "Teardown", "scheduled_condition",
           "unschedulable_message"]
ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def control_plane(directory: Path, **opts):
    """A started KubeCluster of the Makefile's binaries (`opts`: feature gates, runtime
    config), stopped at the end; one that cannot start fails the test with the reason."""
    try:
        cluster = KubeCluster(directory, kube_bin_dir(), **opts)
        cluster.start()
    except ClusterError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory):
    """One control plane for the session; tests isolate themselves (namespaces, cleanup)."""
    with control_plane(tmp_path_factory.mktemp("kube")) as cluster:
        yield cluster


def with_namespace(cluster, name: str) -> None:
    """Namespace `name` on the session's control plane, made unless an earlier test made it."""
    from benchmarks.kube_vs import create_namespace
    from common.store.kube_store import ApiError, KubeStore

    store = KubeStore(str(cluster.kubeconfig))
    try:
        create_namespace(store, name)
    except ApiError as e:
        assert e.status == 409, e  # (made by an earlier test)
    finally:
        store.close()


def wait_for(what, done, timeout: float):
    """`done()`'s first truthy value, polled until `timeout` seconds; else fail with `what`
    (or what `what()` says then)."""
    deadline = time.monotonic() + timeout
    while True:
        out = done()
        if out:
            return out
        assert time.monotonic() < deadline, what() if callable(what) else what
        time.sleep(0.25)


def scheduled_condition(store, key: str) -> dict | None:
    """Pod `key`'s PodScheduled condition, or None."""
    for c in ((store.get("Pod", key) or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return c
    return None


def unschedulable_message(store, key: str, timeout: float) -> str:
    """The message of pod `key`'s PodScheduled=False/Unschedulable condition, once written."""
    def reported():
        c = scheduled_condition(store, key)
        return c["message"] if c and c.get("reason") == "Unschedulable" and c.get("message") else None
    return wait_for(f"{key} was never reported unschedulable: {scheduled_condition(store, key)}", reported, timeout)


def kwok_nodes(store, count: int, prefix: str) -> None:
    """`count` nodes of `shardsched fleet` (32 cpu, 110 pods), named PREFIX-0.., created in `store`."""
    fleet = yaml.safe_load(subprocess.run([str(ROOT / ".venv/bin/shardsched"), "fleet", "--nodes", str(count),
                                           "-o", "yaml"], capture_output=True, text=True, check=True).stdout)
    for i, n in enumerate(fleet["items"]):
        n = copy.deepcopy(n)
        n["metadata"]["name"] = name = f"{prefix}-{i}"
        n["metadata"]["labels"]["kubernetes.io/hostname"] = name
        store.create(n)


class ServiceAccountCluster(LocalCluster):
    """LocalCluster whose processes each use their own role's kubeconfig."""

    def __init__(self, *args, kubeconfigs: dict[str, Path], **kwargs):
        super().__init__(*args, role_urls={role: f"kube://{path}" for role, path in kubeconfigs.items()},
                         **kwargs)


def service_account_kubeconfigs(kube_cluster, store: KubeStore, workdir: Path) -> dict[str, Path]:
    """Apply deploy/'s namespace, ServiceAccounts, RBAC and the binder's Lease policy; a kubeconfig per component with a
    token of its ServiceAccount, in the namespace its Leases live in."""
    rendered = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy")], capture_output=True, text=True,
                              check=True).stdout
    rbac = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] in (
        "Namespace", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")]
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))
    out = {}
    for role in ("dispatcher", "shard", "binder"):
        token = store._call("POST", f"/api/v1/namespaces/shardsched/serviceaccounts/shardsched-{role}/token",
                            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                  "spec": {"expirationSeconds": 3600}})["status"]["token"]
        out[role] = workdir / f"{role}.kubeconfig"
        write_kubeconfig(out[role], kube_cluster.server, kube_cluster.dir / "ca.crt", token, namespace="shardsched")
    return out


def shardsched_on(kube_cluster, store: KubeStore, workdir: Path, shards: int, sections: dict | None = None,
                  **dispatcher) -> ServiceAccountCluster:
    """A dispatcher, `shards` shards and a binder for the test API server, each to run as its
    deploy/ ServiceAccount (`start()` them, or use `running`); `dispatcher` overrides
    dispatcher settings, `sections` other top-level fields (as the file writes them)."""
    kubeconfigs = service_account_kubeconfigs(kube_cluster, store, workdir)
    admin = workdir / "admin.kubeconfig"  # for LocalCluster's own lease checks
    write_kubeconfig(admin, kube_cluster.server, kube_cluster.dir / "ca.crt", kube_cluster.token,
                     namespace="shardsched")
    cfg = stack_config(store={"kubeconfig": str(admin)}, shards={"count": shards}, binders={"count": 1},
                       dispatcher=dispatcher, **(sections or {}))
    return ServiceAccountCluster(cfg, "kube://", log_dir=str(workdir), kubeconfigs=kubeconfigs)


class Teardown(contextlib.ExitStack):
    """What a test started and made on the session's one API server, undone in reverse order
    however the test ends (the next test must find the server as this one found it), with the
    logs of `log_dirs` printed first when it fails. Register an undo with `callback` as soon as
    there is something to undo; `started` and `kube_scheduler` start a process and register its
    stop in one step."""

    def __init__(self, *log_dirs: Path):
        super().__init__()
        self.log_dirs = log_dirs

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, Exception):
            for d in self.log_dirs:
                print_logs(d)
        return super().__exit__(exc_type, exc, tb)

    def started(self, cluster: LocalCluster, timeout: float = 60) -> LocalCluster:
        """`cluster`'s processes started, to be stopped at the end (also when starting fails)."""
        self.callback(cluster.stop)
        cluster.start(timeout=timeout)
        return cluster

    def kube_scheduler(self, kube_cluster: KubeCluster, workdir: Path, **opts) -> subprocess.Popen:
        """kube-scheduler started on `kube_cluster` (KubeCluster.start_kube_scheduler's `opts`),
        to be terminated at the end."""
        proc = kube_cluster.start_kube_scheduler(workdir, **opts)
        self.callback(_terminate, proc)
        return proc


def _terminate(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(10)
