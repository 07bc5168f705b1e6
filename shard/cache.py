"""The shard's cache: every node and every bound or assumed pod, fed by store watch events.

NodeInfos live in a GenerationStore ListStore, so every change moves the node to the front
with a fresh generation and a snapshot update only visits what changed. The shard's own
decisions are *assumed* at once (so the next cycle sees them), then confirmed when the
binding comes back through the watch, forgotten when the binder rejects them, or expired
after `assume_ttl` seconds if neither arrives.

Not thread-safe by design: the scheduling loop applies events between cycles.
"""
from __future__ import annotations

import time
from collections import Counter

from common.generation_store import ListStore
from .node_info import NodeInfo

TERMINAL_PHASES = ("Succeeded", "Failed")


class ShardCache:
    def __init__(self, assume_ttl: float = 30.0, clock=time.monotonic):
        self.nodes = ListStore()              # node name -> NodeInfo
        self.pod_node: dict[str, str] = {}    # pod key -> node it is counted on
        self.assumed: dict[str, float] = {}   # pod key -> deadline (clock seconds)
        self.assume_ttl = assume_ttl
        self.clock = clock
        #: priority -> number of counted pods: preemption is pointless for a pod whose
        #: priority is not above the lowest one (and costs a full scan to find that out).
        self.priorities: Counter = Counter()

    # --- nodes --------------------------------------------------------------------------------

    def _touch(self, info: NodeInfo) -> None:
        self.nodes.set(info.name, info)
        info.generation = self.nodes.generation

    def set_node(self, node) -> None:
        info = self.nodes.get(node.name) or NodeInfo(node.name)
        info.node = node
        self._touch(info)

    def remove_node(self, name: str) -> None:
        info = self.nodes.get(name)
        if info is None:
            return
        if info.pods:
            info.node = None  # pods still point at it: keep a placeholder until they go
            self._touch(info)
        else:
            self.nodes.delete(name)

    def node_count(self) -> int:
        return sum(1 for _ in self.live_nodes())

    def live_nodes(self):
        for _, info in self.nodes.items():
            if info.node is not None:
                yield info

    # --- pods ---------------------------------------------------------------------------------

    def set_pod(self, pod) -> None:
        """A pod seen through the watch: bound pods are counted on their node."""
        if not pod.node_name or pod.phase in TERMINAL_PHASES:
            self.remove_pod(pod.key)
            return
        if self.assumed.pop(pod.key, None) is not None and self._confirmed(pod):
            return  # the binding of our assumption arrived
        self._place(pod, pod.node_name)

    def _confirmed(self, pod) -> bool:
        """Swap in the bound version of a pod assumed on the same node, if it counts exactly
        as the assumed one did (see Pod.counts_like); False means it must be placed anew.

        Nothing a cycle reads changes, so the node keeps its generation: no snapshot clone,
        no node-table row rewrite, and pending pods' scheduling contexts stay valid. Before,
        every confirmation re-counted the pod and marked its node changed.
        """
        name = self.pod_node.get(pod.key)
        if name != pod.node_name:
            return False
        info = self.nodes.get(name)
        old = info.pods.get(pod.key)
        if old is None or not old.counts_like(pod):
            return False
        info.pods[pod.key] = pod
        if pod.key in info.affinity_pods:
            info.affinity_pods[pod.key] = pod
        return True

    def remove_pod(self, key: str) -> None:
        self.assumed.pop(key, None)
        name = self.pod_node.pop(key, None)
        if name is None:
            return
        info = self.nodes.get(name)
        self._uncount(info.remove_pod(key))
        if info.node is None and not info.pods:
            self.nodes.delete(name)
        else:
            self._touch(info)

    def _place(self, pod, node_name: str) -> None:
        old = self.pod_node.get(pod.key)
        if old is not None and old != node_name:
            self.remove_pod(pod.key)
        info = self.nodes.get(node_name)
        if info is None:
            info = NodeInfo(node_name)
        self._uncount(info.pods.get(pod.key))
        info.add_pod(pod)
        self.priorities[pod.priority] += 1
        self.pod_node[pod.key] = node_name
        self._touch(info)

    def counted(self, key: str):
        """The pod counted under `key` (bound or assumed), or None."""
        name = self.pod_node.get(key)
        return None if name is None else self.nodes.get(name).pods.get(key)

    def counted_pods(self):
        """Every pod counted on a node."""
        return (p for _, info in self.nodes.items() for p in info.pods.values())

    def _uncount(self, pod) -> None:
        if pod is not None:
            left = self.priorities[pod.priority] - 1
            if left:
                self.priorities[pod.priority] = left
            else:
                del self.priorities[pod.priority]

    def lowest_priority(self) -> float:
        """The lowest priority of any counted pod (infinity when there are none)."""
        return min(self.priorities) if self.priorities else float("inf")

    # --- assumptions --------------------------------------------------------------------------

    def assume(self, pod, node_name: str) -> None:
        """Count `pod` on `node_name` now, before its binding is committed."""
        self._place(pod, node_name)
        self.assumed.pop(pod.key, None)  # re-inserted last: the dict stays in deadline order
        self.assumed[pod.key] = self.clock() + self.assume_ttl

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def forget(self, key: str) -> None:
        """The binder rejected our decision: stop counting the pod."""
        if key in self.assumed:
            self.remove_pod(key)

    def expire(self) -> list[str]:
        """Forget assumptions past their deadline; returns their pod keys."""
        now = self.clock()
        gone = []
        for k, deadline in self.assumed.items():  # oldest first, so stop at the first live one
            if deadline > now:
                break
            gone.append(k)
        for k in gone:
            self.remove_pod(k)
        return gone
