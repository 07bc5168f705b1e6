"""`shardsched create|delete|get|verify` against a real redis-server.

The commands need a store another process can see, so the memory store will not do: the
module runs its own embedded redis-server, emptied before every test. Most tests call
`common.cli.main` in-process (capsys captures the output); one runs the installed
`shardsched` script to check the exit codes a shell sees.
"""
from __future__ import annotations

from common.model.podgroup import NATIVE_KIND

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import redis as redis_py
import yaml

from builders import run_cli as run
from common.store import open_store
from common.store.embedded import EmbeddedRedis
from builders import anchor_bomb
from builders import manifest_node as node
from builders import manifest_pod as pod
from builders import pdb as _pdb
from builders import pod_group, priority_class

SHARDSCHED = Path(sys.executable).with_name("shardsched")


@pytest.fixture(scope="module")
def server():
    with EmbeddedRedis() as s:
        yield s


@pytest.fixture
def url(server):
    """An empty store on the module's redis-server."""
    redis_py.Redis.from_url(server.url).flushdb()
    return server.url


@pytest.fixture
def store(url):
    s = open_store(url)
    yield s
    s.close()




def labelled(d: dict, group: str) -> dict:
    d["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    return d


def pdb(name: str) -> dict:
    return _pdb(name, {"app": "web"}, min_available=1)


def write_yaml(path: Path, *docs) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def names(store, kind: str) -> set[str]:
    return {d["metadata"]["name"] for d in store.list(kind)[0]}


# --- create ---------------------------------------------------------------------------------

def test_create_multi_document_yaml_and_a_json_list(capsys, url, store, tmp_path):
    multi = write_yaml(tmp_path / "multi.yaml", pod("web-1", priority_class="high"), node("n1"),
                       priority_class("high", 1000), pdb("web"))
    code, out, err = run(capsys, "create", "-f", multi, "--store", url)
    assert (code, err) == (0, "")
    # created in dependency order: the class and the node before the pod that uses them
    assert out.splitlines() == ["priorityclass.scheduling.k8s.io/high created", "node/n1 created",
                                "poddisruptionbudget.policy/web created", "pod/web-1 created"]
    as_list = tmp_path / "list.json"
    as_list.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List",
                                      "items": [node("n2"), pod("web-2", ns="team")]}))
    code, out, _ = run(capsys, "create", "-f", str(as_list), "--store", url)
    assert code == 0
    assert out.splitlines() == ["node/n2 created", "pod/web-2 created"]
    assert names(store, "Node") == {"n1", "n2"}
    assert {d["metadata"]["namespace"] + "/" + d["metadata"]["name"] for d in store.list("Pod")[0]} == {
        "default/web-1", "team/web-2"}
    assert names(store, "PriorityClass") == {"high"} and names(store, "PodDisruptionBudget") == {"web"}


def test_create_duplicate_names_the_object_and_creates_the_rest(capsys, url, store, tmp_path):
    first = write_yaml(tmp_path / "a.yaml", pod("web-1"))
    assert run(capsys, "create", "-f", first, "--store", url)[0] == 0
    again = write_yaml(tmp_path / "b.yaml", pod("web-1"), pod("web-2"), pod("web-2"))
    code, out, err = run(capsys, "create", "-f", again, "--store", url)
    assert code == 1
    assert out.splitlines() == ["pod/web-2 created"]
    assert sorted(err.splitlines()) == [
        "shardsched: error: Pod default/web-1: metadata.name: already exists",
        "shardsched: error: Pod default/web-2: metadata.name: already exists (given twice in the input)"]
    assert names(store, "Pod") == {"web-1", "web-2"}


def test_create_invalid_objects_name_object_and_field_while_valid_ones_are_created(capsys, url, store, tmp_path):
    bad_cpu = pod("bad-cpu", cpu="lots")
    wrong_api = dict(node("n9"), apiVersion="v2")
    path = write_yaml(tmp_path / "mixed.yaml", node("n1"), bad_cpu, pod("good"), wrong_api,
                      pod("no-class", priority_class="missing"))
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert code == 1
    assert out.splitlines() == ["node/n1 created", "pod/good created"]
    assert "Pod default/bad-cpu: spec.containers[0].resources.requests.cpu: invalid quantity 'lots'" in err
    assert "Node n9: apiVersion: must be v1 for Node, got 'v2'" in err
    assert "Pod default/no-class: spec.priorityClassName: no PriorityClass named 'missing'" in err
    assert names(store, "Node") == {"n1"} and names(store, "Pod") == {"good"}


