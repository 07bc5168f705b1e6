"""The shard's cache: every node and every bound or assumed pod, fed by store watch events.

The bookkeeping (bound, assumed, confirmed, forgotten, expired) is common.scheduling.accounting's, which
the binder shares. What the shard adds: NodeInfos live in a GenerationStore ListStore, so every
change moves the node to the front with a fresh generation and a snapshot update only visits
what changed; and the priorities of the counted pods, so preemption knows when it is pointless.

Not thread-safe by design: the scheduling loop applies events between cycles.
"""
from __future__ import annotations

import time
from collections import Counter

from common.scheduling.accounting import PodAccounting
from .generation_store import ListStore
from .node_info import NodeInfo


class ImageState:
    """One image name across the cluster, as kube-scheduler's cache keeps it: the size the
    first node to report it gave, and the nodes holding it."""

    __slots__ = ("size", "nodes")

    def __init__(self, size: int):
        self.size = size
        self.nodes: set[str] = set()


class ShardCache(PodAccounting):
    node_type = NodeInfo

    def __init__(self, assume_ttl: float = 30.0, clock=time.monotonic):
        super().__init__(assume_ttl, clock)
        #: priority -> number of counted pods: preemption is pointless for a pod whose
        #: priority is not above the lowest one (and costs a full scan to find that out).
        self.priorities: Counter = Counter()
        #: image name -> ImageState, over every node (ImageLocality)
        self.images: dict[str, ImageState] = {}

    def _node_changed(self, old, new) -> None:
        """kube's removeNodeImageStates(old) then addNodeImageStates(new): an image nobody
        holds any more is forgotten, and the next node to report it sets its size."""
        for name in (old.images if old is not None else ()):
            state = self.images.get(name)
            if state is not None:
                state.nodes.discard(old.name)
                if not state.nodes:
                    del self.images[name]
        if new is None:
            return
        refs = {}
        for name, size in new.images.items():
            state = self.images.get(name)
            if state is None:
                state = self.images[name] = ImageState(size)
            state.nodes.add(new.name)
            refs[name] = state
        self.nodes.get(new.name).image_refs = refs

    def _new_nodes(self):
        return ListStore()

    def _store(self, info: NodeInfo) -> None:
        self.nodes.set(info.name, info)
        info.generation = self.nodes.generation

    def _drop(self, name: str) -> None:
        self.nodes.delete(name)

    def _counted(self, pod, node_name: str) -> None:
        self.priorities[pod.priority] += 1

    def _counted_many(self, pods: list, node_name: str) -> None:
        self.priorities.update(pod.priority for pod in pods)

    def _uncounted(self, pod, node_name: str) -> None:
        left = self.priorities[pod.priority] - 1
        if left:
            self.priorities[pod.priority] = left
        else:
            del self.priorities[pod.priority]

    def lowest_priority(self) -> float:
        """The lowest priority of any counted pod (infinity when there are none)."""
        self._count_deferred()
        return min(self.priorities) if self.priorities else float("inf")
