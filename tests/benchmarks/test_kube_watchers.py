"""benchmarks/kube_watchers.py: on the real API server, every passive watcher sees every one of
the writer's paced writes, and the report has the API server's figures; its command line
refuses a list of watchers it cannot use."""
from __future__ import annotations

import pytest

from benchmarks.following import NODES
from benchmarks.kube_vs import clear_pods
from benchmarks.kube_watchers import main, measure
from benchmarks.workloads import mixed
from common.store.kube_store import KubeStore
from kube_cluster import with_namespace


def test_each_watcher_sees_every_write(kube_cluster):
    with_namespace(kube_cluster, "bench")
    store = KubeStore(str(kube_cluster.kubeconfig))
    docs = mixed(20, seed=3, nodes=NODES)
    for d in docs:
        d["spec"]["schedulerName"] = "nobody"
    assert not store.create_many(docs)
    try:
        apiserver, etcd = kube_cluster.procs["kube-apiserver"].pid, kube_cluster.procs["etcd"].pid
        got = measure(str(kube_cluster.kubeconfig), apiserver, etcd, 40.0, 1.0, 2)
    finally:
        clear_pods(store, "bench")
        store.close()
    assert got["writes"] > 0 and got["events_per_watcher"] >= got["writes"]
    assert got["apiserver_ms_per_write"] >= 0 and got["etcd_ms_per_write"] >= 0


@pytest.mark.parametrize("watchers", ["2,2", "-1,2", ""])
def test_a_list_of_watchers_it_cannot_use_is_refused(watchers, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--watchers", watchers])
    assert e.value.code == 2
    assert "--watchers" in capsys.readouterr().err