def test_create_refuses_an_anchor_bomb_and_creates_the_rest(capsys, url, store, tmp_path):
    """The bomb's document is refused while reading: it used to be stored as a 38 MB pod
    that every shard and binder then held."""
    path = tmp_path / "bomb.yaml"
    path.write_text(yaml.safe_dump(pod("before")) + "---\n" + anchor_bomb() + "---\n" + yaml.safe_dump(pod("after")))
    code, out, err = run(capsys, "create", "-f", str(path), "--store", url)
    assert code == 1
    assert out.splitlines() == ["pod/before created", "pod/after created"]
    (line,) = err.splitlines()
    assert line.startswith(f"shardsched: error: {path}: document 2: <root>: yaml: document contains excessive aliasing")
    assert names(store, "Pod") == {"before", "after"}


def test_create_values_json_cannot_hold_name_the_object_and_field(capsys, url, store, tmp_path):
    """A numeric label key, an integer past 2^64 and !!binary data: each object is refused by
    name, and the valid objects beside them are created (an orjson traceback used to stop
    the whole input)."""
    path = tmp_path / "odd.yaml"
    path.write_text(yaml.safe_dump(pod("a")) + "\n".join([
        "---", "kind: Pod", "metadata: {name: keyed, labels: {1: one}}", "spec: {containers: [{name: c}]}",
        "---", "kind: Pod", "metadata: {name: big}", "spec: {containers: [{name: c}], x: 36893488147419103232}",
        "---", "kind: Pod", "metadata: {name: bin, annotations: {a: !!binary aGVsbG8=}}",
        "spec: {containers: [{name: c}]}", "---", yaml.safe_dump(pod("b"))]))
    code, out, err = run(capsys, "create", "-f", str(path), "--store", url)
    assert code == 1
    assert out.splitlines() == ["pod/a created", "pod/b created"]
    assert sorted(err.splitlines()) == [
        "shardsched: error: Pod default/big: spec.x: integer 36893488147419103232 is outside the int64 range",
        "shardsched: error: Pod default/bin: metadata.annotations.a: binary data (!!binary) cannot be stored; "
        "use a base64 string",
        "shardsched: error: Pod default/keyed: metadata.labels: keys must be strings, got int 1"]
    assert names(store, "Pod") == {"a", "b"}


def test_create_usage_errors_create_nothing(capsys, url, store, tmp_path):
    code, _, err = run(capsys, "create", "-f", str(tmp_path / "absent.yaml"), "--store", url)
    assert code == 2 and "absent.yaml: No such file or directory" in err
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\n  metadata: [\n")
    code, _, err = run(capsys, "create", "-f", str(broken), "--store", url)
    assert code == 2 and "broken.yaml: not valid YAML or JSON" in err
    empty = tmp_path / "empty.yaml"
    empty.write_text("---\n")
    code, _, err = run(capsys, "create", "-f", str(empty), "--store", url)
    assert code == 2 and "no objects to create" in err
    assert store.list("Pod")[0] == [] and store.list("Node")[0] == []


def test_no_store_is_a_usage_error_and_config_store_url_is_used(capsys, url, store, tmp_path, monkeypatch):
    for argv in (["get", "pods"], ["verify"], ["delete", "pod", "a"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "needs a store: give --store URL, or store.url or store.kubeconfig in the config" in err
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "shardsched.io/v1alpha1", "kind": "ShardschedConfiguration",
                                   "store": {"url": url}}))
    code, out, _ = run(capsys, "create", "-f", "-", "--config", str(cfg),
                       stdin=yaml.safe_dump(node("n1")), monkeypatch=monkeypatch)
    assert (code, out) == (0, "node/n1 created\n")
    assert names(store, "Node") == {"n1"}



