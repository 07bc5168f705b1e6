"""Sub-clusters: which pool a pod belongs to (config `subClusters.label`).

A node's pool is the value of the label on it. A pod belongs to a named pool when it can only
run on that pool's nodes by its own words: its nodeSelector sets the label, or every term of
its required node affinity holds `label In [one value]`, the same value in each term. Any
other pod (no such pin, terms that pin different pools, a pool of several values) belongs to
the cluster-wide pool, CLUSTER_WIDE, and may go to any node its filters allow.

Because the pin is one of the pod's own requirements, narrowing its search to the pool's
nodes never loses a feasible node. The shard reads parsed pods (`pool_of`), the dispatcher
raw ones (`raw_pool_of`, which never raises on a malformed document: the shard's parser is
the one that reports those)."""
from __future__ import annotations

import zlib

CLUSTER_WIDE = ""


def _pinned(selector: dict, terms, label: str) -> str:
    """The pool `selector` (nodeSelector) or every one of `terms` (each an iterable of
    (key, operator, values)) pins `label` to; CLUSTER_WIDE when they do not."""
    value = selector.get(label)
    if isinstance(value, str):
        return value
    if not terms:
        return CLUSTER_WIDE
    pools = set()
    for expressions in terms:
        pins = [next(iter(values)) for key, op, values in expressions
                if key == label and op == "In" and len(values) == 1]
        if not pins:
            return CLUSTER_WIDE  # this term may match nodes of any pool
        pools.add(pins[0])
    return pools.pop() if len(pools) == 1 else CLUSTER_WIDE


def pool_of(pod, label: str) -> str:
    """The pool of a parsed Pod (common.model.objects.Pod)."""
    if not label:
        return CLUSTER_WIDE
    terms = pod.required_node_terms
    return _pinned(pod.node_selector or {}, [t.expressions for t in terms] if terms else None, label)


def raw_pool_of(obj: dict, label: str) -> str:
    """The pool of a Pod document as the store holds it."""
    if not label:
        return CLUSTER_WIDE
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    try:
        required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        raw_terms = required["nodeSelectorTerms"]
        terms = [[(e.get("key"), e.get("operator"), tuple(e.get("values") or ()))
                  for e in (t.get("matchExpressions") or ())] for t in raw_terms]
    except (KeyError, TypeError, AttributeError):
        terms = None
    return _pinned(selector, terms, label)


def shards_for(pool: str, live: list[str], per_pool: int) -> list[str]:
    """The live shards (ids) a pool's pods go to: `per_pool` of them, consecutive in sorted
    order from a place the pool's name picks (crc32: the same in every dispatcher replica);
    all of them for the cluster-wide pool or `per_pool` 0. A shard that dies drops out of
    `live`, and its pools move to the next shards in that order."""
    if pool == CLUSTER_WIDE or not per_pool or per_pool >= len(live):
        return list(live)
    ordered = sorted(live)
    start = zlib.crc32(pool.encode()) % len(ordered)
    return [ordered[(start + i) % len(ordered)] for i in range(per_pool)]
