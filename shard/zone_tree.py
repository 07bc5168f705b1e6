"""kube-scheduler's node ordering: per-zone lists walked round-robin (its NodeTree).

This is the unoptimised variant the swap-delete node table replaces. kube-scheduler keeps a
list of node names per zone and, whenever nodes are added or removed, rebuilds the snapshot's
node list by taking one node from each zone in turn, so that a search stopping early still
sees every zone. Removing a node scans its zone's list. Kept for benchmarks and ablations.
"""
from __future__ import annotations

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def zone_of(node) -> str:
    """kube-scheduler's zone key: region and zone labels joined ("" when neither is set)."""
    labels = node.labels
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


class ZoneTree:
    def __init__(self) -> None:
        self.zones: dict[str, list[str]] = {}
        self.zone_of_node: dict[str, str] = {}

    def add(self, name: str, zone: str) -> None:
        if name in self.zone_of_node:
            return
        self.zone_of_node[name] = zone
        self.zones.setdefault(zone, []).append(name)

    def remove(self, name: str) -> None:
        zone = self.zone_of_node.pop(name)
        names = self.zones[zone]
        names.remove(name)  # linear in the zone's size, as in kube-scheduler
        if not names:
            del self.zones[zone]

    def interleaved(self) -> list[str]:
        """All node names, one zone at a time round-robin."""
        out: list[str] = []
        lists = list(self.zones.values())
        depth = max((len(names) for names in lists), default=0)
        for i in range(depth):
            for names in lists:
                if i < len(names):
                    out.append(names[i])
        return out