def test_a_kubeconfig_alone_is_the_store(capsys, tmp_path):
    """clientConnection.kubeconfig (store.kubeconfig) names an API server: a file with it and
    no store URL talks to that server instead of asking for a store URL."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    ksc = tmp_path / "ksc.yaml"
    ksc.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration",
                                   "clientConnection": {"kubeconfig": str(kubeconfig)}}))
    code, _, err = run(capsys, "get", "nodes", "--config", str(ksc))
    assert code == 2 and "needs a store" not in err, err
    assert "127.0.0.1:1" in err and "Traceback" not in err, err


# --- get ------------------------------------------------------------------------------------

def test_get_json_is_the_stored_list_and_round_trips_through_create(capsys, url, store, tmp_path, monkeypatch):
    path = write_yaml(tmp_path / "a.yaml", node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                      pod("b", node_name="n1"), pod("a", ns="z"), pod("a"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    for kind, arg in (("Pod", "pods"), ("Node", "nodes")):
        code, out, _ = run(capsys, "get", arg, "-o", "json", "--store", url)
        doc = orjson.loads(out)
        assert code == 0 and (doc["apiVersion"], doc["kind"]) == ("v1", "List")
        stored = sorted(store.list(kind)[0], key=lambda d: (d["metadata"].get("namespace", ""), d["metadata"]["name"]))
        assert doc["items"] == stored
    _, pods_json, _ = run(capsys, "get", "pods", "-o", "json", "--store", url)
    assert [d["metadata"]["namespace"] + "/" + d["metadata"]["name"] for d in orjson.loads(pods_json)["items"]] == [
        "default/a", "default/b", "z/a"]
    _, nodes_json, _ = run(capsys, "get", "nodes", "-o", "json", "--store", url)

    redis_py.Redis.from_url(url).flushdb()
    for text in (nodes_json, pods_json):
        assert run(capsys, "create", "-f", "-", "--store", url, stdin=text, monkeypatch=monkeypatch)[0] == 0

    def without_rv(doc):
        for item in doc["items"]:
            del item["metadata"]["resourceVersion"]
        return doc["items"]

    assert without_rv(orjson.loads(run(capsys, "get", "pods", "-o", "json", "--store", url)[1])) == \
        without_rv(orjson.loads(pods_json))
    assert without_rv(orjson.loads(run(capsys, "get", "nodes", "-o", "json", "--store", url)[1])) == \
        without_rv(orjson.loads(nodes_json))


def rows(out: str) -> list[list[str]]:
    """Table cells, split on the runs of spaces between columns."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]


