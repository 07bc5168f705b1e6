"""The binder's side of volumes: kube's volume filters among its checks (so shards cannot
together break a ReadWriteOncePod claim or take one volume twice), and VolumeBinding's
PreBind: the bindings written after the victims, the wait for the claims to bind off the
commit pipeline, then the pod's binding; refusals when a provisioner gives up or time runs out.

Decisions go over a real Decide stream to a BinderServer on the memory store
(builders.LiveBinder); shard.provisioner plays kube-controller-manager's PV controller and a
provisioner where a test lets it."""
from __future__ import annotations

import threading
import time

from builders import LiveBinder, claim_volume, decision, make_config, node, pod, pv, pvc, storage_class
from shard.provisioner import Provisioner
from common.store.memory import MemoryStore
from proto import shardsched_pb2 as pb

SELECTED = "volume.kubernetes.io/selected-node"


def _store(*objs) -> MemoryStore:
    store = MemoryStore()
    for o in objs:
        store.create(o)
    return store


def _with(name, *claims):
    return pod(name, cpu="100m", volumes=[claim_volume(c) for c in claims])


def send(binder: LiveBinder, *decisions, shard: str = "0") -> None:
    """Send a batch without waiting for its outcomes."""
    binder.requests.put(pb.DecisionBatch(shard=shard, decisions=list(decisions)))


def test_a_waiting_claim_is_provisioned_then_the_pod_is_bound():
    """The binder writes the selected-node annotation and answers only once the claim is
    bound: until then other decisions are judged and committed as usual."""
    store = _store(node("n1"), node("n2"), storage_class("wffc"), pvc("data", "wffc"), _with("db", "data"),
                   pod("plain", cpu="100m"))
    binder = LiveBinder(store)
    try:
        binder.sync()
        send(binder, decision("default/db", "n1"))
        deadline = time.monotonic() + 5
        while (store.get("PersistentVolumeClaim", "default/data")["metadata"].get("annotations") or {}).get(
                SELECTED) != "n1":
            assert time.monotonic() < deadline, "the claim was never handed to a provisioner"
            time.sleep(0.02)
        assert not store.get("Pod", "default/db")["spec"].get("nodeName")
        assert len(binder.server.volume_waits) == 1
        out = binder.decide(decision("default/plain", "n1"))  # nothing else waits for the provisioner
        assert out["default/plain"].bound
        Provisioner(store).settle()
        got = next(iter(binder.responses)).outcomes
        assert [(o.pod_key, o.bound) for o in got] == [("default/db", True)]
        assert store.get("Pod", "default/db")["spec"]["nodeName"] == "n1"
        claim = store.get("PersistentVolumeClaim", "default/data")
        assert claim["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"
    finally:
        binder.close()


def test_a_static_volume_is_bound_to_the_claim_before_the_pod():
    store = _store(node("n1"), storage_class("local", "kubernetes.io/no-provisioner"), pvc("data", "local"),
                   pv("local-n1", "local", affinity={"kubernetes.io/hostname": ["n1"]}), _with("db", "data"))
    binder = LiveBinder(store)
    stop = threading.Event()

    def pv_controller():  # completes the bindings the binder writes, as kube-controller-manager would
        while not stop.wait(0.05):
            Provisioner(store).settle()

    threading.Thread(target=pv_controller, daemon=True).start()
    try:
        binder.sync()
        out = binder.decide(decision("default/db", "n1"))
        assert out["default/db"].bound, out["default/db"].reason
        volume = store.get("PersistentVolume", "local-n1")
        assert volume["spec"]["claimRef"]["name"] == "data"
        assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    finally:
        stop.set()
        binder.close()


def test_two_shards_cannot_give_one_read_write_once_pod_claim_to_two_pods():
    store = _store(node("n1"), node("n2"), pvc("solo", modes=("ReadWriteOncePod",), volume_name="vol", bound=True),
                   pv("vol", modes=("ReadWriteOncePod",)), _with("a", "solo"), _with("b", "solo"))
    binder = LiveBinder(store)
    try:
        binder.sync()
        out = binder.decide(decision("default/a", "n1"), decision("default/b", "n2"))
        assert out["default/a"].bound
        assert out["default/b"].reason == ("VolumeRestrictions: node(s) unavailable due to PersistentVolumeClaim "
                                           "with ReadWriteOncePod access mode already in-use by another pod")
    finally:
        binder.close()


def test_one_waiting_claim_cannot_be_provisioned_on_two_nodes():
    """Two pods of one WaitForFirstConsumer claim placed on different nodes by two shards:
    the second is refused while the first's provisioning is in flight."""
    store = _store(node("n1"), node("n2"), storage_class("wffc"), pvc("data", "wffc"), _with("a", "data"),
                   _with("b", "data"))
    binder = LiveBinder(store)
    try:
        binder.sync()
        send(binder, decision("default/a", "n1"))
        out = binder.decide(decision("default/b", "n2"), shard="1")
        assert out["default/b"].reason == "VolumeBinding: node(s) didn't find available persistent volumes to bind"
    finally:
        binder.close()


def test_missing_claims_and_given_up_provisioning_are_refused():
    cfg = make_config(plugin_config={"VolumeBinding": {"bindTimeoutSeconds": 1}})
    store = _store(node("n1"), storage_class("wffc"), pvc("data", "wffc"), pvc("slow", "wffc"),
                   _with("orphan", "missing"), _with("db", "data"), _with("late", "slow"))
    binder = LiveBinder(store, cfg)
    try:
        binder.sync()
        out = binder.decide(decision("default/orphan", "n1"))
        assert out["default/orphan"].reason == 'VolumeRestrictions: persistentvolumeclaim "missing" not found'
        send(binder, decision("default/db", "n1"), decision("default/late", "n1"))
        deadline = time.monotonic() + 5
        while len(binder.server.volume_waits) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        claim = store.get("PersistentVolumeClaim", "default/data")
        del claim["metadata"]["annotations"][SELECTED]  # the provisioner gave up on it (kube's contract)
        store.update(claim)
        got = {}
        for batch in binder.responses:
            got.update((o.pod_key, o) for o in batch.outcomes)
            if len(got) == 2:
                break
        assert got["default/db"].reason == (
            'VolumeBinding: binding volumes: selectedNode annotation reset for PVC "data"')
        assert got["default/late"].reason == "VolumeBinding: binding volumes: context deadline exceeded"
        assert not binder.server.view.reserved  # every reservation settled
    finally:
        binder.close()
