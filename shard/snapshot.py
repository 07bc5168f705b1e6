"""The cycle's view of the cluster: a RawStore of NodeInfo clones plus the node table.

At the start of each cycle `update()` pulls from the cache only the nodes whose generation
is newer than the snapshot's (GenerationStore), and rewrites only their node-table rows.
Two unoptimised variants are kept for benchmarks and ablations: `full=True` clones every node
and rebuilds every row each cycle; `zone_order=True` keeps the rows in kube-scheduler's
zone-interleaved order, re-sorted whenever a node joins, leaves or changes zone.
"""
from __future__ import annotations

from .generation_store import RawStore, full_copy
from .node_info import NodeInfo
from .node_table import NodeTable
from .zone_tree import ZoneTree, zone_of


class Snapshot:
    """Kept by the scheduler across cycles; `raw` maps node name -> NodeInfo clone."""

    def __init__(self, full: bool = False, zone_order: bool = False):
        self.raw = RawStore()
        self.table = NodeTable()
        self.full = full
        #: The unoptimised node list: rows kept in kube-scheduler's zone-interleaved order.
        self.zones = ZoneTree() if zone_order else None
        self.last_cloned = 0

    def update(self, cache) -> int:
        """Bring the snapshot up to the cache; returns how many nodes were cloned."""
        if self.full:
            return self._rebuild(cache)
        changed: list = []
        cloned = cache.nodes.update_raw_store(self.raw, NodeInfo.clone, changed)
        table = self.table
        raw = self.raw
        for name in changed:
            info = raw.get(name)
            if info is not None and info.node is not None:
                table.upsert(info)
            elif name in table.row_of:
                table.remove(name)
        if self.zones is not None and self._zones_moved(changed):
            table.reorder(self.zones.interleaved())
        self.last_cloned = cloned
        return cloned

    def _zones_moved(self, changed: list) -> bool:
        """Keep the zone tree in step with the table; True if membership changed."""
        zones, table, moved = self.zones, self.table, False
        for name in changed:
            row = table.row_of.get(name)
            zone = zone_of(table.infos[row].node) if row is not None else None
            if zones.zone_of_node.get(name) != zone:
                if name in zones.zone_of_node:
                    zones.remove(name)
                if zone is not None:
                    zones.add(name, zone)
                moved = True
        return moved

    def _rebuild(self, cache) -> int:
        self.raw = full_copy(cache.nodes, NodeInfo.clone)
        self.table = NodeTable(len(self.raw))
        for _, info in self.raw.items():
            if info.node is not None:
                self.table.upsert(info)
        if self.zones is not None:
            self.zones = ZoneTree()
            for name, info in zip(self.table.names, self.table.infos):
                self.zones.add(name, zone_of(info.node))
            self.table.reorder(self.zones.interleaved())
        self.last_cloned = len(self.raw)
        return self.last_cloned
