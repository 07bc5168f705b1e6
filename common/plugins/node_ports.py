"""NodePorts: a host port (protocol, port) can be used once per node and address (the
predicate, common.scheduling.predicates.host_ports_conflict, is shared with preemption and verify)."""
from __future__ import annotations

from ..scheduling.predicates import PORTS_IN_USE, host_ports_conflict
from .interface import FilterPlugin, PreFilterPlugin
from .spec import PluginSpec, QueueingHints, always, could_host


def check(j):
    """The binder's re-check: the pod's host ports are free on the node once the victims left."""
    if not j.pod.host_ports:
        return None
    in_use = dict(j.info.host_ports)
    for v in j.victims:
        for port in v.host_ports:
            in_use[port] -= 1
    if host_ports_conflict(j.pod.host_ports, [p for p, n in in_use.items() if n > 0]):
        return f"NodePorts: {PORTS_IN_USE}"
    return None


def _pod_left(pod, gone) -> bool:
    return bool(gone.host_ports) and host_ports_conflict(pod.host_ports, gone.host_ports)


class NodePorts(PluginSpec, PreFilterPlugin, FilterPlugin):
    name = "NodePorts"
    resolvable_by_preemption = True
    binder_check = staticmethod(check)
    queueing_hints = QueueingHints(node_added=could_host, pod_left=_pod_left, preemption_changed=always)
