"""The running pods of `shardsched bench --running-pods N`: a large cluster as Gödel measures
one (20,000 nodes, 1,000,000 running pods), filled before the clock starts.

The pods look like a cluster's workloads: Deployments (each pod owned by its ReplicaSet,
labelled app / pod-template-hash / tier / team), a few thousand of them with long-tailed
replica counts spread over 50 namespaces, images from a pool of a few hundred, a sidecar in
some, priorities of four levels; one Deployment in ten with required hostname anti-affinity
to its own replicas and one in five with a DoNotSchedule zone spread (maxSkew 1). Each is
bound and Running and Ready, as kwok leaves a pod it started.

Placement is valid by construction, so `verify` passes over the filled store: the pods go on
the untainted nodes only, visited in a zone-interleaved ring, one Deployment's replicas on
consecutive nodes of the ring (so on distinct nodes, their zones taking turns: the
anti-affinity and the spread hold), and each node's requests and pod count checked against
its allocatable (a fill that does not fit raises instead of overcommitting).

Writing is fast: the pods are generated and written in chunks (never all in memory at
once), each chunk in one pipelined bulk write; on the embedded Redis through
`RedisStore.create_many_trusted`, which skips the store's per-object checks and parse (one
pod of every Deployment first goes through the store's `prepare`, the same checks, so
every shape the fill writes is one the store accepts).
"""
from __future__ import annotations

import random
import time
from collections.abc import Iterator

from common.store.base import prepare

from .workloads import HOSTNAME, SCHEDULER, ZONE

ZONE_LABEL = ZONE
NAMESPACES = 50
#: Deployments per running pod, and the most of them (the label sets of a large cluster).
PODS_PER_DEPLOYMENT, MAX_DEPLOYMENTS = 60, 3000
PRIORITIES = ((0, 0.55), (100, 0.25), (1000, 0.15), (100000, 0.05))
#: (cpu millicores, memory MiB) a container asks for; small, as most of a cluster's pods are.
SHAPES = ((10, 32), (25, 64), (50, 128), (100, 128), (100, 256), (200, 512), (250, 256))
TIERS = ("frontend", "backend", "cache", "worker", "batch")
#: Shares of the Deployments with required hostname anti-affinity and with zone spread.
ANTI_AFFINITY_SHARE, SPREAD_SHARE = 0.1, 0.2
CHUNK = 5000
#: The default tolerations the API server's admission adds to every pod.
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]


def _quantities(cpu_m: int, mem_mi: int) -> dict:
    return {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}


