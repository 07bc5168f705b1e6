"""Events on a real API server, as kube-scheduler writes them, seen through `kubectl describe`.

The dispatcher, a shard and a binder run with `--store kube://`, each as its deploy/
ServiceAccount (so the RBAC grants what writing events needs). On a small dedicated node:
* a low-priority pod is bound: `Scheduled`, "Successfully assigned NS/NAME to NODE";
* a high-priority pod preempts it: `Preempted` on the victim, "Preempted by pod UID on node
  NODE" (a finalizer keeps the victim Terminating, so that `kubectl describe` still finds it,
  and the node is no kwok node, since kwok removes such finalizers; once the test removes it
  the preemptor is bound and gets its `Scheduled`);
* a pod that fits nowhere: `FailedScheduling` with the same text as its PodScheduled
  condition, repeated (a retry every unschedulableMaxSeconds, 5 s here) as one
  events.k8s.io/v1 series rather than one object per attempt.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import yaml

from benchmarks import kube_vs
from common.store.kube_store import KubeStore
from builders import stack_config
from kube_cluster import ServiceAccountCluster, Teardown, service_account_kubeconfigs, write_kubeconfig

ROOT = Path(__file__).resolve().parent.parent
NS = "e2e-events"
HOLD = "e2e.shardsched.io/hold"


def small_node(name: str) -> dict:
    node = yaml.safe_load(subprocess.run([str(ROOT / ".venv/bin/shardsched"), "fleet", "--nodes", "1", "-o", "yaml"],
                                         capture_output=True, text=True, check=True).stdout)["items"][0]
    node["metadata"]["name"] = name
    node["metadata"]["labels"].update({"kubernetes.io/hostname": name, "e2e-events": "small"})
    # Not kwok's: kwok removes the finalizers of pods being deleted, and the victim's must hold.
    node["metadata"]["annotations"].pop("kwok.x-k8s.io/node")
    for field in ("allocatable", "capacity"):
        node["status"][field]["cpu"] = "2"
    return node


def pod(name: str, priority: str, cpu: str = "2", finalizers=()) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "finalizers": list(finalizers)},
            "spec": {"schedulerName": "shardsched", "priorityClassName": priority,
                     "nodeSelector": {"e2e-events": "small"}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def wait(what: str, done, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not (result := done()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return result


def events_of(store: KubeStore, name: str, reason: str) -> list[dict]:
    return [e for e in store.list_events() if e.get("reason") == reason
            and (e.get("regarding") or {}).get("namespace") == NS and e["regarding"].get("name") == name]


def describe(kube_cluster, name: str) -> str:
    return kube_cluster.kubectl("describe", "pod", name, "-n", NS).stdout


def event_lines(text: str) -> list[str]:
    """The rows of `kubectl describe`'s Events table."""
    return [line.strip() for line in text.split("\nEvents:", 1)[1].splitlines()[3:] if line.strip()]