def test_get_pods_table_and_wide_columns(capsys, url, store, tmp_path):
    path = write_yaml(tmp_path / "a.yaml", priority_class("high", 1000), node("n1"),
                      pod("web", priority_class="high", node_name="n1", cpu="1500m"), pod("wait", ns="team"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    assert store.set_nominated_node("team/wait", "n1")
    code, out, _ = run(capsys, "get", "pods", "--store", url)
    table = rows(out)
    assert code == 0 and table[0] == ["NAMESPACE", "NAME", "STATUS", "NODE", "AGE"]
    assert [r[:4] for r in table[1:]] == [["default", "web", "Pending", "n1"], ["team", "wait", "Pending", "<none>"]]
    assert all(r[4].endswith("s") for r in table[1:])
    code, out, _ = run(capsys, "get", "pods", "-o", "wide", "--store", url)
    table = rows(out)
    assert table[0] == ["NAMESPACE", "NAME", "STATUS", "NODE", "AGE", "NOMINATED NODE", "PRIORITY", "CPU", "MEMORY"]
    assert [r[5:] for r in table[1:]] == [["<none>", "1000", "1500m", "256Mi"], ["n1", "0", "500m", "256Mi"]]


def test_get_pods_shows_a_gated_pod_as_scheduling_gated(capsys, url, tmp_path):
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    assert run(capsys, "create", "-f", write_yaml(tmp_path / "a.yaml", gated), "--store", url)[0] == 0
    code, out, _ = run(capsys, "get", "pods", "--store", url)
    assert code == 0 and rows(out)[1][:4] == ["default", "gated", "SchedulingGated", "<none>"]


def test_get_nodes_table_and_wide_columns(capsys, url, store, tmp_path):
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    path = write_yaml(tmp_path / "a.yaml", node("a", zone="zone-a", gpus="2"),
                      node("b", unschedulable=True, taints=[taint]), node("c", ready=None), node("d", ready=False),
                      pod("p1", node_name="a"), pod("p2", node_name="a", cpu="1"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    code, out, _ = run(capsys, "get", "nodes", "--store", url)
    table = rows(out)
    assert code == 0 and table[0] == ["NAME", "STATUS", "CPU", "MEMORY", "PODS", "AGE"]
    assert [r[:5] for r in table[1:]] == [
        ["a", "Ready", "1500m/4", "512Mi/8Gi", "2/10"],
        ["b", "Ready,SchedulingDisabled", "0/4", "0/8Gi", "0/10"],
        ["c", "Unknown", "0/4", "0/8Gi", "0/10"],
        ["d", "NotReady", "0/4", "0/8Gi", "0/10"]]
    code, out, _ = run(capsys, "get", "nodes", "-o", "wide", "--store", url)
    table = rows(out)
    assert table[0][6:] == ["ZONE", "EXTENDED", "TAINTS"]
    assert table[1][6:] == ["zone-a", "nvidia.com/gpu=0/2", "<none>"]
    assert table[2][6:] == ["<none>", "<none>", "dedicated=infra:NoSchedule"]


def test_get_events_table_wide_and_json(capsys, url, store, tmp_path):
    """Events as the status writer stores them on Redis, listed as kubectl lists them: a
    repeated FailedScheduling is one row with its count."""
    from common.runtime.events import FAILED_SCHEDULING, NORMAL, SCHEDULED, WARNING, StatusWriter, pod_ref

    writer = StatusWriter(store, "shardsched-shard-0", qps=100, burst=100)
    for _ in range(3):
        writer.event(pod_ref("team/wait", "uid-1"), WARNING, FAILED_SCHEDULING, "Scheduling",
                     "0/1 nodes are available: 1 Insufficient cpu.")
    writer.event(pod_ref("default/web", "uid-2"), NORMAL, SCHEDULED, "Binding", "Successfully assigned default/web to n1")
    writer.flush()
    code, out, _ = run(capsys, "get", "events", "--store", url)
    table = rows(out)
    assert code == 0 and table[0] == ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert sorted(r[:1] + r[2:] for r in table[1:]) == [
        ["default", "Normal", "Scheduled", "pod/web", "Successfully assigned default/web to n1"],
        ["team", "Warning", "FailedScheduling", "pod/wait", "0/1 nodes are available: 1 Insufficient cpu."]]
    code, out, _ = run(capsys, "get", "ev", "-o", "wide", "--store", url)
    table = rows(out)
    assert table[0] == ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "SOURCE", "MESSAGE", "FIRST SEEN",
                        "COUNT", "NAME"]
    wait = next(r for r in table[1:] if r[4] == "pod/wait")
    assert wait[5] == "shardsched, shardsched-shard-0" and wait[8] == "3" and wait[9].startswith("wait.")
    code, out, _ = run(capsys, "get", "events", "-o", "json", "--store", url)
    doc = orjson.loads(out)
    assert doc["kind"] == "List" and sorted(e["reason"] for e in doc["items"]) == [FAILED_SCHEDULING, SCHEDULED]
    assert next(e for e in doc["items"] if e["reason"] == FAILED_SCHEDULING)["series"]["count"] == 3


def test_get_empty_store_says_so(capsys, url):
    code, out, err = run(capsys, "get", "pods", "--store", url)
    assert (code, out, err) == (0, "", "No resources found.\n")


def test_create_and_get_pod_groups_as_units(capsys, url, store, tmp_path):
    """PodGroups are created like any kind (a bad one named with its field); `get podgroups`
    (or pg) shows each as a unit: phase, minMember, members, bound, pending; `-o wide` adds
    running, and assumed/waiting from the shards (none runs here: "-")."""
    bad = pod_group("broken", 0, uid=None)
    path = write_yaml(tmp_path / "g.yaml", node("n1"), pod_group("train", 3, ns="ml", uid=None), bad,
                      *[labelled(pod(f"w{i}", ns="ml", node_name="n1" if i == 0 else None), "train") for i in range(3)])
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert code == 1 and "podgroup.scheduling.x-k8s.io/train created" in out
    assert "PodGroup default/broken: spec.minMember: must be >= 1" in err
    code, out, _ = run(capsys, "get", "pg", "--store", url)
    table = rows(out)
    assert code == 0 and table[0] == ["NAMESPACE", "NAME", "PHASE", "MINMEMBER", "MEMBERS", "BOUND", "PENDING", "AGE"]
    assert table[1][:7] == ["ml", "train", "<none>", "3", "3", "1", "2"]
    code, out, _ = run(capsys, "get", "podgroups", "-o", "wide", "--store", url)
    assert rows(out)[0][8:] == ["RUNNING", "ASSUMED", "WAITING", "SHARD"]
    assert rows(out)[1][8:] == ["0", "-", "-", "-"]  # bound, not running: no status written
    code, out, _ = run(capsys, "delete", "podgroup", "ml/train", "--store", url)
    assert (code, out) == (0, 'podgroup.scheduling.x-k8s.io "train" deleted\n') and store.list("PodGroup")[0] == []


def test_storage_kinds_create_get_and_delete(capsys, url, store, tmp_path):
    from builders import csi_node, pv, pvc, storage_class

    path = write_yaml(tmp_path / "s.yaml", pvc("data", "wffc", uid=None, ns="team"),
                      pv("vol-1", "manual", size="10Gi", claim="team/data"), csi_node("n1", {"ebs.csi.aws.com": 25}),
                      storage_class("wffc"))
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["storageclass.storage.k8s.io/wffc created", "csinode.storage.k8s.io/n1 created",
                                "persistentvolume/vol-1 created", "persistentvolumeclaim/data created"]
    expected = {
        "pvc": [["NAMESPACE", "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"],
                ["team", "data", "Pending", "RWO", "wffc"]],
        "pv": [["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "AGE"],
               ["vol-1", "10Gi", "RWO", "Retain", "Available", "team/data", "manual"]],
        "sc": [["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "AGE"],
               ["wffc", "example.com/fake", "Delete", "WaitForFirstConsumer"]],
        "csinodes": [["NAME", "DRIVERS", "AGE"], ["n1", "1"]],
    }
    for kind, (header, row) in expected.items():
        code, out, _ = run(capsys, "get", kind, "--store", url)
        table = [line.split() for line in out.splitlines()]
        assert code == 0 and table[0] == " ".join(header).split(), kind
        assert table[1][:-1] == row, kind  # (the last column is the age)
    code, out, _ = run(capsys, "get", "pvc", "-o", "wide", "--store", url)
    assert out.splitlines()[1].split()[-1] == "<none>"  # no selected node yet
    code, out, _ = run(capsys, "get", "csinode", "-o", "wide", "--store", url)
    assert out.splitlines()[1].split()[-1] == "ebs.csi.aws.com=25"
    code, out, _ = run(capsys, "delete", "pvc", "team/data", "--store", url)
    assert (code, out) == (0, 'persistentvolumeclaim "data" deleted\n')
    code, out, _ = run(capsys, "delete", "sc", "wffc", "--store", url)
    assert (code, out) == (0, 'storageclass.storage.k8s.io "wffc" deleted\n')


def test_dra_kinds_create_get_and_delete(capsys, url, store, tmp_path):
    from builders import allocation, claim_template, device_class, resource_claim, resource_slice

    claim = resource_claim("c", ns="team", allocation=allocation("n1", "gpu-0"), reserved_for=["p"])
    claim["metadata"].pop("uid")
    path = write_yaml(tmp_path / "d.yaml", claim, claim_template("t", ns="team"), resource_slice("n1"),
                      device_class("gpu"))
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["deviceclass.resource.k8s.io/gpu created",
                                "resourceslice.resource.k8s.io/n1-gpu.example.com created",
                                "resourceclaimtemplate.resource.k8s.io/t created",
                                "resourceclaim.resource.k8s.io/c created"]
    expected = {
        "resourceclaims": [["NAMESPACE", "NAME", "STATE", "AGE"], ["team", "c", "allocated,reserved"]],
        "resourceclaimtemplates": [["NAMESPACE", "NAME", "AGE"], ["team", "t"]],
        "deviceclasses": [["NAME", "AGE"], ["gpu"]],
        "resourceslices": [["NAME", "NODE", "DRIVER", "POOL", "AGE"], ["n1-gpu.example.com", "n1", "gpu.example.com", "n1"]],
    }
    for kind, (header, row) in expected.items():
        code, out, _ = run(capsys, "get", kind, "--store", url)
        table = [line.split() for line in out.splitlines()]
        assert code == 0 and table[0] == header, kind
        assert table[1][:-1] == row, kind  # (the last column is the age)
    code, out, _ = run(capsys, "get", "resourceclaim", "-o", "wide", "--store", url)
    assert out.splitlines()[1].split()[-2:] == ["gpu.example.com/n1/gpu-0", "p"]
    code, out, _ = run(capsys, "delete", "resourceclaim", "team/c", "--store", url)
    assert (code, out) == (0, 'resourceclaim.resource.k8s.io "c" deleted\n')
    code, out, _ = run(capsys, "delete", "deviceclass", "gpu", "--store", url)
    assert (code, out) == (0, 'deviceclass.resource.k8s.io "gpu" deleted\n')


def test_workload_kinds_create_get_and_delete(capsys, url, store, tmp_path):
    """Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers, as kubectl
    shows them; a Namespace carries the label the API server gives it."""
    from builders import controller, namespace, service

    path = write_yaml(tmp_path / "w.yaml", service("web", {"app": "web"}, ns="team"),
                      controller("ReplicaSet", "web-1", {"app": "web"}, ns="team", replicas=2),
                      controller("StatefulSet", "db", {"app": "db"}, ns="team", replicas=3),
                      controller("ReplicationController", "old", {"app": "old"}, ns="team"),
                      namespace("team", {"env": "prod"}))
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["namespace/team created", "service/web created", "replicationcontroller/old created",
                                "replicaset.apps/web-1 created", "statefulset.apps/db created"]
    expected = {
        "ns": [["NAME", "STATUS", "AGE"], ["team", "Active"]],
        "svc": [["NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "PORT(S)", "AGE"],
                ["team", "web", "ClusterIP", "<none>", "80/TCP"]],
        "rs": [["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["team", "web-1", "2", "0", "0"]],
        "sts": [["NAMESPACE", "NAME", "READY", "AGE"], ["team", "db", "0/3"]],
        "rc": [["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["team", "old", "0", "0", "0"]],
    }
    for kind, (header, row) in expected.items():
        code, out, _ = run(capsys, "get", kind, "--store", url)
        table = [line.split() for line in out.splitlines()]
        assert code == 0 and table[0] == " ".join(header).split(), kind
        assert table[1][:-1] == row, kind  # (the last column is the age)
    code, out, _ = run(capsys, "get", "svc", "-o", "wide", "--store", url)
    assert out.splitlines()[1].split()[-1] == "app=web"
    code, out, _ = run(capsys, "get", "ns", "-o", "wide", "--store", url)
    assert out.splitlines()[1].split()[-1] == "env=prod"
    code, out, _ = run(capsys, "delete", "rs", "team/web-1", "--store", url)
    assert (code, out) == (0, 'replicaset.apps "web-1" deleted\n')
    code, out, _ = run(capsys, "delete", "ns", "team", "--store", url)
    assert (code, out) == (0, 'namespace "team" deleted\n')
    assert names(store, "ReplicaSet") == set() and names(store, "Service") == {"web"}


def test_fleet_adds_csi_node_limits(capsys, url, store):
    code, _, err = run(capsys, "fleet", "--nodes", "3", "--csi-limit", "ebs.csi.aws.com=25", "--store", url)
    assert code == 0, err
    csi = store.list("CSINode")[0]
    assert sorted(d["metadata"]["name"] for d in csi) == sorted(names(store, "Node"))
    assert {(drv["name"], drv["allocatable"]["count"]) for d in csi for drv in d["spec"]["drivers"]} == {
        ("ebs.csi.aws.com", 25)}
    code, _, err = run(capsys, "fleet", "--nodes", "1", "--csi-limit", "ebs", "-o", "yaml")
    assert code == 2 and "use DRIVER=COUNT" in err


# --- delete ---------------------------------------------------------------------------------

def test_delete_pods_and_nodes_and_not_found(capsys, url, store, tmp_path):
    path = write_yaml(tmp_path / "a.yaml", node("n1"), pod("web", ns="team"), pod("solo"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    code, out, err = run(capsys, "delete", "pod", "team/web", "solo", "--store", url)
    assert (code, out, err) == (0, 'pod "web" deleted\npod "solo" deleted\n', "")
    assert store.list("Pod")[0] == []
    code, out, err = run(capsys, "delete", "pod", "team/web", "--store", url)
    assert (code, out) == (1, "") and "Pod team/web not found" in err
    code, out, _ = run(capsys, "delete", "node", "n1", "--store", url)
    assert (code, out) == (0, 'node "n1" deleted\n') and store.list("Node")[0] == []
    code, _, err = run(capsys, "delete", "node", "n1", "--store", url)
    assert code == 1 and "Node n1 not found" in err
    code, _, err = run(capsys, "delete", "node", "a/b", "--store", url)
    assert code == 2 and "bad Node name 'a/b'" in err


# --- verify ---------------------------------------------------------------------------------

def test_verify_clean_store(capsys, url, tmp_path):
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    path = write_yaml(tmp_path / "a.yaml", node("n1", taints=[taint]), node("n2"),
                      pod("a", node_name="n1", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
                      pod("b", node_name="n2", host_port=80), pod("c", node_name="n1", host_port=80,
                                                                   tolerations=[{"operator": "Exists"}]),
                      pod("pending"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    code, out, _ = run(capsys, "verify", "--store", url)
    assert (code, out) == (0, "nodes 2, bound 3, pending 1, violations 0\n")
    code, out, _ = run(capsys, "verify", "--json", "--store", url)
    assert code == 0
    assert orjson.loads(out) == {"ok": True, "nodes": 2, "bound": 3, "pending": 1, "violations": [],
                                 "unparsable": []}


def test_verify_lists_every_violation(capsys, url, tmp_path):
    taint = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
    path = write_yaml(tmp_path / "a.yaml", node("small", cpu="1"), node("ports"), node("tainted", taints=[taint]),
                      pod("big-1", node_name="small", cpu="600m"), pod("big-2", node_name="small", cpu="600m"),
                      pod("web-1", node_name="ports", host_port=80), pod("web-2", node_name="ports", host_port=80),
                      pod("lost", node_name="gone"), pod("intruder", node_name="tainted"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    code, out, _ = run(capsys, "verify", "--store", url)
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "nodes 3, bound 6, pending 0, violations 4 (host-port 1, missing-node 1, overcommit 1, taint 1)"
    clash = [line for line in lines if line.startswith("  host-port: ")]
    assert len(clash) == 1 and clash[0].endswith("already in use on ports")
    assert clash[0].startswith(("  host-port: Pod default/web-1: ", "  host-port: Pod default/web-2: "))
    assert sorted(set(lines[1:]) - set(clash)) == [
        "  missing-node: Pod default/lost: bound to node gone, which does not exist",
        "  overcommit: Node small: bound pods request more cpu than allocatable",
        "  taint: Pod default/intruder: does not tolerate dedicated=infra:NoSchedule of tainted"]
    code, out, _ = run(capsys, "verify", "--json", "--store", url)
    report = orjson.loads(out)
    assert code == 1 and report["ok"] is False and (report["bound"], report["pending"]) == (6, 0)
    assert sorted(v["kind"] for v in report["violations"]) == ["host-port", "missing-node", "overcommit", "taint"]
    assert {v["object"] for v in report["violations"]} >= {"Pod default/lost", "Node small", "Pod default/intruder"}



def test_verify_settled_fails_on_a_pending_pod_a_node_could_take(capsys, url, tmp_path):
    """`--settled S`: a schedulable pod pending longer than S seconds is a violation, so a
    test can catch a pod the scheduler lost; one that fits nowhere is not."""
    path = write_yaml(tmp_path / "a.yaml", node("n1", cpu="1"), pod("fits"), pod("too-big", cpu="2"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    assert run(capsys, "verify", "--store", url)[0] == 0
    assert run(capsys, "verify", "--settled", "3600", "--store", url)[0] == 0
    code, out, _ = run(capsys, "verify", "--settled", "0", "--store", url)
    assert code == 1
    assert out.splitlines()[1].startswith("  stuck: Pod default/fits: pending for ")
    assert "too-big" not in out

# --- as a shell sees it ---------------------------------------------------------------------

def test_exit_codes_of_the_installed_script(url, tmp_path):
    def sh(*argv, stdin=None):
        return subprocess.run([str(SHARDSCHED), *argv], input=stdin, capture_output=True, text=True, timeout=60)

    manifest = yaml.safe_dump_all([node("n1"), pod("web", node_name="n1")])
    done = sh("create", "-f", "-", "--store", url, stdin=manifest)
    assert (done.returncode, done.stdout) == (0, "node/n1 created\npod/web created\n")
    done = sh("create", "-f", "-", "--store", url, stdin=manifest)
    assert done.returncode == 1 and "Pod default/web: metadata.name: already exists" in done.stderr
    assert sh("verify", "--store", url).returncode == 0
    assert sh("create", "-f", str(tmp_path / "absent.yaml"), "--store", url).returncode == 2
    assert sh("get", "pods").returncode == 2
    unreachable = sh("get", "pods", "--store", "redis://127.0.0.1:1/0")
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    assert sh("delete", "pod", "default/web", "--store", url).returncode == 0
    assert sh("delete", "pod", "default/web", "--store", url).returncode == 1
    assert sh("get", "pods", "-o", "bogus", "--store", url).returncode == 2


def test_priority_admission_as_the_api_server_runs_it(capsys, url, store, tmp_path):
    """A pod's priority comes from its class (or the global default, or 0): one that claims
    a priority itself is refused with the API server's words, so nobody can outrank
    system-node-critical pods by writing a number."""
    forged = pod("forged")
    forged["spec"]["priority"] = 2147483647
    forged_with_class = pod("forged-with-class", priority_class="high")
    forged_with_class["spec"]["priority"] = 5
    honest = pod("honest", priority_class="high")
    honest["spec"]["priority"] = 1000
    never = pod("never-policy", priority_class="high")
    never["spec"]["preemptionPolicy"] = "Never"
    path = write_yaml(tmp_path / "a.yaml", priority_class("high", 1000), forged, forged_with_class, honest,
                      pod("critical", priority_class="system-node-critical"), pod("plain"), never)
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert code == 1
    assert ("Pod default/forged: spec.priority: the integer value of priority (2147483647) must not be provided "
            "in pod spec; priority admission controller computed 0 from the given PriorityClass name") in err
    assert "Pod default/forged-with-class: spec.priority: the integer value of priority (5)" in err
    assert ("Pod default/never-policy: spec.preemptionPolicy: the string value of PreemptionPolicy (Never) must "
            "not be provided in pod spec; priority admission controller computed PreemptLowerPriority") in err
    stored = {d["metadata"]["name"]: d["spec"] for d in store.list("Pod")[0]}
    assert sorted(stored) == ["critical", "honest", "plain"]
    assert (stored["honest"]["priority"], stored["critical"]["priority"], stored["plain"]["priority"]) == (
        1000, 2000001000, 0)
    assert stored["honest"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_priority_admission_gives_class_less_pods_the_global_default(capsys, url, store, tmp_path):
    path = write_yaml(tmp_path / "a.yaml", priority_class("everyday", 50, global_default=True), pod("plain"))
    assert run(capsys, "create", "-f", path, "--store", url)[0] == 0
    spec = store.get("Pod", "default/plain")["spec"]
    assert (spec["priority"], spec["priorityClassName"]) == (50, "everyday")


def test_kubes_pod_groups_are_their_own_kind_in_create_get_and_delete(capsys, url, store, tmp_path):
    """kube's PodGroup (scheduling.k8s.io/v1beta1) and scheduler-plugins' of the same name
    are two objects, told apart by apiVersion on input and by kubectl's qualified resource
    name on the command line; a bad policy is named with its field."""
    from builders import native_group_pod, native_pod_group

    bad = native_pod_group("broken", 0, uid=None)
    path = write_yaml(tmp_path / "g.yaml", node("n1"), pod_group("train", 2, ns="ml", uid=None),
                      native_pod_group("train", 3, ns="ml", uid=None), bad,
                      *[native_group_pod(f"w{i}", "train", ns="ml") for i in range(2)])
    code, out, err = run(capsys, "create", "-f", path, "--store", url)
    assert code == 1
    assert "podgroup.scheduling.x-k8s.io/train created" in out and "podgroup.scheduling.k8s.io/train created" in out
    assert "PodGroup.scheduling.k8s.io default/broken: spec.schedulingPolicy.gang.minCount: must be >= 1" in err
    code, out, _ = run(capsys, "get", "podgroups.scheduling.k8s.io", "--store", url)
    table = rows(out)
    assert code == 0 and table[0][3] == "MINCOUNT"
    assert table[1][:7] == ["ml", "train", "<none>", "3", "2", "0", "2"]
    code, out, _ = run(capsys, "get", "pg", "--store", url)
    assert rows(out)[1][:5] == ["ml", "train", "<none>", "2", "0"]  # scheduler-plugins' has no members
    code, out, _ = run(capsys, "delete", "podgroups.scheduling.k8s.io", "ml/train", "--store", url)
    assert (code, out) == (0, 'podgroup.scheduling.k8s.io "train" deleted\n')
    assert store.list(NATIVE_KIND)[0] == [] and len(store.list("PodGroup")[0]) == 1


def test_output_piped_into_head_ends_quietly(url, store):
    """`get pods -o wide | head` closes the pipe while the table is still being written: the
    command stops without a BrokenPipeError traceback, as a shell's own tools do (exit 141,
    128 + SIGPIPE, what a shell reports for a process SIGPIPE ended)."""
    errors = store.create_many([pod(f"web-{i:05d}") for i in range(3000)])
    assert not errors
    proc = subprocess.Popen([str(SHARDSCHED), "get", "pods", "-o", "wide", "--store", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # head has read its lines and gone
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert first.split()[:2] == [b"NAMESPACE", b"NAME"]
    assert proc.returncode == 141 and err == b"", err.decode()


def test_get_shows_pools_when_sub_clusters_are_configured(capsys, url, store, tmp_path):
    """With subClusters.label in --config, `get nodes` shows each node's pool and `get pods`
    the pool each pod belongs to (`*`: the cluster-wide pool)."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"store": {"url": url}, "subClusters": {"label": "shardsched.io/pool"}}))
    gpu_node = node("g1")
    gpu_node["metadata"]["labels"] = {"shardsched.io/pool": "gpu"}
    gpu_pod = pod("train")
    gpu_pod["spec"]["nodeSelector"] = {"shardsched.io/pool": "gpu"}
    assert run(capsys, "create", "-f", write_yaml(tmp_path / "a.yaml", gpu_node, node("c1"), gpu_pod, pod("web")),
               "--store", url)[0] == 0
    code, out, _ = run(capsys, "get", "nodes", "--config", str(cfg))
    table = rows(out)
    assert code == 0 and table[0][-1] == "POOL" and [(r[0], r[-1]) for r in table[1:]] == [("c1", "<none>"), ("g1", "gpu")]
    code, out, _ = run(capsys, "get", "pods", "--config", str(cfg))
    table = rows(out)
    assert code == 0 and table[0][-1] == "POOL" and [(r[1], r[-1]) for r in table[1:]] == [("train", "gpu"), ("web", "*")]
    assert "POOL" not in run(capsys, "get", "pods", "--store", url)[1]  # no configuration: no column
