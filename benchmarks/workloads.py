"""Pod manifests for `shardsched bench --workload W`, deterministic for a seed.

Each workload is a function (pods, seed, nodes) -> list of Pod dicts for profile
`shardsched` (and, for `gang`, the PodGroups before their pods; for the DRA workloads, the
ResourceClaimTemplates before theirs). Node names follow `common.tools.fleet.generate`
(kwok-node-<i>). A workload of FLEETS needs more of the fleet than its nodes (devices, GPUs as
extended resources); one of BASELINES is measured in the same run against another.
"""
from __future__ import annotations

import random

from common.tools.fleet import GPU_CLASS, PCIE_ROOT, gpu_fleet

SCHEDULER = "shardsched"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
POOL = "shardsched.io/pool"
GROUP = "scheduling.x-k8s.io/pod-group"


def pause_pod(name: str, cpu: str = "100m", memory: str = "500Mi", labels: dict | None = None,
              **spec) -> dict:
    """scheduler_perf's default pod: one pause container with small requests."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "labels": labels or {"app": "bench"}},
        "spec": {"schedulerName": SCHEDULER, "containers": [{
            "name": "pause", "image": "registry.k8s.io/pause:3.9",
            "resources": {"requests": {"cpu": cpu, "memory": memory}}}], **spec},
    }


def basic(pods: int, seed: int, nodes: int) -> list[dict]:
    return [pause_pod(f"basic-{i}") for i in range(pods)]


def mixed(pods: int, seed: int, nodes: int) -> list[dict]:
    """Several shapes; GPU pods tolerate the GPU taint and ask for the GPU pool, and a share
    of pods runs on the tainted dedicated pool through a toleration and a nodeSelector."""
    rng = random.Random(seed)
    out = []
    for i in range(pods):
        r = rng.random()
        if r < 0.05:
            p = pause_pod(f"gpu-{i}", "2", "8Gi", tolerations=[
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": POOL, "operator": "In", "values": ["gpu"]}]}]}}})
            p["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        elif r < 0.10:
            p = pause_pod(f"infra-{i}", "500m", "1Gi", nodeSelector={POOL: "dedicated"},
                          tolerations=[{"key": "dedicated", "operator": "Equal", "value": "infra",
                                        "effect": "NoSchedule"}])
        elif r < 0.30:
            p = pause_pod(f"medium-{i}", "1", "2Gi")
        elif r < 0.40:
            p = pause_pod(f"large-{i}", "4", "16Gi")
        else:
            p = pause_pod(f"small-{i}", "100m", "256Mi")
        out.append(p)
    return out


def preemption(pods: int, seed: int, nodes: int) -> list[dict]:
    """Low-priority pods sized to fill the untainted nodes (about 40 cpu each asked for, more
    than most have), then high-priority pods of the same size that must preempt."""
    low = pods * 4 // 5
    cpu = max(1, min(16, -(-40 * nodes // max(low, 1))))
    out = [pause_pod(f"low-{i}", str(cpu), "1Gi", priority=0) for i in range(low)]
    out += [pause_pod(f"high-{i}", str(cpu), "1Gi", priority=1000) for i in range(pods - low)]
    return out


def unschedulable(pods: int, seed: int, nodes: int) -> list[dict]:
    """One pod in ten asks for more cpu than any node has and keeps being retried."""
    return [pause_pod(f"nofit-{i}", "1000", "1Gi") if i % 10 == 0 else pause_pod(f"fit-{i}")
            for i in range(pods)]


def daemonset(pods: int, seed: int, nodes: int) -> list[dict]:
    """One pod per node, pinned the way the DaemonSet controller pins them."""
    return [pause_pod(f"ds-{i}", "50m", "64Mi", tolerations=[{"operator": "Exists"}],
                      affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                          "nodeSelectorTerms": [{"matchFields": [{
                              "key": "metadata.name", "operator": "In",
                              "values": [f"kwok-node-{i % nodes}"]}]}]}}})
            for i in range(min(pods, nodes))]


def spread(pods: int, seed: int, nodes: int) -> list[dict]:
    """Deployments of 50 replicas spread over zones, with hostname anti-affinity."""
    out = []
    for i in range(pods):
        app = {"app": f"web-{i // 50}"}
        out.append(pause_pod(f"spread-{i}", labels=app, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": app}}],
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": app}, "topologyKey": HOSTNAME}]}}))
    return out


def gang(pods: int, seed: int, nodes: int) -> list[dict]:
    """Pod groups of 8 to 64 members (every fourth of exactly 64; minMember = its size; each
    member 1 cpu and 2Gi, as a training worker) mixed with as many single pods (100m, 500Mi):
    a group's PodGroup, then its members, then single pods, and so on; `pods` pods in all."""
    rng = random.Random(seed)
    out: list[dict] = []
    made = group = 0
    while made < pods:
        size = min(64 if group % 4 == 0 else rng.randint(8, 64), pods - made)
        name = f"gang-{group}"
        out.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": "bench"}, "spec": {"minMember": size}})
        out += [pause_pod(f"{name}-{i}", "1", "2Gi", labels={"app": "gang", GROUP: name}) for i in range(size)]
        made += size
        singles = min(size, pods - made)
        out += [pause_pod(f"single-{group}-{i}") for i in range(singles)]
        made += singles
        group += 1
    return out


