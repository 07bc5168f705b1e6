"""benchmarks/kube_cluster.py: the control plane the kube:// tests and benchmarks run on keeps
kwok, which plays every node's kubelet, in step with the API server. Behaviour only."""
from __future__ import annotations

import orjson

from benchmarks import kube_vs
from common.store.kube_store import KubeStore
from common.tools import fleet as fleet_mod

from builders import api_pod
from kube_cluster import wait_for


def _first_watch_event(store: KubeStore, path: str) -> dict:
    """The first event of a watch of `path` opened as client-go's informers in kwok open theirs:
    from resourceVersion 0, with bookmarks (the API server then sends what exists as ADDED)."""
    answer = store._http.open("GET", path, query=[("watch", "1"), ("resourceVersion", "0"),
                                                  ("allowWatchBookmarks", "true"), ("timeoutSeconds", "5")],
                              timeout=30)
    try:
        got = b""
        for chunk in answer.stream(1 << 16):
            got += chunk
            if b"\n" in got:
                break
        return orjson.loads(got.split(b"\n", 1)[0])
    finally:
        answer.release_conn()


def test_a_watch_from_resource_version_0_is_served_as_kwok_asks_for_it(kube_cluster):
    """kube 1.34+ turns such a watch into a watch-list stream by default, which needs etcd's
    progress requests; Debian's etcd has none, so every watch of kwok's ended at once with an
    error and kwok saw pods and node leases only at its relists, tens of seconds apart."""
    store = KubeStore(str(kube_cluster.kubeconfig))
    try:
        first = _first_watch_event(store, "/api/v1/namespaces")
        assert first["type"] == "ADDED", first
    finally:
        store.close()


def test_kwok_runs_a_bound_pod_and_none_of_its_watches_ended_with_an_error(kube_cluster):
    store = KubeStore(str(kube_cluster.kubeconfig))
    (kwok_node,) = fleet_mod.generate(1, "uniform", 0, prefix="kwok-runs")  # kwok's annotation
    node = kwok_node["metadata"]["name"]
    try:
        store.create(kwok_node)
        kube_vs.create_namespace(store, "kwok-runs")
        pod = api_pod("p")
        pod["metadata"]["namespace"] = "kwok-runs"
        store.create(pod)
        assert store.bind_many([("kwok-runs/p", node, None)]) == [None]

        def phase():
            got = store.get("Pod", "kwok-runs/p")
            return (got.get("status") or {}).get("phase") == "Running"
        wait_for("kwok did not mark the bound pod Running", phase, timeout=120)
        log = kube_cluster.log_tail("kwok", 10 ** 9)
        assert "watch ended with error" not in log, [line for line in log.splitlines() if "watch ended" in line][:3]
    finally:
        store.evict_many([("kwok-runs/p", None)], respect_budgets=False)
        store.delete("Node", node)
        store.close()
