"""The ClusterStore contract: one suite, run against every backend.

`kube` is a real kube-apiserver (tests/kube_cluster.py), so the pods here are valid ones
(an image, integer fields in range). Where the API server legitimately differs, the test
says so through the backend's flags: the memory and redis stores also play kubelet (a bound
pod is Running at once, its nomination cleared in the same write), while on a real cluster
the phase is the node agent's and the binding subresource only sets nodeName and
PodScheduled.
"""
from __future__ import annotations

import copy
import socket
import threading
import time
import uuid

import orjson
import pytest

from common.errors import Conflict, ObjectError, ResourceVersionTooOld, StoreUnavailable
from common.model.limits import MAX_OBJECT_BYTES
from common.store import open_store
from common.store.base import rv_order
from common.store.embedded import EmbeddedRedis
from common.store.memory import MemoryStore
from common.store.redis_store import RedisStore
from builders import api_node as node
from builders import api_pod as pod
from builders import pod_group


class Backend:
    """Hands out clients that all see one fresh, empty store (redis: a fresh key prefix;
    kube: the shared API server, emptied of the suite's kinds before and after each test)."""

    def __init__(self, name: str, redis_url: str | None = None, kubeconfig: str | None = None):
        self.name, self.redis_url, self.kubeconfig = name, redis_url, kubeconfig
        self.prefix = f"test-{uuid.uuid4().hex[:12]}:"
        self.plays_kubelet = name != "kube"
        self._memory = None
        self._clients = []
        if name == "kube":
            self.wipe()

    def client(self, history: int = 100_000):
        if self.name == "memory":  # one object is the whole store; "clients" share it
            if self._memory is None:
                self._memory = MemoryStore(history=history)
            return self._memory
        if self.name == "kube":
            from common.store.kube_store import KubeStore
            client = KubeStore(self.kubeconfig, history=history)
        else:
            client = RedisStore(self.redis_url, prefix=self.prefix, history=history)
        self._clients.append(client)
        return client

    def wipe(self):
        from common.store.kube_store import KubeStore
        from common.model.objects import SYSTEM_PRIORITY_CLASSES
        store = KubeStore(self.kubeconfig)
        try:
            for kind in ("Pod", "PodGroup", "PodDisruptionBudget", "Node", "PriorityClass", "PersistentVolumeClaim",
                         "PersistentVolume", "StorageClass", "CSINode", "ReplicaSet", "StatefulSet",
                         "ReplicationController", "Service", "ResourceClaim", "ResourceClaimTemplate",
                         "ResourceSlice", "DeviceClass"):
                for obj in store.list(kind)[0]:
                    meta = obj["metadata"]
                    if kind == "PriorityClass" and meta["name"] in SYSTEM_PRIORITY_CLASSES:
                        continue
                    if kind == "Service" and meta["name"] == "kubernetes":  # the API server's own
                        continue
                    if meta.get("finalizers"):  # no controller manager here removes them
                        meta["finalizers"] = []
                        store.update(obj)
                    store.delete(kind, f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"])
            for role in ("shard", "binder", "dispatcher"):
                for id_ in store.list_leases(role):
                    store.drop_lease(role, id_)
        finally:
            store.close()

    def close(self):
        for c in self._clients:
            c.close()
        if self.name == "kube":
            self.wipe()


@pytest.fixture(params=["memory", "redis", "kube"])
def backend(request):
    if request.param == "redis":
        b = Backend("redis", redis_url=request.getfixturevalue("redis_url"))
    elif request.param == "kube":
        b = Backend("kube", kubeconfig=str(request.getfixturevalue("kube_cluster").kubeconfig))
    else:
        b = Backend("memory")
    yield b
    b.close()


@pytest.fixture
def store(backend):
    return backend.client()


def names(events):
    return [(e.type, e.obj["metadata"]["name"]) for e in events]


def drain(store, rv):
    """Every event after rv (nothing is written concurrently). Each poll may wait a moment:
    a kube client sees other clients' writes only once its watch delivers them."""
    out = []
    while True:
        batch = store.poll(rv, timeout=0.3)
        if not batch:
            return out
        out += batch
        rv = batch[-1].rv


def latest_rv(store):
    return store.list("Pod")[1]


# --- objects ------------------------------------------------------------------------------

def test_create_get_list_delete(store):
    original = pod("web-1")
    snapshot = copy.deepcopy(original)
    created = store.create(original)
    assert original == snapshot, "create must not modify the caller's dict"
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z") and meta["resourceVersion"]
    assert store.get("Pod", "default/web-1") == created
    store.create(node("n1"))
    assert store.get("Node", "n1")["metadata"]["name"] == "n1"
    pods, _ = store.list("Pod")
    assert [p["metadata"]["name"] for p in pods] == ["web-1"]
    with pytest.raises(Conflict) as e:
        store.create(pod("web-1"))
    assert e.value.reason == "AlreadyExists"
    assert store.delete("Pod", "default/web-1") is True
    assert store.delete("Pod", "default/web-1") is False
    assert store.get("Pod", "default/web-1") is None
    assert store.list("Pod")[0] == []


def test_storage_kinds_round_trip(backend):
    """Claims, volumes, storage classes and CSINodes: create, get, list, update, delete, and
    their events, as for every kind. (An API server's admission gives claims and volumes a
    protection finalizer, which kube-controller-manager removes once nothing uses them; a
    test server has none, so the test removes it itself.)"""
    from builders import csi_node, pv, pvc, storage_class

    store = backend.client()
    rv = latest_rv(store)
    objs = [storage_class("wffc"), pv("vol-1", "wffc"), pvc("data", "wffc", uid=None), csi_node("n1", {"ebs.csi.aws.com": 3})]
    for obj in objs:
        store.create(obj)
    assert [o["metadata"]["name"] for o in store.list("PersistentVolumeClaim")[0]] == ["data"]
    claim = store.get("PersistentVolumeClaim", "default/data")
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi" and claim["metadata"]["uid"]
    claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1"}
    store.update(claim)
    assert store.get("PersistentVolumeClaim", "default/data")["metadata"]["annotations"] == {
        "volume.kubernetes.io/selected-node": "n1"}
    assert store.get("CSINode", "n1")["spec"]["drivers"][0]["allocatable"]["count"] == 3
    assert store.get("StorageClass", "wffc")["volumeBindingMode"] == "WaitForFirstConsumer"
    for kind, key in (("PersistentVolumeClaim", "default/data"), ("PersistentVolume", "vol-1"),
                      ("StorageClass", "wffc"), ("CSINode", "n1")):
        assert store.delete(kind, key)
        if backend.name == "kube" and kind.startswith("Persistent"):
            left = store.get(kind, key)
            assert left["metadata"]["deletionTimestamp"] and left["metadata"]["finalizers"]
            left["metadata"]["finalizers"] = []
            store.update(left)
        assert store.get(kind, key) is None
    events, deadline = [], time.monotonic() + 10
    while sum(1 for t, _ in events if t == "DELETED") < 4 and time.monotonic() < deadline:
        batch = store.poll(rv, timeout=0.5)  # (a kube client's watch may lag a busy server)
        events += [(e.type, e.kind) for e in batch]
        rv = batch[-1].rv if batch else rv
    assert ("MODIFIED", "PersistentVolumeClaim") in events
    # (in order within a kind; the kube backend's watches of different kinds may interleave)
    assert sorted(e for e in events if e[0] == "DELETED") == sorted(
        ("DELETED", k) for k in ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode"))


def test_dra_kinds_round_trip(backend):
    """DeviceClasses, ResourceSlices, ResourceClaimTemplates and ResourceClaims
    (resource.k8s.io/v1): create, get, list, a claim's allocation written, delete, and their
    events, as for every kind."""
    from builders import allocation, claim_template, device_class, resource_claim, resource_slice

    store = backend.client()
    rv = latest_rv(store)
    objs = [device_class("gpu"), resource_slice("n1"), claim_template("one-gpu"), resource_claim("c1")]
    for obj in objs:
        obj["metadata"].pop("uid", None)
        store.create(obj)
    assert [o["metadata"]["name"] for o in store.list("ResourceSlice")[0]] == ["n1-gpu.example.com"]
    assert store.get("DeviceClass", "gpu")["spec"]["selectors"][0]["cel"]["expression"]
    assert store.get("ResourceClaimTemplate", "default/one-gpu")["spec"]["spec"]["devices"]["requests"]
    claim = store.get("ResourceClaim", "default/c1")
    claim["status"] = {"allocation": allocation("n1", "gpu-0"),
                       "reservedFor": [{"resource": "pods", "name": "p", "uid": "uid-p"}]}
    store.update_status(claim)  # (the API server takes a claim's status through its subresource)
    got = store.get("ResourceClaim", "default/c1")["status"]
    assert got["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert got["reservedFor"][0]["name"] == "p"
    kinds = (("ResourceClaim", "default/c1"), ("ResourceClaimTemplate", "default/one-gpu"),
             ("ResourceSlice", "n1-gpu.example.com"), ("DeviceClass", "gpu"))
    for kind, key in kinds:
        assert store.delete(kind, key)
        assert store.get(kind, key) is None
    events, deadline = [], time.monotonic() + 10
    while sum(1 for t, _ in events if t == "DELETED") < 4 and time.monotonic() < deadline:
        batch = store.poll(rv, timeout=0.5)
        events += [(e.type, e.kind) for e in batch]
        rv = batch[-1].rv if batch else rv
    assert ("MODIFIED", "ResourceClaim") in events
    assert sorted(e for e in events if e[0] == "DELETED") == sorted(("DELETED", k) for k, _ in kinds)


def test_workload_kinds_round_trip(backend):
    """Namespaces, Services, ReplicaSets, StatefulSets and ReplicationControllers: create, get,
    list, delete and their events. (On an API server a deleted Namespace is Terminating until
    kube-controller-manager's namespace controller, absent here, empties it.)"""
    from builders import controller, namespace, service

    store = backend.client()
    rv = latest_rv(store)
    ns = f"contract-{uuid.uuid4().hex[:8]}"
    objs = [namespace(ns, {"team": "a"}), service("web", {"app": "web"}), controller("ReplicaSet", "web-1", {"app": "web"}),
            controller("StatefulSet", "db", {"app": "db"}), controller("ReplicationController", "old", {"app": "old"})]
    for obj in objs:
        store.create(obj)
    assert store.get("Namespace", ns)["metadata"]["labels"]["team"] == "a"
    assert store.get("Service", "default/web")["spec"]["selector"] == {"app": "web"}
    assert store.get("ReplicaSet", "default/web-1")["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert [d["metadata"]["name"] for d in store.list("StatefulSet")[0]] == ["db"]
    assert store.get("ReplicationController", "default/old")["spec"]["selector"] == {"app": "old"}
    keys = [("Service", "default/web"), ("ReplicaSet", "default/web-1"), ("StatefulSet", "default/db"),
            ("ReplicationController", "default/old"), ("Namespace", ns)]
    for kind, key in keys:
        assert store.delete(kind, key), kind
        left = store.get(kind, key)
        assert left is None or (kind == "Namespace" and backend.name == "kube"
                                and left["metadata"].get("deletionTimestamp")), (kind, left)
    events, deadline = [], time.monotonic() + 10
    while ((sum(1 for t, _ in events if t == "ADDED") < 5 or sum(1 for t, _ in events if t == "DELETED") < 4)
           and time.monotonic() < deadline):
        batch = store.poll(rv, timeout=0.5)
        events += [(e.type, e.kind) for e in batch]
        rv = batch[-1].rv if batch else rv
    assert sorted(k for t, k in events if t == "ADDED") == sorted(k for k, _ in keys)
    assert {k for t, k in events if t == "DELETED"} >= {"Service", "ReplicaSet", "StatefulSet", "ReplicationController"}


def test_namespace_defaults_and_invalid_object_is_rejected(store):
    p = pod("x")
    del p["metadata"]["namespace"]
    assert store.create(p)["metadata"]["namespace"] == "default"
    with pytest.raises(ObjectError) as e:
        store.create({"kind": "Deployment", "metadata": {"name": "d"}})
    assert e.value.field == "kind"
    with pytest.raises(ValueError):
        store.list("Deployment")


def test_objects_round_trip_exactly_through_scheduler_writes(store):
    """Empty lists and big integers must survive bind (Redis's cjson would mangle both):
    after the scheduler's writes the spec is the stored one plus nodeName. (An API server
    drops empty lists and adds defaults when it stores the pod: compare with what it stored.)"""
    p = pod("exact", tolerations=[], terminationGracePeriodSeconds=12345678901234567)
    p["metadata"]["annotations"] = {"note": "ünïcode / slash"}
    created = store.create(p)
    assert created["spec"]["terminationGracePeriodSeconds"] == 12345678901234567
    store.set_unschedulable("default/exact", "0/3 nodes: \"quoted\" / ünïcode")
    store.bind("default/exact", "n1")
    got = store.get("Pod", "default/exact")
    assert got["spec"] == {**created["spec"], "nodeName": "n1"}
    assert got["metadata"]["annotations"] == {"note": "ünïcode / slash"}


def test_update_replaces_and_guards_resource_version(store):
    created = store.create(pod("u"))
    changed = copy.deepcopy(created)
    changed["metadata"]["labels"] = {"app": "x"}
    updated = store.update(changed)
    assert rv_order(updated["metadata"]["resourceVersion"]) > rv_order(created["metadata"]["resourceVersion"])
    assert store.get("Pod", "default/u")["metadata"]["labels"] == {"app": "x"}
    with pytest.raises(Conflict) as e:
        store.update(changed)  # still carries the old resourceVersion
    assert e.value.reason == "ResourceVersionMismatch"
    with pytest.raises(Conflict) as e:
        store.update(pod("missing"))
    assert e.value.reason == "NotFound"
    # an update of the object as read keeps the binding, which still blocks a second bind
    store.bind("default/u", "n1")
    store.update(store.get("Pod", "default/u"))
    assert store.get("Pod", "default/u")["spec"]["nodeName"] == "n1"
    with pytest.raises(Conflict, match="AlreadyBound"):
        store.bind("default/u", "n2")
    stale = pod("u")  # from before the binding, without resourceVersion
    with pytest.raises(Conflict, match="NodeNameImmutable"):
        store.update(stale)
    assert store.get("Pod", "default/u")["spec"]["nodeName"] == "n1"


def test_pod_groups_are_stored_watched_and_their_status_written_apart(store):
    """PodGroup (scheduling.x-k8s.io/v1alpha1, a custom resource on an API server): created,
    listed, watched; `update_status` writes the status (the status subresource there) and
    `update` the rest (the binder's intent annotation), each guarded by resourceVersion."""
    start = latest_rv(store)
    created = store.create(pod_group("train", 3, min_resources={"cpu": "4"}, timeout=30, uid=None))
    assert created["spec"] == {"minMember": 3, "minResources": {"cpu": "4"}, "scheduleTimeoutSeconds": 30}
    assert [o["metadata"]["name"] for o in store.list("PodGroup")[0]] == ["train"]
    assert names(e for e in drain(store, start) if e.kind == "PodGroup") == [("ADDED", "train")]
    with_status = copy.deepcopy(created)
    with_status["status"] = {"phase": "Scheduling", "scheduled": 1, "running": 0}
    written = store.update_status(with_status)
    assert store.get("PodGroup", "default/train")["status"] == with_status["status"]
    with pytest.raises(Conflict):
        store.update_status(with_status)  # stale resourceVersion
    annotated = copy.deepcopy(written)
    annotated["metadata"]["annotations"] = {"scheduling.shardsched.io/binding-intent": "{}"}
    store.update(annotated)
    got = store.get("PodGroup", "default/train")
    assert got["metadata"]["annotations"] == annotated["metadata"]["annotations"]
    assert got["status"]["phase"] == "Scheduling" and got["spec"]["minMember"] == 3
    with pytest.raises(ObjectError, match="spec.minMember"):
        store.create(pod_group("bad", 0, uid=None))
    assert store.delete("PodGroup", "default/train") and store.get("PodGroup", "default/train") is None


def test_status_writes_in_bulk_answer_each_object(store):
    """update_status_many: a result per object in order, None when written, the Conflict's
    reason when not (stale resourceVersion, missing), the others written all the same."""
    store.create_many([pod(f"s{i}") for i in range(3)])
    objs = [store.get("Pod", f"default/s{i}") for i in range(3)]
    stale = copy.deepcopy(objs[1])
    objs[1]["metadata"]["labels"] = {"touched": "yes"}
    store.update(objs[1])  # the copy is stale from now on
    for o in (objs[0], objs[2], stale):
        o["status"] = {**(o.get("status") or {}), "message": "checked"}
    missing = pod("gone")
    missing["metadata"]["resourceVersion"] = objs[0]["metadata"]["resourceVersion"]
    results = store.update_status_many([objs[0], stale, missing, objs[2]])
    assert results[0] is None and results[3] is None
    assert results[1] == "ResourceVersionMismatch" and results[2] in ("NotFound", "UIDMismatch")
    assert [(store.get("Pod", f"default/s{i}").get("status") or {}).get("message") for i in range(3)] == ["checked", None, "checked"]


# --- resourceVersions, list and watch -----------------------------------------------------

def test_resource_versions_increase_and_match_events(store):
    start = latest_rv(store)
    written = [store.create(pod(f"p{i}"))["metadata"]["resourceVersion"] for i in range(20)]
    assert written == sorted(written, key=rv_order) and len(set(written)) == 20
    assert [e.rv for e in drain(store, start)] == written
    assert all(e.obj["metadata"]["resourceVersion"] == e.rv for e in drain(store, start))


def test_list_then_poll_has_no_gap_and_no_overlap_under_concurrent_writes(backend):
    writer_store, reader = backend.client(), backend.client()

    def write():
        for i in range(300):
            writer_store.create(pod(f"w{i}"))
            if i % 3 == 0:
                writer_store.delete("Pod", f"default/w{i // 2}")

    t = threading.Thread(target=write)
    t.start()
    listed, rv = reader.list("Pod")
    t.join()
    view = {p["metadata"]["name"]: p for p in listed}
    for ev in drain(reader, rv):
        name = ev.obj["metadata"]["name"]
        if ev.type == "ADDED":
            assert name not in view, f"{name} listed and also announced after the list's rv"
            view[name] = ev.obj
        else:  # (an API server marks a pod deleting, MODIFIED, before it removes it)
            assert name in view
            if ev.type == "DELETED":
                view.pop(name)
            else:
                view[name] = ev.obj
    assert view == {p["metadata"]["name"]: p for p in reader.list("Pod")[0]}


def test_watch_yields_added_modified_deleted_and_filters_kinds(store):
    rv = latest_rv(store)
    store.create(node("n1"))
    created = store.create(pod("a"))
    created["metadata"]["labels"] = {"x": "y"}
    store.update(created)
    store.delete("Pod", "default/a")
    stop = threading.Event()
    seen = []
    for ev in store.watch(rv, kinds=["Pod"], stop=stop, poll_timeout=0.05):
        seen.append(ev)
        if len(seen) == 3:
            stop.set()
    assert names(seen) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert seen[1].obj["metadata"]["labels"] == {"x": "y"}
    assert seen[2].obj["metadata"]["labels"] == {"x": "y"}, "DELETED carries the last state"
    assert [e.kind for e in store.poll(rv, kinds=["Node"], timeout=0)] == ["Node"]


def test_poll_waits_for_the_next_write(backend):
    reader, writer = backend.client(), backend.client()
    rv = latest_rv(reader)
    assert reader.poll(rv, timeout=0.05) == []
    timer = threading.Timer(0.1, lambda: writer.create(pod("late")))
    timer.start()
    try:
        assert names(reader.poll(rv, timeout=5)) == [("ADDED", "late")]
    finally:
        timer.join()


def test_poll_skips_other_kinds_while_waiting(backend):
    reader, writer = backend.client(), backend.client()
    rv = latest_rv(reader)
    writer.create(node("n1"))
    timer = threading.Timer(0.1, lambda: writer.create(pod("p")))
    timer.start()
    try:
        assert names(reader.poll(rv, timeout=5, kinds=["Pod"])) == [("ADDED", "p")]
    finally:
        timer.join()


def test_too_old_resource_version_raises_after_trimming(backend):
    store = backend.client(history=50)
    old = latest_rv(store)
    assert store.create_many(pod(f"p{i}") for i in range(400)) == []
    with pytest.raises(ResourceVersionTooOld):
        store.poll(old, timeout=0)
    pods, rv = store.list("Pod")  # the relist a watcher does next
    assert len(pods) == 400
    assert store.poll(rv, timeout=0) == []
    store.delete("Pod", "default/p0")
    assert names(store.poll(rv, timeout=0)) == [("DELETED", "p0")]


def test_watch_resumes_from_last_rv_after_watcher_restart(backend):
    writer = backend.client()
    watcher = backend.client()
    writer.create(pod("before"))
    _, rv = watcher.list("Pod")
    writer.create(pod("seen"))
    rv = watcher.poll(rv, timeout=1)[-1].rv  # the watcher processed this, then "crashes"
    watcher.close()
    writer.create(pod("missed-1"))
    writer.bind("default/seen", "n1")
    writer.delete("Pod", "default/before")
    restarted = backend.client()
    assert names(drain(restarted, rv)) == [("ADDED", "missed-1"), ("MODIFIED", "seen"), ("DELETED", "before")]
    assert restarted.poll(rv, timeout=0)[1].obj["spec"]["nodeName"] == "n1"


# --- the scheduler's writes ---------------------------------------------------------------

def test_bind_sets_node_phase_condition_and_clears_nomination(backend):
    store = backend.client()
    uid = store.create(pod("b"))["metadata"]["uid"]
    store.set_nominated_node("default/b", "n2")
    rv = latest_rv(store)
    store.bind("default/b", "n1", uid)
    got = store.get("Pod", "default/b")
    assert got["spec"]["nodeName"] == "n1"
    if backend.plays_kubelet:
        assert got["status"]["phase"] == "Running"
        assert "nominatedNodeName" not in got["status"]
    else:  # no kubelet for node n1: the pod stays Pending; kube-scheduler too leaves the field
        assert got["status"]["phase"] == "Pending"
    (cond,) = got["status"]["conditions"]
    assert (cond["type"], cond["status"]) == ("PodScheduled", "True")
    (ev,) = store.poll(rv, timeout=0)
    assert (ev.type, ev.obj) == ("MODIFIED", got)


def test_bind_conflicts(store):
    uid = store.create(pod("b"))["metadata"]["uid"]
    store.create(pod("pre-bound", nodeName="n9"))
    cases = [(("default/nope", "n1", None), "PodNotFound"),
             (("default/b", "n1", "some-other-uid"), "UIDMismatch"),
             (("default/pre-bound", "n1", None), "AlreadyBound")]
    for args, reason in cases:
        with pytest.raises(Conflict) as e:
            store.bind(*args)
        assert e.value.reason == reason
    store.bind("default/b", "n1", uid)
    with pytest.raises(Conflict, match="AlreadyBound"):
        store.bind("default/b", "n2", uid)
    assert store.get("Pod", "default/b")["spec"]["nodeName"] == "n1"


def test_a_gated_pod_is_marked_scheduling_gated_and_cannot_be_bound(store):
    """As the API server: a pod created with scheduling gates says PodScheduled=False /
    SchedulingGated, and its binding is refused ("SchedulingGated", not AlreadyBound: the
    binder used to read the API server's 409 as AlreadyBound, and the embedded stores bound
    it) until its last gate is removed."""
    created = store.create(pod("gated", schedulingGates=[{"name": "example.com/wait"}]))
    (cond,) = store.get("Pod", "default/gated")["status"]["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"}
    uid = created["metadata"]["uid"]
    with pytest.raises(Conflict) as e:
        store.bind("default/gated", "n1", uid)
    assert e.value.reason == "SchedulingGated"
    assert store.bind_many([("default/gated", "n1", uid)]) == ["SchedulingGated"]
    obj = store.get("Pod", "default/gated")
    obj["spec"]["schedulingGates"] = []
    store.update(obj)
    store.bind("default/gated", "n1", uid)
    assert store.get("Pod", "default/gated")["spec"]["nodeName"] == "n1"


def test_concurrent_binders_exactly_one_wins(backend):
    start = latest_rv(backend.client())
    backend.client().create(pod("contested"))
    binders = [backend.client() for _ in range(8)]
    barrier = threading.Barrier(len(binders))
    outcomes = [None] * len(binders)

    def run(i):
        barrier.wait()
        try:
            binders[i].bind("default/contested", f"node-{i}")
            outcomes[i] = "won"
        except Conflict as e:
            outcomes[i] = e.reason

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(binders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("won") == 1
    assert sorted(outcomes) == ["AlreadyBound"] * 7 + ["won"]
    winner = outcomes.index("won")
    assert binders[0].get("Pod", "default/contested")["spec"]["nodeName"] == f"node-{winner}"
    binds = [e for e in drain(binders[0], start) if e.type == "MODIFIED"]
    assert len(binds) == 1


def test_bind_many_reports_each_result(store):
    uid = store.create(pod("a"))["metadata"]["uid"]
    store.create(pod("b"))
    results = store.bind_many([("default/a", "n1", uid), ("default/b", "n1", None), ("default/b", "n2", None),
                               ("default/gone", "n1", None), ("default/a", "n3", "wrong")])
    assert results == [None, None, "AlreadyBound", "PodNotFound", "UIDMismatch"]
    assert store.bind_many([]) == []


def test_evict(store):
    uid = store.create(pod("v"))["metadata"]["uid"]
    store.create(pod("w"))
    store.bind("default/v", "n1")
    rv = latest_rv(store)
    with pytest.raises(Conflict, match="UIDMismatch"):
        store.evict("default/v", "wrong")
    store.evict("default/v", uid)
    # the last event is the deletion (an API server's Eviction first adds a DisruptionTarget condition)
    *_, ev = store.poll(rv, timeout=0)
    assert (ev.type, ev.obj["spec"]["nodeName"]) == ("DELETED", "n1")
    assert store.get("Pod", "default/v") is None
    with pytest.raises(Conflict, match="PodNotFound"):
        store.evict("default/v")
    assert store.evict_many([("default/w", None), ("default/v", None)]) == [None, "PodNotFound"]


def test_nominated_node(store):
    store.create(pod("n"))
    rv = latest_rv(store)
    assert store.set_nominated_node("default/n", "n1") is True
    assert store.set_nominated_node("default/n", "n1") is False  # unchanged: no event
    assert store.get("Pod", "default/n")["status"]["nominatedNodeName"] == "n1"
    assert store.set_nominated_node("default/n", None) is True
    assert "nominatedNodeName" not in store.get("Pod", "default/n")["status"]
    assert names(store.poll(rv, timeout=0)) == [("MODIFIED", "n")] * 2
    assert store.set_nominated_node("default/gone", "n1") is False


def test_unschedulable_condition(store):
    store.create(pod("u"))
    rv = latest_rv(store)
    assert store.set_unschedulable("default/u", "0/3 nodes are available: 3 Insufficient cpu.") is True
    assert store.set_unschedulable("default/u", "0/3 nodes are available: 3 Insufficient cpu.") is False
    # (an API server also writes lastProbeTime: null)
    first = [{k: v for k, v in c.items() if v is not None} for c in store.get("Pod", "default/u")["status"]["conditions"]]
    assert first == [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                      "message": "0/3 nodes are available: 3 Insufficient cpu.",
                      "lastTransitionTime": first[0]["lastTransitionTime"]}]
    assert store.set_unschedulable("default/u", "0/4 nodes are available") is True
    (cond,) = store.get("Pod", "default/u")["status"]["conditions"]
    assert cond["message"] == "0/4 nodes are available"
    assert cond["lastTransitionTime"] == first[0]["lastTransitionTime"], "status did not change"
    assert len(store.poll(rv, timeout=0)) == 2
    store.bind("default/u", "n1")
    assert store.set_unschedulable("default/u", "late") is False
    assert store.get("Pod", "default/u")["status"]["conditions"][0]["status"] == "True"
    assert store.set_unschedulable("default/gone", "x") is False


def test_unschedulable_conditions_in_one_batch(store):
    store.create_many([pod("a"), pod("b")])
    store.bind("default/b", "n1")
    assert store.set_unschedulable_many([("default/a", "0/1 nodes are available"), ("default/b", "late"),
                                         ("default/gone", "x")]) == [True, False, False]
    assert store.get("Pod", "default/a")["status"]["conditions"][0]["message"] == "0/1 nodes are available"


def test_events_are_stored_and_a_series_updates_the_same_event(store):
    """What the status writer writes: an Event, then the same Event with its series (on kube,
    an events.k8s.io/v1 object created, then patched)."""
    from common.runtime.events import FAILED_SCHEDULING, WARNING, StatusWriter, pod_ref

    name = f"ev-{uuid.uuid4().hex[:8]}"
    created = store.create(pod(name))
    writer = StatusWriter(store, "shardsched-shard-0", qps=1000, burst=1000)
    ref = pod_ref(f"default/{name}", created["metadata"]["uid"])

    def ours():
        return [e for e in store.list_events() if (e.get("regarding") or {}).get("name") == name]

    writer.event(ref, WARNING, FAILED_SCHEDULING, "Scheduling", "0/2 nodes are available: 2 Insufficient cpu.")
    assert writer.flush() == 1
    (first,) = ours()
    assert (first["apiVersion"], first["kind"], first["reason"], first["type"]) == (
        "events.k8s.io/v1", "Event", FAILED_SCHEDULING, WARNING)
    assert first["regarding"]["uid"] == created["metadata"]["uid"] and "series" not in first
    for _ in range(2):
        writer.event(ref, WARNING, FAILED_SCHEDULING, "Scheduling", "0/2 nodes are available: 2 Insufficient cpu.")
    assert writer.flush() == 1 and writer.counters["events_refused"] == 0
    (again,) = ours()
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["series"]["count"] == 3 and again["note"] == first["note"]


def test_many_events_in_one_call_are_each_written_a_series_whose_event_is_gone_created_afresh(store):
    """Several Events in one write_events (the status writer's batch; kube:// sends them at
    once): new ones created, a series whose first Event is not there (expired) created with
    its count, and an Event whose name exists already (an earlier try wrote it) taken as
    written."""
    from common.runtime.events import FAILED_SCHEDULING, WARNING, StatusWriter, pod_ref

    tag = uuid.uuid4().hex[:8]
    created = [store.create(pod(f"evs-{tag}-{i}")) for i in range(3)]
    writer = StatusWriter(store, "shardsched-shard-0", qps=1000, burst=1000)
    for c in created:
        writer.event(pod_ref(f"default/{c['metadata']['name']}", c["metadata"]["uid"]), WARNING,
                     FAILED_SCHEDULING, "Scheduling", "0/2 nodes are available: 2 Insufficient cpu.")
    assert writer.flush() == 3 and writer.counters["events_written"] == 3
    events = {e["regarding"]["name"]: e for e in store.list_events() if tag in (e.get("regarding") or {}).get("name", "")}
    assert sorted(events) == [f"evs-{tag}-{i}" for i in range(3)]

    first = events[f"evs-{tag}-0"]
    fresh = dict(first, metadata={"name": f"series-{tag}", "namespace": "default"}, series={"count": 4, "lastObservedTime": first["eventTime"]})
    again = dict(first, metadata={"name": first["metadata"]["name"], "namespace": "default"})
    assert store.write_events([fresh, again]) == [None, None]
    by_name = {e["metadata"]["name"]: e for e in store.list_events()}
    assert by_name[f"series-{tag}"]["series"]["count"] == 4
    assert by_name[first["metadata"]["name"]]["note"] == first["note"]


def test_bulk_writes_larger_than_one_batch(store):
    keys = [f"default/p{i}" for i in range(2500)]
    assert store.create_many(pod(f"p{i}") for i in range(2500)) == []
    results = store.bind_many([(k, "n1", None) for k in keys] + [("default/p0", "n2", None)])
    assert results == [None] * 2500 + ["AlreadyBound"]
    assert store.evict_many([(k, None) for k in keys]) == [None] * 2500
    assert store.list("Pod")[0] == []


def test_create_many_skips_the_malformed_object_and_creates_the_rest(store):
    bad = pod("bad", cpu="four")
    objs = [node("n1"), pod("ok-1"), bad, pod("ok-2")]
    errors = store.create_many(objs)
    assert len(errors) == 1
    assert errors[0].obj == "Pod default/bad"
    assert errors[0].field == "spec.containers[0].resources.requests.cpu"
    assert sorted(p["metadata"]["name"] for p in store.list("Pod")[0]) == ["ok-1", "ok-2"]
    assert store.get("Node", "n1") is not None
    (dup,) = store.create_many([pod("ok-1"), pod("ok-3")])
    assert (dup.obj, dup.field) == ("Pod default/ok-1", "metadata.name")
    assert store.get("Pod", "default/ok-3") is not None


def test_objects_a_store_cannot_hold_are_refused_by_name_and_the_rest_created(store):
    """Any client may write: the store itself refuses an object over etcd's 1.5 MiB, nested
    too deep, or holding what JSON cannot (here a numeric label key), naming it and the
    field, and a bulk create goes on with the rest."""
    big = pod("big")
    big["metadata"]["annotations"] = {"blob": "x" * MAX_OBJECT_BYTES}
    deep = pod("deep")
    deep["spec"]["x"] = orjson.loads("[" * 300 + "]" * 300)
    keyed = pod("keyed")
    keyed["metadata"]["labels"] = {1: "one"}
    with pytest.raises(ObjectError) as e:
        store.create(big)
    assert (e.value.obj, e.value.field) == ("Pod default/big", "<root>")
    assert "more than the limit of 1572864" in e.value.message
    errors = store.create_many([pod("ok-1"), big, deep, keyed, pod("ok-2")])
    assert sorted((e.obj, e.field.split("[")[0]) for e in errors) == [
        ("Pod default/big", "<root>"), ("Pod default/deep", "spec.x"), ("Pod default/keyed", "metadata.labels")]
    assert sorted(p["metadata"]["name"] for p in store.list("Pod")[0]) == ["ok-1", "ok-2"]


def test_leases_expire_and_can_be_dropped(store):
    import time

    # A TTL long enough for the next three calls on a busy machine (0.3 s was not, on kube://
    # with the two cores loaded); its expiry is then waited for.
    ttl = 2.0
    put = time.monotonic()
    store.put_lease("shard", "s1", "127.0.0.1:7001", ttl_s=ttl)
    store.put_lease("shard", "s2", "127.0.0.1:7002", ttl_s=30)
    store.put_lease("binder", "b1", "127.0.0.1:7100", ttl_s=30)
    listed = store.list_leases("shard")
    if time.monotonic() - put < ttl:
        assert listed == {"s1": "127.0.0.1:7001", "s2": "127.0.0.1:7002"}
    time.sleep(max(0.0, put + ttl + 0.2 - time.monotonic()))
    assert store.list_leases("shard") == {"s2": "127.0.0.1:7002"}
    store.put_lease("shard", "s1", "127.0.0.1:7001", ttl_s=30)  # a renewal after expiry
    store.drop_lease("shard", "s2")
    assert store.list_leases("shard") == {"s1": "127.0.0.1:7001"}
    assert store.list_leases("binder") == {"b1": "127.0.0.1:7100"}


# --- opening stores -----------------------------------------------------------------------

def test_embedded_redis_is_stopped_on_exit_and_missing_binary_is_explained(redis_url):
    with EmbeddedRedis() as server:
        store = open_store(server.url)
        store.create(node("n1"))
        store.close()
    with pytest.raises(StoreUnavailable, match="Connection refused"):
        open_store(server.url)
    with pytest.raises(StoreUnavailable, match="redis-server not found; install the Debian package redis-server"):
        EmbeddedRedis(executable="no-such-redis-server").__enter__()


def test_unreachable_redis_gives_one_clear_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreUnavailable) as e:
        open_store(f"redis://127.0.0.1:{port}")
    assert str(e.value) == f"cannot reach redis at redis://127.0.0.1:{port}: Connection refused"


def test_open_store_schemes():
    assert isinstance(open_store("memory://"), MemoryStore)
    with pytest.raises(ValueError, match="unsupported store URL"):
        open_store("etcd://127.0.0.1:2379")


def test_list_iter_is_the_list_one_object_at_a_time_and_skips_only_bound_pods_without_the_labels(store):
    """`list_iter` yields what `list` returns (in an order of its own on Redis, whose paged
    scan meets the keys in another order than one whole read), at the same rv; with a ListSkip
    it passes over bound pods, but not pending ones nor bound ones carrying a label it names
    (the dispatcher's pod-group members)."""
    from common.model.podgroup import POD_GROUP_LABEL
    from common.store.base import ListSkip
    from builders import labelled_api_pod
    store.create(node("n1"))
    store.create(pod("pending"))
    for name in ("bound", "member"):
        store.create(labelled_api_pod(name, {POD_GROUP_LABEL: "g"} if name == "member" else {"app": "x"}))
        store.bind(f"default/{name}", "n1")
    listed, rv = store.list("Pod")
    objs, iter_rv = store.list_iter("Pod")
    assert sorted(o["metadata"]["name"] for o in objs) == sorted(o["metadata"]["name"] for o in listed)
    assert iter_rv == rv
    objs, _ = store.list_iter("Pod", skip=ListSkip((POD_GROUP_LABEL,)))
    assert sorted(o["metadata"]["name"] for o in objs) == ["member", "pending"]
    objs, _ = store.list_iter("Pod", skip=ListSkip())
    assert [o["metadata"]["name"] for o in objs] == ["pending"]
    assert [o["metadata"]["name"] for o in store.list_iter("Node", skip=ListSkip())[0]] == ["n1"]