def _cpu_pods(pods: int, seed: int) -> list[dict]:
    """Pods of the untainted pools in three shapes, none pinned (the cluster-wide pool)."""
    rng = random.Random(seed)
    out = []
    for i in range(pods):
        r = rng.random()
        cpu, memory = ("100m", "256Mi") if r < 0.6 else ("1", "2Gi") if r < 0.85 else ("4", "16Gi")
        out.append(pause_pod(f"cpu-{i}", cpu, memory))
    return out


def cpu_pool(pods: int, seed: int, nodes: int) -> list[dict]:
    """gpu_backlog's CPU pods alone: its baseline."""
    return _cpu_pods(pods, seed)


def _gpu_pod(i: int) -> dict:
    """A pod pinned to the GPU pool (nodeSelector on the pool label) that fits no GPU node (16
    GPUs; the mixed fleet's have 8)."""
    g = pause_pod(f"gpu-{i}", "8", "32Gi", nodeSelector={POOL: "gpu"}, tolerations=[
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    g["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "16"}
    return g


def gpu_backlog(pods: int, seed: int, nodes: int) -> list[dict]:
    """The CPU pods of cpu_pool, and one GPU pod that cannot fit (`_gpu_pod`) per five of them,
    created among them: a pool's backlog growing beside pods that flow. Only the CPU pods can
    bind, so the report's throughput and latency are theirs."""
    out = []
    for i, p in enumerate(_cpu_pods(pods, seed)):
        out.append(p)
        if i % 5 == 4:
            out.append(_gpu_pod(i // 5))
    return out


def gpu_saturated(pods: int, seed: int, nodes: int) -> list[dict]:
    """The CPU pods of cpu_pool, flowing while the GPU pool is already saturated: its backlog
    (`STANDING`) is created and tried once before the clock starts."""
    return _cpu_pods(pods, seed)


#: GPUs per node of the DRA workloads' fleet, as devices or as the extended resource.
GPUS_PER_NODE = 8
EXTENDED_GPU = "nvidia.com/gpu"
#: Share of the pods of `dra` and `extended-gpu` that ask for two GPUs.
PAIR_SHARE = 0.1
#: The ResourceClaimTemplates of the DRA workloads: one GPU, or two on one PCIe root.
ONE_GPU, TWO_GPUS = "gpu-1", "gpu-2-same-root"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def claim_template(name: str, count: int, same_root: bool) -> dict:
    """A ResourceClaimTemplate asking `count` GPUs of the fleet's DeviceClass (with
    `same_root`, a matchAttribute constraint keeps them on one PCIe root)."""
    devices: dict = {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS, "count": count}}]}
    if same_root:
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": PCIE_ROOT}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "bench"}, "spec": {"spec": {"devices": devices}}}


def claim_pod(name: str, template: str) -> dict:
    """A pause pod whose one container uses a claim made for it from `template`."""
    p = pause_pod(name, tolerations=[GPU_TOLERATION])
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return p


def extended_pod(name: str, gpus: int) -> dict:
    """The same pod asking its GPUs as the extended resource instead."""
    p = pause_pod(name, tolerations=[GPU_TOLERATION])
    p["spec"]["containers"][0]["resources"]["limits"] = {EXTENDED_GPU: str(gpus)}
    return p


def _gpu_counts(pods: int, seed: int, pair_share: float) -> list[int]:
    """How many GPUs each pod asks for: 2 for about `pair_share` of them, else 1."""
    rng = random.Random(seed)
    return [2 if rng.random() < pair_share else 1 for _ in range(pods)]


def _dra(pods: int, seed: int, pair_share: float) -> list[dict]:
    counts = _gpu_counts(pods, seed, pair_share)
    templates = [claim_template(ONE_GPU, 1, False)] + ([claim_template(TWO_GPUS, 2, True)] if 2 in counts else [])
    return templates + [claim_pod(f"dra-{i}", TWO_GPUS if n == 2 else ONE_GPU) for i, n in enumerate(counts)]


def dra(pods: int, seed: int, nodes: int) -> list[dict]:
    """Pods whose GPUs come from claims made from templates (bench builds the fleet with 8
    devices per node): most ask for one GPU, about one in ten for two on one PCIe root."""
    return _dra(pods, seed, PAIR_SHARE)


def dra_single(pods: int, seed: int, nodes: int) -> list[dict]:
    """`dra` with every pod asking one GPU (the issue's 8,000 pods on 1,000 nodes)."""
    return _dra(pods, seed, 0.0)


def extended_gpu(pods: int, seed: int, nodes: int) -> list[dict]:
    """`dra`'s baseline: the same pods asking nvidia.com/gpu (8 per node) instead of claims."""
    return [extended_pod(f"gpu-{i}", n) for i, n in enumerate(_gpu_counts(pods, seed, PAIR_SHARE))]


def extended_gpu_single(pods: int, seed: int, nodes: int) -> list[dict]:
    """`dra-single`'s baseline: every pod asking one nvidia.com/gpu."""
    return [extended_pod(f"gpu-{i}", 1) for i in range(pods)]


def with_extended_gpus(fleet: list[dict]) -> list[dict]:
    """The nodes with GPUS_PER_NODE nvidia.com/gpu each (allocatable and capacity)."""
    for node in fleet:
        for field in ("allocatable", "capacity"):
            node["status"][field][EXTENDED_GPU] = str(GPUS_PER_NODE)
    return fleet


def with_devices(fleet: list[dict]) -> list[dict]:
    """The nodes, the DeviceClass and a ResourceSlice of GPUS_PER_NODE GPUs per node."""
    return fleet + gpu_fleet(fleet, GPUS_PER_NODE)


WORKLOADS = {f.__name__.replace("_", "-"): f for f in (basic, mixed, preemption, unschedulable, daemonset, spread,
                                                       gang, cpu_pool, gpu_backlog, gpu_saturated, dra, dra_single,
                                                       extended_gpu, extended_gpu_single)}
#: workload -> what it needs of the fleet beyond the nodes (fleet -> fleet)
FLEETS = {"dra": with_devices, "dra-single": with_devices,
          "extended-gpu": with_extended_gpus, "extended-gpu-single": with_extended_gpus}
#: workload -> the workload `bench` measures in the same run as its yardstick
BASELINES = {"dra": "extended-gpu", "dra-single": "extended-gpu-single"}

#: Pods a workload needs in the store, each tried by a shard, before the clock starts:
#: `gpu-saturated`'s standing GPU backlog, one pod that cannot fit per five that flow.
STANDING = {"gpu-saturated": lambda pods, seed, nodes: [_gpu_pod(i) for i in range(pods // 5)]}
