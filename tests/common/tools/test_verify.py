"""common.tools.verify finds every kind of violation, and only real ones."""
from __future__ import annotations

import pytest

from common.store.memory import MemoryStore
from common.tools.verify import verify, verify_store
from builders import verify_node as node
from builders import verify_pod as pod
from builders import pod as raw_pod
from builders import allocation, claim_pod, device_class, gpu, resource_claim, resource_slice
from common.model.objects import parse_object, parse_pod

NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

CASES = {
    "clean": ([node()], [pod("a"), pod("b"), pod("pending", node_name=None)], set()),
    "overcommit cpu": ([node(cpu="1")], [pod("a", cpu="600m"), pod("b", cpu="600m")], {"overcommit"}),
    "overcommit pods": ([node(pods="1")], [pod("a"), pod("b")], {"overcommit"}),
    "terminal pods do not count": ([node(cpu="1")], [pod("a", cpu="800m"),
                                                     pod("b", cpu="800m", phase="Succeeded")], set()),
    "host port twice": ([node()], [pod("a", port=80), pod("b", port=80)], {"host-port"}),
    "missing node": ([node()], [pod("a", node_name="gone")], {"missing-node"}),
    "untolerated taint": ([node(taints=[NO_SCHEDULE])], [pod("a")], {"taint"}),
    "tolerated taint": ([node(taints=[NO_SCHEDULE])],
                        [pod("a", tolerations=[{"key": "dedicated", "operator": "Exists"}])], set()),
    "node selector": ([node()], [pod("a", nodeSelector={"zone": "b"})], {"node-affinity"}),
    "required affinity": ([node()], [pod("a", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}})],
        {"node-affinity"}),
    "bound twice": ([node()], [pod("a", uid="same"), pod("b", uid="same")], {"bound-twice"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_violation_kinds(case):
    nodes, pods, expected = CASES[case]
    report = verify(nodes, pods)
    assert {v["kind"] for v in report["violations"]} == expected
    assert report["ok"] == (not expected)
    assert report["bound"] == sum(1 for p in pods if p.node_name and p.phase not in ("Succeeded", "Failed"))


def test_verify_store_reads_and_reports():
    store = MemoryStore()
    store.create(node(cpu="1").raw)
    for p in (pod("a", cpu="800m"), pod("b", cpu="800m"), pod("c", node_name=None)):
        store.create(p.raw)
    report = verify_store(store)
    assert not report["ok"] and report["pending"] == 1 and report["bound"] == 2
    assert report["violations"][0]["object"] == "Node n1"


class _PagedOnly(MemoryStore):
    """A store whose pods are too many to be answered in one list (a million running pods
    on Redis: one HGETALL of gigabytes times out): they are read only in pages."""

    def list(self, kind: str, cached: bool = False):
        if kind == "Pod":
            raise AssertionError("the pods were asked for in one list")
        return super().list(kind, cached)


def test_verify_store_reads_the_pods_in_pages_and_still_sees_groups():
    from builders import pod_group

    store = _PagedOnly()
    store.create(node(cpu="2").raw)
    store.create(pod_group("g", 3))
    for p in (pod("a", cpu="800m"), pod("b", cpu="800m"), pod("c", node_name=None)):
        store.create(p.raw)
    for name, bound in (("g0", True), ("g1", True), ("g2", False)):
        store.create(raw_pod(name, "100m", node_name="n1" if bound else None,
                             labels={"scheduling.x-k8s.io/pod-group": "g"}))
    report = verify_store(store)
    assert (report["bound"], report["pending"]) == (4, 2)
    assert [v["kind"] for v in report["violations"]] == ["partial-group"], report["violations"]


def _aged(name: str, cpu: str = "500m", scheduler: str = "shardsched", **kw):
    """A pending pod created at 2026-01-01T00:00:00Z (EPOCH below)."""
    return parse_pod(raw_pod(name, cpu, ns="ns", meta={"creationTimestamp": "2026-01-01T00:00:00Z"},
                             scheduler=scheduler, **kw))


EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize("case, pods, stuck", [
    ("fits and waited too long", [_aged("p")], {"Pod ns/p"}),
    ("fits nowhere", [_aged("huge", cpu="8")], set()),
    ("another scheduler's", [_aged("other", scheduler="default-scheduler")], set()),
    ("gated", [_aged("gated", spec={"schedulingGates": [{"name": "x"}]})], set()),
    ("room taken by a bound pod", [_aged("p", cpu="1600m"), pod("a", cpu="600m")], set()),
])
def test_settled_flags_pods_left_pending_that_a_node_could_take(case, pods, stuck):
    report = verify([node()], pods, settled_s=60, scheduler_names={"shardsched"}, now=EPOCH + 120)
    assert {v["object"] for v in report["violations"] if v["kind"] == "stuck"} == stuck
    young = verify([node()], pods, settled_s=600, scheduler_names={"shardsched"}, now=EPOCH + 120)
    assert not [v for v in young["violations"] if v["kind"] == "stuck"]
    assert not [v for v in verify([node()], pods)["violations"] if v["kind"] == "stuck"]


def test_a_partly_placed_pod_group_is_a_violation_and_its_pods_are_not_stuck():
    """Two of minMember 3 bound while the third waits: "partial-group". All three bound, or
    none, or two bound with none left pending (a member deleted): fine. `--settled` does not
    call a member stuck: groups are placed as groups, which it does not try."""
    from builders import pod_group
    from common.model.podgroup import parse_pod_group

    group = parse_pod_group(pod_group("g", 3))

    def member(name, bound):
        return parse_pod(raw_pod(name, "500m", node_name="n1" if bound else None,
                                 labels={"scheduling.x-k8s.io/pod-group": "g"},
                                 meta={"creationTimestamp": "2020-01-01T00:00:00Z"}))

    for placed, pending, partial in ((2, 1, True), (3, 0, False), (0, 3, False), (2, 0, False), (1, 2, True)):
        pods = [member(f"b{i}", True) for i in range(placed)] + [member(f"p{i}", False) for i in range(pending)]
        report = verify([node(cpu="8")], pods, settled_s=1.0, groups=[group])
        kinds = {v["kind"] for v in report["violations"]}
        assert kinds == ({"partial-group"} if partial else set()), (placed, pending)


# --- volumes -------------------------------------------------------------------------------------

def _volumes(*objs):
    from common.scheduling.volumes import VolumeState

    vs = VolumeState()
    for o in objs:
        vs.set(parse_object(o))
    return vs


def test_volume_invariants():
    """Two pods on one ReadWriteOncePod claim, and a pod on a node its bound volume's node
    affinity excludes, are violations."""
    from builders import claim_volume, pv, pvc

    vs = _volumes(pvc("solo", "x", modes=("ReadWriteOncePod",), volume_name="pv-a", bound=True, ns="ns"),
                  pv("pv-a", "x", modes=("ReadWriteOncePod",), affinity={"zone": ["b"]}))
    pods = [pod("a", volumes=[claim_volume("solo")]), pod("b", volumes=[claim_volume("solo")])]
    report = verify([node()], pods, volumes=vs)
    assert sorted(v["kind"] for v in report["violations"]) == [
        "read-write-once-pod", "volume-node-affinity", "volume-node-affinity"]


@pytest.mark.parametrize("case, storage, stuck", [
    ("its claim is missing", [], set()),
    ("its claim waits for a provisioner", ["selected"], set()),
    ("its claim could be provisioned", ["unselected"], {"Pod ns/p"}),
])
def test_settled_judges_volumes_too(case, storage, stuck):
    from builders import claim_volume, pvc, storage_class

    claims = {"selected": pvc("data", "wffc", ns="ns", annotations={"volume.kubernetes.io/selected-node": "n1"}),
              "unselected": pvc("data", "wffc", ns="ns")}
    vs = _volumes(storage_class("wffc"), *[claims[s] for s in storage])
    report = verify([node()], [_aged("p", volumes=[claim_volume("data")])], settled_s=60, now=EPOCH + 120, volumes=vs)
    assert {v["object"] for v in report["violations"] if v["kind"] == "stuck"} == stuck


# --- devices (Dynamic Resource Allocation) --------------------------------------------------

def _dra(*docs):
    return [parse_object(d) for d in docs]


def _gpu_pod(name: str, node_name: str | None = "n1", claims=(), templates=(), statuses=None):
    return parse_pod(claim_pod(name, claims=claims, templates=templates, statuses=statuses,
                               cpu="100m", node_name=node_name))


def _gpu_nodes():
    return [node("n1"), node("n2")]


def _slices():
    return _dra(resource_slice("n1", [gpu(0), gpu(1)]), resource_slice("n2", [gpu(0), gpu(1)]))


DEVICE_CASES = {
    "claims on their pods' nodes": (
        [_gpu_pod("a", claims=["ca"]), _gpu_pod("b", "n2", templates=[("gpu", "t")], statuses={"gpu": "b-gpu"})],
        [resource_claim("ca", allocation=allocation("n1", "gpu-0"), reserved_for=["a"]),
         resource_claim("b-gpu", allocation=allocation("n2", "gpu-0"), reserved_for=["b"])], []),
    "one device in two claims": (
        [_gpu_pod("a", claims=["ca"]), _gpu_pod("b", claims=["cb"])],
        [resource_claim("ca", allocation=allocation("n1", "gpu-1"), reserved_for=["a"]),
         resource_claim("cb", allocation=allocation("n1", "gpu-1"), reserved_for=["b"])],
        [("device-twice", "ResourceClaim default/cb",
          "device gpu.example.com/n1/gpu-1 is also allocated to claim default/ca")]),
    "a shared claim is one allocation": (
        [_gpu_pod("a", claims=["shared"]), _gpu_pod("b", claims=["shared"])],
        [resource_claim("shared", allocation=allocation("n1", "gpu-0"), reserved_for=["a", "b"])], []),
    "claim missing": (
        [_gpu_pod("a", claims=["gone"])], [],
        [("claim-unallocated", "Pod default/a", "bound to n1, but its claim gone does not exist")]),
    "claim never made from its template": (
        [_gpu_pod("a", templates=[("gpu", "t")])], [],
        [("claim-unallocated", "Pod default/a", "bound to n1, but no claim was made for its entry gpu (template t)")]),
    "claim not allocated": (
        [_gpu_pod("a", claims=["ca"])], [resource_claim("ca")],
        [("claim-unallocated", "Pod default/a", "bound to n1, but its claim ca is not allocated")]),
    "claim not reserved for the pod": (
        [_gpu_pod("a", claims=["ca"])], [resource_claim("ca", allocation=allocation("n1", "gpu-0"))],
        [("claim-unallocated", "Pod default/a", "bound to n1, but its claim ca is not reserved for it")]),
    "claim allocated for another node": (
        [_gpu_pod("a", claims=["ca"])],
        [resource_claim("ca", allocation=allocation("n2", "gpu-0"), reserved_for=["a"])],
        [("claim-elsewhere", "Pod default/a", "bound to n1, but the allocation of its claim ca is for other nodes")]),
    "device of another node's pool": (
        [_gpu_pod("a", claims=["ca"])],
        [resource_claim("ca", allocation={**allocation("n2", "gpu-0"), "nodeSelector": None}, reserved_for=["a"])],
        [("claim-elsewhere", "Pod default/a",
          "bound to n1, but device gpu.example.com/n2/gpu-0 of its claim ca is not on that node")]),
    "device in no slice": (
        [_gpu_pod("a", claims=["ca"])],
        [resource_claim("ca", allocation=allocation("n1", "gpu-7"), reserved_for=["a"])],
        [("claim-elsewhere", "Pod default/a",
          "bound to n1, but device gpu.example.com/n1/gpu-7 of its claim ca is in no ResourceSlice")]),
    "pending and finished pods are not judged": (
        [_gpu_pod("a", None, claims=["gone"]),
         parse_pod(claim_pod("done", claims=["gone"], node_name="n1", phase="Succeeded"))], [], []),
}


@pytest.mark.parametrize("case", sorted(DEVICE_CASES))
def test_device_violations(case):
    pods, claims, expected = DEVICE_CASES[case]
    report = verify(_gpu_nodes(), pods, claims=_dra(*claims), slices=_slices())
    assert [(v["kind"], v["object"], v["message"]) for v in report["violations"]] == expected
    assert report["ok"] == (not expected)


def test_verify_store_reads_claims_and_slices():
    store = MemoryStore()
    for d in (resource_slice("n1", [gpu(0)]), device_class(),
              resource_claim("ca", allocation=allocation("n1", "gpu-0"), reserved_for=["a"]),
              resource_claim("cb", allocation=allocation("n1", "gpu-0"), reserved_for=["b"])):
        store.create(d)
    report = verify_store(store)
    assert [(v["kind"], v["object"]) for v in report["violations"]] == [("device-twice", "ResourceClaim default/cb")]


def _aged_gpu_pod(name: str, claim: str):
    return parse_pod(claim_pod(name, claims=[claim], cpu="100m", ns="ns", scheduler="shardsched",
                               meta={"creationTimestamp": "2026-01-01T00:00:00Z"}))


@pytest.mark.parametrize("case, claims, stuck", [
    ("a free device it could take", [resource_claim("want", ns="ns")], {"Pod ns/p"}),
    ("every device taken", [resource_claim("want", ns="ns"),
                            resource_claim("other", ns="ns", allocation=allocation("n1", "gpu-0", "gpu-1"))], set()),
    ("its claim not made yet", [], set()),
])
def test_settled_judges_a_pending_pods_claims_against_the_free_devices(case, claims, stuck):
    report = verify([node("n1")], [_aged_gpu_pod("p", "want")], settled_s=60, scheduler_names={"shardsched"},
                    now=EPOCH + 120, claims=_dra(*claims), slices=_dra(resource_slice("n1", [gpu(0), gpu(1)])),
                    classes=_dra(device_class()))
    assert {v["object"] for v in report["violations"] if v["kind"] == "stuck"} == stuck
