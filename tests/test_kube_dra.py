"""Dynamic Resource Allocation side by side with kube-scheduler v1.37 on a real kube-apiserver:
shardsched (dispatcher, shard and binder as processes with `--store kube://`, each as its
deploy/ ServiceAccount) and kube-scheduler (built from the same release, default profile) each
schedule the same pods in their own namespace, at the same time, on the same kwok nodes whose
GPUs `shardsched fleet --gpus-per-node 8` publishes (DeviceClass and ResourceSlices of driver
gpu.example.com), and must end the same way:

* a pod naming a claim that does not exist, or a template whose claim nobody made (no
  controller manager runs here), waits with no PodScheduled condition (kube's PreEnqueue) and
  is scheduled as soon as its claim is created (a queueing hint);
* pods whose claims fit nowhere get byte-identical PodScheduled messages: a device class
  missing, no device matching the request's selector, more devices than a node has, devices
  that must share a PCIe root (matchAttribute) beyond what one root has;
* where the node is determined it is the same one: a pod sharing an allocated claim goes to
  the node of its devices, and a pod whose selector matches no device is scheduled on the
  node of the first ResourceSlice that has one (a queueing hint on slices) as soon as it
  appears;
* the allocation is written as kube writes it (devices of the node's pool, a node selector on
  the node's name, the pod in reservedFor), and verify finds every device given at most once.
"""
from __future__ import annotations

from pathlib import Path

from builders import PAUSE, pod
from common.store.kube_store import KubeStore
from common.tools import fleet
from common.tools.verify import summary, verify_store
from kube_cluster import Teardown, kwok_nodes, scheduled_condition, shardsched_on, unschedulable_message, wait_for

from benchmarks import kube_vs

ROOT = Path(__file__).resolve().parent.parent
NODES = 3
PREFIX = "dra-node"
LATE_NODE = f"{PREFIX}-h100"  # its slice appears midway, with the one model a pod asks for
SCHEDULERS = {"dra-shardsched": "shardsched", "dra-kube": "default-scheduler"}
#: Two schedulers that do not know each other's decisions in flight would give one device
#: twice if they allocated at once (both take a node's first free device), so every
#: allocation is made by one side after the other's is written, or from its own half of a
#: node's devices (the pods waiting for the new slice wake together).
HALVES = {"dra-shardsched": "< 4", "dra-kube": ">= 4"}
TIMEOUT_S = 90
NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


def _request(count: int = 1, cls: str = fleet.GPU_CLASS, selector: str | None = None) -> dict:
    exactly: dict = {"deviceClassName": cls, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": "gpu", "exactly": exactly}


def _claim(name: str, ns: str, same_root: bool = False, **request) -> dict:
    devices: dict = {"requests": [_request(**request)]}
    if same_root:
        devices["constraints"] = [{"matchAttribute": fleet.PCIE_ROOT}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns}, "spec": {"devices": devices}}


def _template(name: str, ns: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns}, "spec": {"spec": {"devices": {"requests": [_request()]}}}}


