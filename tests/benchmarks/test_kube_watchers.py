"""benchmarks/kube_watchers.py: on the real API server, every passive watcher reads every event
of the writer's pods (three a pod), and the report has the API server's figures; its command
line refuses a list of watchers it cannot use."""
from __future__ import annotations

import pytest

from benchmarks.kube_vs import create_namespace
from benchmarks.kube_watchers import main, measure
from common.store.kube_store import ApiError, KubeStore


def test_each_watcher_reads_every_event_of_the_writers_pods(kube_cluster):
    store = KubeStore(str(kube_cluster.kubeconfig))
    try:
        create_namespace(store, "bench")
    except ApiError as e:
        assert e.status == 409  # (made by an earlier test)
    finally:
        store.close()
    apiserver, etcd = kube_cluster.procs["kube-apiserver"].pid, kube_cluster.procs["etcd"].pid
    got = measure(str(kube_cluster.kubeconfig), apiserver, etcd, 20, 2)
    assert got["events_per_watcher"] >= 60  # created, bound, Running: each seen by both
    assert got["apiserver_ms_per_pod"] >= 0 and got["etcd_ms_per_pod"] >= 0 and got["wall_s"] > 0
    left = KubeStore(str(kube_cluster.kubeconfig))
    try:
        assert not [p for p in left.list("Pod")[0] if p["metadata"]["namespace"] == "bench"]
    finally:
        left.close()


@pytest.mark.parametrize("watchers", ["2,2", "-1,2", ""])
def test_a_list_of_watchers_it_cannot_use_is_refused(watchers, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--watchers", watchers])
    assert e.value.code == 2
    assert "--watchers" in capsys.readouterr().err