def test_events_are_written_as_kube_scheduler_writes_them(kube_cluster, tmp_path):
    store = KubeStore(str(kube_cluster.kubeconfig))
    nodes = ["ev-small"]
    with Teardown(tmp_path) as undo:
        undo.callback(store.close)
        undo.callback(_clean, store, nodes)
        kubeconfigs = service_account_kubeconfigs(kube_cluster, store, tmp_path)
        admin = tmp_path / "admin.kubeconfig"
        write_kubeconfig(admin, kube_cluster.server, kube_cluster.dir / "ca.crt", kube_cluster.token,
                         namespace="shardsched")
        for n in nodes:
            store.create(small_node(n))
        for name, value in (("ev-low", 10), ("ev-high", 1000)):
            store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": name}, "value": value})
        kube_vs.create_namespace(store, NS)
        # A pod nothing can help is retried every unschedulableMaxSeconds (kube's flush of
        # unschedulable pods), each failure one more FailedScheduling of its series; its own
        # PodScheduled condition does not send it round again (status updates never do).
        cfg = stack_config(store={"kubeconfig": str(admin)}, shards={"count": 1, "unschedulableMaxSeconds": 5},
                           binders={"count": 1}, dispatcher={"shardTimeoutSeconds": 2})
        undo.started(ServiceAccountCluster(cfg, "kube://", log_dir=str(tmp_path), kubeconfigs=kubeconfigs))

        def node_of(name):
            return ((store.get("Pod", f"{NS}/{name}") or {}).get("spec") or {}).get("nodeName")

        low = store.create(pod("low", "ev-low", finalizers=[HOLD]))
        wait("low never bound", lambda: node_of("low"))
        (scheduled,) = wait("no Scheduled event for low", lambda: events_of(store, "low", "Scheduled"))
        assert scheduled["note"] == f"Successfully assigned {NS}/low to ev-small"
        assert (scheduled["type"], scheduled["action"], scheduled["reportingController"]) == (
            "Normal", "Binding", "shardsched")
        assert scheduled["regarding"]["uid"] == low["metadata"]["uid"]

        high = store.create(pod("high", "ev-high"))
        preempted = wait("no Preempted event for low", lambda: events_of(store, "low", "Preempted"))
        assert {e["note"] for e in preempted} == {f"Preempted by pod {high['metadata']['uid']} on node ev-small"}
        assert preempted[0]["related"]["name"] == "high" and preempted[0]["action"] == "Preempting"
        low_described = describe(kube_cluster, "low")
        store._call("PATCH", f"/api/v1/namespaces/{NS}/pods/low", body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
        wait("high never bound after its victim left", lambda: node_of("high") == "ev-small")
        wait("no Scheduled event for high", lambda: events_of(store, "high", "Scheduled"))

        store.create(pod("huge", "ev-high", cpu="4"))

        def condition():
            return next((c for c in (store.get("Pod", f"{NS}/huge").get("status") or {}).get("conditions") or []
                         if c["type"] == "PodScheduled" and c["status"] == "False"), None)

        message = wait("huge has no PodScheduled=False condition", condition)["message"]
        assert re.match(r"0/\d+ nodes are available: .*Insufficient cpu", message), message
        failed = wait("FailedScheduling never repeated as a series",
                      lambda: [e for e in events_of(store, "huge", "FailedScheduling")
                               if (e.get("series") or {}).get("count", 1) >= 2], timeout=90)
        assert len(events_of(store, "huge", "FailedScheduling")) == 1, "one object for the repeats"
        assert failed[0]["note"] == message and failed[0]["type"] == "Warning"

        described = {"low": low_described, "high": describe(kube_cluster, "high"), "huge": describe(kube_cluster, "huge")}
        for name, reason, text in (("low", "Scheduled", f"Successfully assigned {NS}/low to ev-small"),
                                   ("low", "Preempted", f"Preempted by pod {high['metadata']['uid']} on node ev-small"),
                                   ("high", "Scheduled", f"Successfully assigned {NS}/high to ev-small"),
                                   ("huge", "FailedScheduling", message)):
            rows = [line for line in event_lines(described[name]) if reason in line.split()]
            assert rows and all("shardsched" in r and text in r for r in rows), (name, reason, described[name])
        huge_row = next(line for line in event_lines(described["huge"]) if "FailedScheduling" in line)
        assert re.search(r"\(x\d+ over ", huge_row), huge_row
        print(f"\n--- kubectl describe pod huge (events)\n{described['huge'].split(chr(10) + 'Events:', 1)[1]}")


def _clean(store, nodes: list) -> None:
    for p in store.list("Pod")[0]:
        if p["metadata"]["namespace"] == NS and p["metadata"].get("finalizers"):
            store._call("PATCH", f"/api/v1/namespaces/{NS}/pods/{p['metadata']['name']}",
                        body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    kube_vs.clear_pods(store, NS)
    for n in nodes:
        store.delete("Node", n)
    for name in ("ev-low", "ev-high"):
        store.delete("PriorityClass", name)