def _pod(name: str, ns: str, claim: str | None = None, template: str | None = None) -> dict:
    d = pod(name, "100m", ns=ns, images=(PAUSE,), uid=None, status=False, scheduler=SCHEDULERS[ns],
            spec={"terminationGracePeriodSeconds": 0})
    entry = {"name": "gpu", **({"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": template})}
    d["spec"]["resourceClaims"] = [entry]
    d["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return d


def _model(model: str, ns: str) -> str:
    """A selector of one model, among the devices of `ns`'s half of a node (HALVES)."""
    attributes = f'device.attributes["{fleet.GPU_DRIVER}"]'
    return f'{attributes}.model == "{model}" && {attributes}.index {HALVES[ns]}'


def _unschedulable_message(store, key: str) -> str:
    return unschedulable_message(store, key, TIMEOUT_S)


def _bound_to(store, key: str) -> str:
    return wait_for(f"{key} was never bound: {scheduled_condition(store, key)}",
                    lambda: ((store.get("Pod", key) or {}).get("spec") or {}).get("nodeName"), TIMEOUT_S)


def _waiting(store, key: str) -> tuple:
    """What a pod held back before scheduling shows: its node (none) and PodScheduled condition."""
    obj = store.get("Pod", key)
    return obj["spec"].get("nodeName"), scheduled_condition(store, key)


def _reserved(store, key: str) -> dict:
    """The claim's status once it is allocated and reserved (written before the binding, but
    seen here perhaps a moment after it)."""
    def written():
        status = (store.get("ResourceClaim", key) or {}).get("status") or {}
        return status if status.get("allocation") and status.get("reservedFor") else None
    return wait_for(f"{key} never allocated and reserved", written, TIMEOUT_S)


def _gpu_nodes(store, names) -> None:
    """The nodes' ResourceSlices as fleet --gpus-per-node 8 publishes them."""
    for s in fleet.resource_slices([{"metadata": {"name": n}} for n in names], 8):
        store.create(s)


def test_devices_and_messages_as_kube_scheduler(kube_cluster, tmp_path):
    store = KubeStore(str(kube_cluster.kubeconfig))
    with Teardown(tmp_path) as undo:
        undo.callback(store.close)
        undo.callback(_clean, store)
        kwok_nodes(store, NODES, PREFIX)
        store.create(fleet.device_class())
        _gpu_nodes(store, [f"{PREFIX}-{i}" for i in range(NODES)])
        n = len(store.list("Node")[0])
        for ns in SCHEDULERS:
            kube_vs.create_namespace(store, ns)

        undo.started(shardsched_on(kube_cluster, store, tmp_path, 1))
        undo.kube_scheduler(kube_cluster, tmp_path)

        for ns in SCHEDULERS:
            for obj in (_claim("nope", ns, cls="nope.example.com"),
                        _claim("h100", ns, selector=_model("example-h100", ns)),
                        _claim("nine", ns, count=9), _claim("five-on-one-root", ns, count=5, same_root=True),
                        _claim("shared", ns), _template("gpu-1", ns),
                        _pod("no-class", ns, "nope"), _pod("no-match", ns, "h100"), _pod("too-many", ns, "nine"),
                        _pod("one-root", ns, "five-on-one-root"),
                        _pod("orphan", ns, "late"), _pod("from-template", ns, template="gpu-1")):
                store.create(obj)

        # kube's words, from both, for claims that fit nowhere
        no_claims = f"{n} cannot allocate all claims"
        expected = {"no-class": "request gpu: device class nope.example.com does not exist",
                    "no-match": no_claims, "too-many": no_claims, "one-root": no_claims}
        for name, reason in expected.items():
            want = f"0/{n} nodes are available: {reason}. {NOT_HELPFUL.format(n=n)}"
            got = {ns: _unschedulable_message(store, f"{ns}/{name}") for ns in SCHEDULERS}
            assert got == {ns: want for ns in SCHEDULERS}, name

        # an allocated claim: written as kube writes it; a second pod sharing it goes to its node
        for ns in SCHEDULERS:
            store.create(_pod("first", ns, "shared"))
            node = _bound_to(store, f"{ns}/first")
            status = _reserved(store, f"{ns}/shared")
            results = status["allocation"]["devices"]["results"]
            assert [(r["request"], r["driver"], r["pool"]) for r in results] == [("gpu", fleet.GPU_DRIVER, node)], ns
            assert status["allocation"]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}, ns
            assert [(r["resource"], r["name"]) for r in status["reservedFor"]] == [("pods", "first")], ns
            store.create(_pod("second", ns, "shared"))
            assert _bound_to(store, f"{ns}/second") == node, ns

        # held back before any cycle: no node, no condition, as kube's PreEnqueue leaves them
        for ns in SCHEDULERS:
            for name in ("orphan", "from-template"):
                assert _waiting(store, f"{ns}/{name}") == (None, None), (ns, name)
        # ...until the claim exists (the claim controller's part for the template is not played)
        for ns in SCHEDULERS:
            store.create(_claim("late", ns))
            _bound_to(store, f"{ns}/orphan")
            _reserved(store, f"{ns}/late")
        for ns in SCHEDULERS:
            assert _waiting(store, f"{ns}/from-template") == (None, None), ns

        # a slice with the one model no device had: the waiting pod goes to its node
        kwok_nodes(store, 1, LATE_NODE)
        late = f"{LATE_NODE}-0"
        slices = fleet.resource_slices([{"metadata": {"name": late}}], 8)
        for d in slices[0]["spec"]["devices"]:
            d["attributes"]["model"] = {"string": "example-h100"}
        store.create(slices[0])
        assert {ns: _bound_to(store, f"{ns}/no-match") for ns in SCHEDULERS} == {ns: late for ns in SCHEDULERS}

        report = verify_store(store)
        assert report["ok"] and not report["unparsable"], summary(report)


def _clean(store) -> None:
    """Everything this test made; allocated claims carry kube's delete-protection finalizer,
    which no controller manager removes here."""
    for ns in SCHEDULERS:
        kube_vs.clear_pods(store, ns)
    for kind in ("ResourceClaim", "ResourceClaimTemplate"):
        for obj in store.list(kind)[0]:
            meta = obj["metadata"]
            if meta["namespace"] not in SCHEDULERS:
                continue
            key = f"{meta['namespace']}/{meta['name']}"
            store.delete(kind, key)
            left = store.get(kind, key)
            if left is not None and left["metadata"].get("finalizers"):
                left["metadata"]["finalizers"] = []
                store.update(left)
    for obj in store.list("ResourceSlice")[0]:
        if obj["spec"].get("nodeName", "").startswith(PREFIX):
            store.delete("ResourceSlice", obj["metadata"]["name"])
    store.delete("DeviceClass", fleet.GPU_CLASS)
    for i in range(NODES):
        store.delete("Node", f"{PREFIX}-{i}")
    store.delete("Node", f"{LATE_NODE}-0")
