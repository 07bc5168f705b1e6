"""Which binder partition a node belongs to, so that every process agrees on it without
talking to the others, and a restart changes nothing.

Nodes are grouped by the value of one label (`binders.partitionLabel`, the zone by default;
nodes without it by their name), hashed onto `binders.count` partitions. So every topology
domain of that label, and of any label nested in it (the node itself), lies within one
partition, and one binder sees every reservation that a check over such a domain must see
(see common/scheduling/checks.py for why the other constraints stay exact too).

Each partition is held by one binder process at a time through a lease (role
PARTITION_ROLE, id = the partition's number, holder = the binder's gRPC address), which is
how shards find where to send a decision.
"""
from __future__ import annotations

import zlib

PARTITION_ROLE = "binder-partition"


def partition_of(node, partitions: int, label: str) -> int:
    """The partition of `node` (a parsed Node, or just a name when its labels are unknown)."""
    if partitions <= 1:
        return 0
    name = node if isinstance(node, str) else node.name
    labels = {} if isinstance(node, str) else node.labels
    value = labels.get(label) if label else None
    return zlib.crc32((f"{label}={value}" if value else name).encode()) % partitions
