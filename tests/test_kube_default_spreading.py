"""Default topology spreading side by side with kube-scheduler v1.33 on a real kube-apiserver
(kwok nodes): the same workloads placed by kube-scheduler and by `shardsched simulate` must
spread over the zones the same way.

Two workloads, each on its own pool of five nodes in five zones (the z1 node eight times the
others' cpu, so the resource scores alone would pile pods onto it and only default spreading
holds them back):

* a Deployment-like workload: a ReplicaSet and a Service over its pods (the pods carry the
  ReplicaSet's pod-template-hash), 15 replicas;
* a StatefulSet with its Service, whose pods each carry their own name as a label (so only
  the selectors, never the pods' own labels, make them count for each other), 15 replicas.

kube-scheduler finds the Service and the controller through its informers (helper.DefaultSelector);
simulate through the same objects in its input. Nodes of one size tie in kube-scheduler's
scores and it picks among tied nodes at random, so the small nodes of a pool are compared
as a multiset of counts; the z1 node's count is compared exactly.
"""
from __future__ import annotations

import copy
import subprocess
import time
from pathlib import Path

import yaml

from builders import PAUSE, ZONE, controller, pod, service
from common import config as config_mod
from common.cli.simulate import simulate
from common.store.kube_store import KubeStore
from kube_cluster import Teardown

from benchmarks import kube_vs

ROOT = Path(__file__).resolve().parent.parent
NS = "spread-kube"
POOL = "example.com/spread-pool"
REPLICAS = 15
TIMEOUT_S = 120


def _nodes() -> list:
    """Two pools of five kwok nodes, one per zone, from `shardsched fleet`."""
    fleet = yaml.safe_load(subprocess.run([str(ROOT / ".venv/bin/shardsched"), "fleet", "--nodes", "1", "-o", "yaml"],
                                          capture_output=True, text=True, check=True).stdout)["items"][0]
    out = []
    for pool in ("web", "db"):
        for z in range(1, 6):
            n = copy.deepcopy(fleet)
            n["metadata"]["name"] = name = f"spread-{pool}-z{z}"
            n["metadata"]["labels"].update({"kubernetes.io/hostname": name, ZONE: f"z{z}", POOL: pool})
            cpu = "64" if z == 1 else "8"
            for section in ("allocatable", "capacity"):
                n["status"][section]["cpu"] = cpu
            out.append(n)
    return out


def _workloads() -> list:
    web = {"app": "web", "pod-template-hash": "5d8f7"}
    docs = [service("web", {"app": "web"}, ns=NS), controller("ReplicaSet", "web-5d8f7", web, ns=NS),
            service("db", {"app": "db"}, ns=NS), controller("StatefulSet", "db", {"app": "db"}, ns=NS)]
    for i in range(REPLICAS):
        docs.append(pod(f"web-5d8f7-{i}", "500m", ns=NS, labels=web, owner="ReplicaSet/web-5d8f7",
                        **_placement("web")))
        docs.append(pod(f"db-{i}", "500m", ns=NS, owner="StatefulSet/db", **_placement("db"),
                        labels={"app": "db", "statefulset.kubernetes.io/pod-name": f"db-{i}"}))
    return docs


def _placement(pool: str) -> dict:
    return dict(images=(PAUSE,), uid=None, status=False, scheduler="default-scheduler",
                node_selector={POOL: pool}, spec={"terminationGracePeriodSeconds": 0})


def _spread(placed: dict) -> dict:
    """pool -> (pods on its z1 node, sorted counts on its other nodes)."""
    counts: dict = {}
    for node in placed.values():
        counts[node] = counts.get(node, 0) + 1
    out = {}
    for pool in ("web", "db"):
        big = counts.get(f"spread-{pool}-z1", 0)
        small = sorted(counts.get(f"spread-{pool}-z{z}", 0) for z in range(2, 6))
        out[pool] = (big, small)
    return out


def _kube_placement(store: KubeStore) -> dict:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        pods = [p for p in store.list("Pod")[0] if p["metadata"]["namespace"] == NS]
        placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        if len(placed) == 2 * REPLICAS and all(placed.values()):
            return placed
        assert time.monotonic() < deadline, f"kube-scheduler left pods pending: {placed}"
        time.sleep(0.5)


def _simulated(tmp_path, nodes: list, workloads: list) -> dict:
    path = tmp_path / "spread.yaml"
    path.write_text(yaml.safe_dump_all(nodes + workloads))
    doc, code = simulate([str(path)], config_mod.load(None))
    assert code == 0, doc["errors"]
    placed = {key.partition("/")[2]: e["node"] for key, e in doc["pods"].items()}
    assert all(placed.values()), doc["pods"]
    return placed


def test_default_spreading_of_a_deployment_and_a_statefulset_as_kube_scheduler(kube_cluster, tmp_path):
    store = KubeStore(str(kube_cluster.kubeconfig))
    nodes, workloads = _nodes(), _workloads()
    with Teardown(tmp_path) as undo:
        undo.callback(store.close)
        undo.callback(_clean, store, nodes, workloads)
        for n in nodes:
            store.create(n)
        kube_vs.create_namespace(store, NS)
        undo.kube_scheduler(kube_cluster, tmp_path)
        for obj in workloads:
            store.create(copy.deepcopy(obj))
        kube = _spread(_kube_placement(store))
        shardsched = _spread(_simulated(tmp_path, nodes, workloads))
        assert shardsched == kube
        # the spreading held the large nodes back: resources alone put most pods there
        assert all(big < REPLICAS // 2 for big, _ in kube.values()), kube


def _clean(store, nodes: list, workloads: list) -> None:
    kube_vs.clear_pods(store, NS)
    for obj in workloads:
        if obj["kind"] != "Pod":
            store.delete(obj["kind"], f"{NS}/{obj['metadata']['name']}")
    for n in nodes:
        store.delete("Node", n["metadata"]["name"])
