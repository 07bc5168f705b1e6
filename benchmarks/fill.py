"""Building large shard caches quickly for benchmarks.

Parsing hundreds of thousands of pod manifests would dominate a benchmark's run time without
measuring anything, so pods are parsed from a few templates and then copied with their own
name, uid and start time (Pod objects are immutable once parsed, so a shallow copy is a
complete, independent pod).
"""
from __future__ import annotations

import copy
import random

from common.tools.fleet import generate
from common.model.objects import parse_node, parse_pod
from shard.cache import ShardCache


def template_pod(cpu_m: int, memory_mi: int, priority: int = 0, labels: dict | None = None,
                 owner: str | None = None, **spec) -> object:
    """A pause pod requesting `cpu_m` millicores and `memory_mi` MiB, labelled app=bench
    unless `labels` says otherwise, optionally owned by ReplicaSet `owner`."""
    meta: dict = {"namespace": "bench", "name": "template", "uid": "template",
                  "labels": labels or {"app": "bench"}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                    "uid": f"uid-{owner}", "controller": True}]
    return parse_pod({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": {"cpu": f"{cpu_m}m",
                                                            "memory": f"{memory_mi}Mi"}}}],
                 "schedulerName": "shardsched", "priority": priority, **spec},
    })


def instance(template, name: str, node: str | None = None, start: float = 0.0):
    """A copy of `template` named `name` (namespace bench), optionally bound to `node`."""
    pod = copy.copy(template)
    pod.uid = f"uid-{name}"
    pod.key = f"{pod.namespace}/{name}"
    pod.node_name = node
    pod.start_time = start
    pod.phase = "Running" if node else "Pending"
    return pod


def fleet_cache(nodes: int, pods_per_node: int, seed: int = 0,
                priorities: tuple[int, ...] = (0, 100, 1000)) -> ShardCache:
    """A cache with a mixed kwok fleet and `pods_per_node` small pods of mixed priorities."""
    rng = random.Random(seed)
    cache = ShardCache()
    templates = [template_pod(cpu, mem, prio) for prio in priorities
                 for cpu, mem in ((100, 128), (250, 512), (500, 1024))]
    serial = 0
    for d in generate(nodes, "mixed", seed):
        node = parse_node(d)
        cache.set_node(node)
        for _ in range(pods_per_node):
            serial += 1
            cache.set_pod(instance(rng.choice(templates), f"fill-{serial}", node.name,
                                   start=float(serial)))
    return cache
