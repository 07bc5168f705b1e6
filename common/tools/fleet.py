"""kwok-style node fleets.

Nodes look like the ones kwok manages (annotation `kwok.x-k8s.io/node: fake`, label
`type: kwok`, 32 cpu / 256Gi / 110 pods by default) so the same manifests can be applied to
a real API server watched by kwok. The `mixed` profile adds what production fleets have:
zones, several instance shapes, a GPU pool and a tainted pool. Generation is deterministic
for a given seed.
"""
from __future__ import annotations

import random
from collections import Counter

PROFILES = ("uniform", "mixed")
ZONES = ("zone-a", "zone-b", "zone-c", "zone-d")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DEDICATED_TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}

# (shape name, share of the fleet, cpu, memory, extra allocatable, taints)
MIXED_SHAPES = (
    ("general", 0.50, "32", "256Gi", {}, ()),
    ("compute", 0.20, "64", "128Gi", {}, ()),
    ("memory", 0.15, "16", "512Gi", {}, ()),
    ("gpu", 0.10, "96", "768Gi", {"nvidia.com/gpu": "8"}, (GPU_TAINT,)),
    ("dedicated", 0.05, "32", "256Gi", {}, (DEDICATED_TAINT,)),
)


def kwok_node(name: str, cpu: str = "32", memory: str = "256Gi", pods: str = "110",
              labels: dict | None = None, extra: dict | None = None, taints=()) -> dict:
    """One Node manifest as kwok's examples write them."""
    alloc = {"cpu": cpu, "memory": memory, "ephemeral-storage": "100Gi", "pods": pods, **(extra or {})}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                **(labels or {}),
            },
        },
        "spec": {},
        "status": {
            "allocatable": dict(alloc),
            "capacity": dict(alloc),
            # every field the API's schema requires, so `kubectl apply` validates the list
            "nodeInfo": {"architecture": "amd64", "kubeletVersion": "fake", "kubeProxyVersion": "fake",
                         "operatingSystem": "linux", "machineID": "", "systemUUID": "", "bootID": "",
                         "kernelVersion": "", "osImage": "", "containerRuntimeVersion": ""},
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
    if taints:
        node["spec"]["taints"] = [dict(t) for t in taints]
    return node


def _shape_plan(n: int) -> list[int]:
    """Index into MIXED_SHAPES for each node, exact shares, shuffled by the caller."""
    counts = [int(n * share) for _, share, *_ in MIXED_SHAPES]
    counts[0] += n - sum(counts)
    return [i for i, c in enumerate(counts) for _ in range(c)]


def generate(nodes: int, profile: str = "uniform", seed: int = 0, prefix: str = "kwok-node") -> list[dict]:
    if profile not in PROFILES:
        raise ValueError(f"unknown fleet profile {profile!r} (one of {', '.join(PROFILES)})")
    if nodes < 0:
        raise ValueError("--nodes must be >= 0")
    if profile == "uniform":
        return [kwok_node(f"{prefix}-{i}") for i in range(nodes)]
    rng = random.Random(seed)
    plan = _shape_plan(nodes)
    rng.shuffle(plan)
    out = []
    for i, shape_idx in enumerate(plan):
        shape, _, cpu, mem, extra, taints = MIXED_SHAPES[shape_idx]
        zone = ZONES[i % len(ZONES)]
        labels = {"topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "region-1",
                  "node.kubernetes.io/instance-type": shape, "shardsched.io/pool": shape}
        out.append(kwok_node(f"{prefix}-{i}", cpu, mem, labels=labels, extra=extra, taints=taints))
    return out


def csi_limits(specs) -> dict[str, int]:
    """`--csi-limit DRIVER=COUNT` values as {driver: count}; ValueError naming a bad one."""
    out = {}
    for spec in specs or ():
        driver, sep, count = spec.partition("=")
        if not sep or not driver or not count.isdigit():
            raise ValueError(f"--csi-limit {spec!r}: use DRIVER=COUNT, e.g. ebs.csi.aws.com=25")
        out[driver] = int(count)
    return out


def csi_nodes(nodes: list[dict], limits: dict[str, int]) -> list[dict]:
    """A CSINode per node with each driver's attach limit (spec.drivers[].allocatable.count),
    as a node's CSI drivers register them: what NodeVolumeLimits counts against."""
    if not limits:
        return []
    return [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": n["metadata"]["name"]},
             "spec": {"drivers": [{"name": driver, "nodeID": n["metadata"]["name"], "allocatable": {"count": count}}
                                  for driver, count in sorted(limits.items())]}}
            for n in nodes]


#: The DRA driver `fleet --gpus-per-node` plays: its DeviceClass has the driver's name.
GPU_DRIVER = "gpu.example.com"
GPU_CLASS = GPU_DRIVER
GPU_MODEL = "example-a100"
GPU_MEMORY = "80Gi"
#: The attribute two-GPU claims constrain with matchAttribute: devices sharing a PCIe root
#: (Kubernetes' standard name for it, so it needs no driver's domain).
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
#: A ResourceSlice holds at most 128 devices (the API's limit).
MAX_DEVICES_PER_SLICE = 128


def gpu_device(index: int, per_node: int) -> dict:
    """One GPU as a driver publishes it: the first half of a node's devices on PCIe root
    "pci0000:00", the second half on "pci0000:01" (so a node of 8 has two roots of 4)."""
    root = 0 if index < max(1, (per_node + 1) // 2) else 1
    return {"name": f"gpu-{index}",
            "attributes": {"model": {"string": GPU_MODEL}, "index": {"int": index},
                           PCIE_ROOT: {"string": f"pci0000:{root:02x}"}},
            "capacity": {"memory": {"value": GPU_MEMORY}}}


def resource_slices(nodes: list[dict], per_node: int) -> list[dict]:
    """A ResourceSlice per node holding `per_node` GPUs, in a pool named after the node (one
    slice, generation 1), as a node-local DRA driver publishes them; none for 0."""
    if per_node < 0 or per_node > MAX_DEVICES_PER_SLICE:
        raise ValueError(f"--gpus-per-node must be between 0 and {MAX_DEVICES_PER_SLICE}, not {per_node}")
    if not per_node:
        return []
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{n['metadata']['name']}-{GPU_DRIVER}"},
             "spec": {"driver": GPU_DRIVER, "nodeName": n["metadata"]["name"],
                      "pool": {"name": n["metadata"]["name"], "generation": 1, "resourceSliceCount": 1},
                      "devices": [gpu_device(i, per_node) for i in range(per_node)]}}
            for n in nodes]


def device_class() -> dict:
    """The DeviceClass selecting every device of GPU_DRIVER (what claims name)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}}


def gpu_fleet(nodes: list[dict], per_node: int) -> list[dict]:
    """The DeviceClass and the nodes' ResourceSlices (nothing for 0 GPUs per node)."""
    slices = resource_slices(nodes, per_node)
    return [device_class(), *slices] if slices else []


def summarize(node_objs) -> dict:
    """Nodes per zone and shape, and total allocatable, from parsed Node objects."""
    from ..model.resources import ZERO, vadd, vector_to_map

    zones = Counter(n.labels.get("topology.kubernetes.io/zone", "-") for n in node_objs)
    shapes = Counter(n.labels.get("node.kubernetes.io/instance-type", "-") for n in node_objs)
    total = ZERO
    for n in node_objs:
        total = vadd(total, n.allocatable)
    return {"nodes": len(node_objs), "zones": dict(sorted(zones.items())),
            "shapes": dict(sorted(shapes.items())), "allocatable": vector_to_map(total)}
