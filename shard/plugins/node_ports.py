"""NodePorts: a host port (protocol, port) can be used once per node and address.

Two uses conflict when protocol and port match and either address is 0.0.0.0 or both are
the same address.
"""
from __future__ import annotations

import numpy as np

from common.plugins import node_ports
from common.scheduling.predicates import PORTS_IN_USE, host_ports_conflict
from ..framework import SKIP, Plugin, Status, unschedulable

REASON = PORTS_IN_USE


class NodePorts(Plugin, node_ports.NodePorts):
    def pre_filter(self, state, pod):
        return None if pod.host_ports else Status(SKIP)

    def filter(self, state, pod, info):
        if info.host_ports and host_ports_conflict(pod.host_ports, info.host_ports):
            return unschedulable(REASON)
        return None

    def filter_vec(self, state, pod, table, rows):
        # Node by node inside (only pods with host ports get here, and most nodes have none in
        # use), but in the vectorised pass so filters run in the profile's order: a node short
        # of both ports and cpu is reported for its ports, as by kube-scheduler.
        ids = range(rows.start, rows.stop) if isinstance(rows, slice) else rows
        infos, wanted = table.infos, pod.host_ports
        return np.fromiter((not (infos[r].host_ports and host_ports_conflict(wanted, infos[r].host_ports)) for r in ids),
                           dtype=bool, count=len(ids))
