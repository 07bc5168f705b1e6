"""`bench --workload dra` (benchmarks/workloads.py): claims from templates on a fleet of 8
GPUs per node, measured against the same pods asking nvidia.com/gpu in the same run."""
from __future__ import annotations

from benchmarks import workloads
from benchmarks.e2e import against
from common.tools.fleet import GPU_CLASS, PCIE_ROOT, generate


def _gpus(pod: dict) -> int:
    """How many GPUs a pod of either workload asks for."""
    limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
    if workloads.EXTENDED_GPU in limits:
        return int(limits[workloads.EXTENDED_GPU])
    return {workloads.ONE_GPU: 1, workloads.TWO_GPUS: 2}[pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]]


def test_dra_pods_take_their_claims_from_templates_created_first():
    docs = workloads.dra(1000, 3, 10)
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaimTemplate"}
    assert [d["kind"] for d in docs[:2]] == ["ResourceClaimTemplate"] * 2 and len(docs) == 1002
    one = templates[workloads.ONE_GPU]["spec"]["spec"]["devices"]
    assert one == {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS, "count": 1}}]}
    two = templates[workloads.TWO_GPUS]["spec"]["spec"]["devices"]
    assert two["requests"][0]["exactly"]["count"] == 2
    assert two["constraints"] == [{"requests": ["gpu"], "matchAttribute": PCIE_ROOT}]
    pods = docs[2:]
    for p in pods:  # the container uses the claim the pod names
        assert p["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
        assert p["spec"]["resourceClaims"][0]["name"] == "gpu"
    pairs = sum(_gpus(p) == 2 for p in pods)
    assert 50 <= pairs <= 150  # about one in ten


def test_the_baseline_asks_the_same_gpus_as_an_extended_resource():
    dra = [d for d in workloads.dra(500, 7, 10) if d["kind"] == "Pod"]
    extended = workloads.extended_gpu(500, 7, 10)
    assert [_gpus(p) for p in dra] == [_gpus(p) for p in extended]
    assert all("resourceClaims" not in p["spec"] for p in extended)
    assert {_gpus(p) for p in workloads.dra_single(200, 7, 10) if p["kind"] == "Pod"} == {1}
    assert {_gpus(p) for p in workloads.extended_gpu_single(200, 7, 10)} == {1}
    assert workloads.BASELINES == {"dra": "extended-gpu", "dra-single": "extended-gpu-single"}


def test_each_workload_gets_its_gpus_in_the_fleet():
    with_devices = workloads.FLEETS["dra"](generate(3, "uniform"))
    assert [d["kind"] for d in with_devices] == ["Node"] * 3 + ["DeviceClass"] + ["ResourceSlice"] * 3
    assert all(len(s["spec"]["devices"]) == workloads.GPUS_PER_NODE for s in with_devices[4:])
    extended = workloads.FLEETS["extended-gpu"](generate(3, "uniform"))
    assert [n["status"]["allocatable"][workloads.EXTENDED_GPU] for n in extended] == ["8"] * 3
    assert workloads.FLEETS.keys() == {"dra", "dra-single", "extended-gpu", "extended-gpu-single"}


def test_against_reports_the_baseline_and_the_throughput_ratio():
    def doc(workload, tp):
        return {"workload": workload, "throughput_pods_per_s": {"average": tp}, "e2e_latency_ms": {"p99": 9.0},
                "scheduled": 80, "conflicts": 2, "verify": {"ok": True}}
    assert against(doc("dra", 300.0), doc("extended-gpu", 400.0)) == {
        "workload": "extended-gpu", "throughput": 400.0, "p99_ms": 9.0, "scheduled": 80, "conflicts": 2,
        "verify_ok": True, "ratio": 0.75}
    assert against(doc("dra", 300.0), doc("extended-gpu", 0.0))["ratio"] is None


def test_the_claim_controller_process_makes_the_pods_claims_from_their_templates():
    from benchmarks.claims import ClaimsProcess
    from common.store import open_store
    from common.store.embedded import EmbeddedRedis
    from kube_cluster import wait_for

    docs = workloads.dra(3, 0, 1)
    with EmbeddedRedis() as server:
        store = open_store(server.url)
        try:
            assert store.create_many(docs) == []
            claims = ClaimsProcess(server.url)
            claims.start()
            try:
                made = wait_for("no claims made", lambda: len(store.list("ResourceClaim")[0]) == 3 and all(
                    (store.get("Pod", f"bench/dra-{i}").get("status") or {}).get("resourceClaimStatuses")
                    for i in range(3)), 120)
            finally:
                counts = claims.stop()
            assert made and counts["errors"] == 0 and counts["writes"] >= 6 and counts["passes"] >= 1
            owners = sorted(c["metadata"]["ownerReferences"][0]["name"] for c in store.list("ResourceClaim")[0])
            assert owners == ["dra-0", "dra-1", "dra-2"]
        finally:
            store.close()