class Deployment:
    __slots__ = ("namespace", "app", "rs", "rs_uid", "replicas", "priority", "containers", "cpu_m",
                 "mem_mi", "labels", "anti_affinity", "spread")

    def __init__(self, index: int, replicas: int, rng: random.Random, ring_size: int, zoned: bool = True):
        self.namespace = f"team-{index % NAMESPACES}"
        self.app = f"app-{index}"
        template_hash = f"{rng.getrandbits(40):010x}"[:10]
        self.rs = f"{self.app}-{template_hash}"
        self.rs_uid = f"{index:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        self.replicas = replicas
        r = rng.random()
        acc = 0.0
        for prio, share in PRIORITIES:
            acc += share
            if r < acc:
                break
        self.priority = prio
        cpu_m, mem_mi = rng.choice(SHAPES)
        containers = [{
            "name": "main", "image": f"registry.example.com/team-{index % NAMESPACES}/svc-{rng.randrange(300)}:v{rng.randrange(1, 40)}",
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "resources": {"requests": _quantities(cpu_m, mem_mi), "limits": _quantities(cpu_m * 2, mem_mi)},
            "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}]
        if rng.random() < 0.3:  # a service-mesh sidecar
            containers.append({
                "name": "proxy", "image": f"registry.example.com/mesh/proxy:1.{rng.randrange(18, 22)}",
                "resources": {"requests": _quantities(10, 32), "limits": _quantities(100, 64)},
                "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"})
            cpu_m, mem_mi = cpu_m + 10, mem_mi + 32
        self.containers = containers
        self.cpu_m, self.mem_mi = cpu_m, mem_mi
        self.labels = {"app": self.app, "pod-template-hash": template_hash, "tier": TIERS[index % len(TIERS)],
                       "team": f"team-{index % NAMESPACES}"}
        selector = {"matchLabels": {"app": self.app}}
        self.anti_affinity = (rng.random() < ANTI_AFFINITY_SHARE and replicas <= ring_size) and {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": HOSTNAME}]}}
        # (a fleet without zones, the uniform profile, gets no zone spread: every node would
        # be missing the key, and verify would call each such pod a violation)
        self.spread = rng.random() < SPREAD_SHARE and zoned and [
            {"maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]

    def pod(self, i: int, serial: int, node: str, host_ip: str, now: str) -> dict:
        name = f"{self.rs}-{i:05x}"
        spec = {"schedulerName": SCHEDULER, "nodeName": node, "priority": self.priority,
                "containers": self.containers, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                "terminationGracePeriodSeconds": 30, "serviceAccountName": "default",
                "enableServiceLinks": True, "tolerations": DEFAULT_TOLERATIONS}
        if self.anti_affinity:
            spec["affinity"] = self.anti_affinity
        if self.spread:
            spec["topologySpreadConstraints"] = self.spread
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "uid": f"{serial:08x}-0000-4000-9000-{serial:012x}",
                         "creationTimestamp": now, "labels": self.labels,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": self.rs,
                                              "uid": self.rs_uid, "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec,
            "status": {"phase": "Running", "hostIP": host_ip,
                       "podIP": f"10.{128 + (serial >> 16 & 127)}.{serial >> 8 & 255}.{serial & 255}",
                       "startTime": now, "qosClass": "Burstable",
                       "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                                      for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]},
        }


def _ring(nodes: list[dict]) -> list[dict]:
    """The untainted nodes, zones taking turns (as many of each zone: a Deployment's window
    of the ring never holds two more of one zone than of another)."""
    by_zone: dict[str, list[dict]] = {}
    for n in nodes:
        if not (n.get("spec") or {}).get("taints"):
            by_zone.setdefault(n["metadata"]["labels"].get(ZONE_LABEL, ""), []).append(n)
    if not by_zone:
        raise ValueError("--running-pods: the fleet has no untainted node")
    per_zone = min(len(z) for z in by_zone.values())
    return [z[k] for k in range(per_zone) for z in by_zone.values()]


def _cpu_m(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def _mem_mi(q: str) -> int:
    for suffix, mul in (("Ki", 1 / 1024), ("Mi", 1), ("Gi", 1024), ("Ti", 1024 * 1024)):
        if q.endswith(suffix):
            return int(float(q[:-2]) * mul)
    return int(q) // (1024 * 1024)


def deployment_count(n: int) -> int:
    return max(1, min(MAX_DEPLOYMENTS, n // PODS_PER_DEPLOYMENT))


def deployments(n: int, seed: int, ring_size: int, zoned: bool = True) -> list[Deployment]:
    """Deployments of `n` replicas in all, long-tailed sizes (a Pareto draw), at least one each."""
    rng = random.Random(seed)
    count = deployment_count(n)
    weights = [rng.paretovariate(1.2) for _ in range(count)]
    total = sum(weights)
    sizes = [max(1, int(w / total * n)) for w in weights]
    sizes[max(range(count), key=sizes.__getitem__)] += n - sum(sizes)  # the largest takes the rest
    while sizes and min(sizes) < 1:  # (the rest was negative: take it back from the largest ones)
        big = max(range(count), key=sizes.__getitem__)
        small = min(range(count), key=sizes.__getitem__)
        sizes[big] -= 1 - sizes[small]
        sizes[small] = 1
    return [Deployment(i, size, rng, ring_size, zoned) for i, size in enumerate(sizes)]


def generate(n: int, nodes: list[dict], seed: int = 0) -> Iterator[list[dict]]:
    """The `n` running pods in chunks of CHUNK manifests, bound to `nodes` (the fleet's
    manifests). Deterministic for a seed. Raises ValueError when they do not fit."""
    if n <= 0:
        return
    ring = _ring(nodes)
    names = [d["metadata"]["name"] for d in ring]
    free_cpu = [_cpu_m(d["status"]["allocatable"]["cpu"]) for d in ring]
    free_mem = [_mem_mi(d["status"]["allocatable"]["memory"]) for d in ring]
    free_pods = [int(d["status"]["allocatable"].get("pods", "110")) for d in ring]
    host_ips = [f"10.{i >> 16 & 127}.{i >> 8 & 255}.{i & 255}" for i in range(len(ring))]
    size = len(ring)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    chunk: list[dict] = []
    serial = cursor = 0
    zoned = all(ZONE_LABEL in d["metadata"].get("labels", {}) for d in ring)
    for dep in deployments(n, seed, size, zoned):
        for i in range(dep.replicas):
            at = cursor % size
            if free_pods[at] < 1 or free_cpu[at] < dep.cpu_m or free_mem[at] < dep.mem_mi:
                raise ValueError(f"--running-pods {n} do not fit on the fleet's {size} untainted nodes "
                                 f"(node {names[at]} is full)")
            free_pods[at] -= 1
            free_cpu[at] -= dep.cpu_m
            free_mem[at] -= dep.mem_mi
            serial += 1
            pod = dep.pod(i, serial, names[at], host_ips[at], now)
            if i == 0:
                prepare(pod)  # the store's own checks, once per shape (raises ObjectError)
            chunk.append(pod)
            cursor += 1
            if len(chunk) >= CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def fill(store, n: int, nodes: list[dict], seed: int = 0, progress=None) -> dict:
    """Write the running pods into `store`; returns {"running_pods", "deployments",
    "write_s", "pods_per_s"} for the report. Uses the store's unchecked bulk create when it
    has one (the embedded Redis), its `create_many` otherwise."""
    write = getattr(store, "create_many_trusted", None)
    t = time.monotonic()
    written = 0
    for chunk in generate(n, nodes, seed):
        errors = write("Pod", chunk) if write is not None else store.create_many(chunk)
        if errors:
            raise RuntimeError(f"running pods refused by the store: {errors[:3]}")
        written += len(chunk)
        if progress is not None:
            progress(written)
    elapsed = time.monotonic() - t
    return {"running_pods": written, "deployments": deployment_count(n) if n > 0 else 0,
            "write_s": round(elapsed, 2), "pods_per_s": round(written / elapsed, 1) if elapsed else None}
