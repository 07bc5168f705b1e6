"""Per-node aggregate state: what the plugins need to judge one node quickly.

A NodeInfo holds the node, its pods (bound and assumed), their summed request vector and the
host ports in use (common.scheduling.accounting's NodeUsage, which the binder keeps too), and the pods
that carry inter-pod (anti-)affinity, plus a prefix-sum splay tree of its pods' requests by
priority for preemption pruning. The cache owns the live objects;
snapshots hold clones.
"""
from __future__ import annotations

from common.model.resources import vsum
from common.scheduling.accounting import NodeUsage
from .splay import PrioritySplayTree


def nonzero_request(pod) -> tuple[int, int]:
    """(cpu, memory) used for scoring: each container asking for no cpu or no memory counts
    as kube-scheduler's defaults (common.model.objects.NONZERO_DEFAULTS)."""
    return pod.nonzero


class NodeInfo(NodeUsage):
    """NodeUsage plus what the plugins read: scoring sums, affinity pods, the splay tree and
    the cache generation of the node's last change."""

    __slots__ = ("nonzero", "affinity_pods", "generation", "tree", "image_refs", "image_states")

    def __init__(self, name: str, node=None):
        super().__init__(name, node)
        self.nonzero = (0, 0)             # sum of nonzero_request() of the pods, for scoring
        self.affinity_pods: dict = {}     # pod key -> Pod, pods with any pod (anti-)affinity
        self.generation = 0
        self.tree = PrioritySplayTree()
        #: The node's images as the cache's cluster-wide ImageStates (the cache keeps it).
        self.image_refs: dict = {}
        #: In a snapshot copy: image name -> (cluster-wide size, nodes holding it), as of the
        #: copy (kube's ImageStateSummary.Snapshot: the count is not updated until the node
        #: itself changes and is copied again).
        self.image_states: dict = {}

    def add_pod(self, pod) -> None:
        super().add_pod(pod)
        cpu, mem = nonzero_request(pod)
        self.nonzero = (self.nonzero[0] + cpu, self.nonzero[1] + mem)
        if pod.affinity[0] or pod.affinity[1] or pod.anti_affinity[0] or pod.anti_affinity[1]:
            self.affinity_pods[pod.key] = pod
        if self.tree is not None:
            self.tree.add(pod.priority, pod.requests)

    def _add_new(self, pods: list) -> None:
        """NodeUsage's, and one insert into the splay tree per priority."""
        super()._add_new(pods)
        cpu, mem = self.nonzero
        by_priority: dict = {}
        for pod in pods:
            shared = pod.shared
            c, m = shared.nonzero
            cpu += c
            mem += m
            a, aa = shared.affinity, shared.anti_affinity
            if a[0] or a[1] or aa[0] or aa[1]:
                self.affinity_pods[pod.key] = pod
            vectors = by_priority.get(pod.priority)
            if vectors is None:
                by_priority[pod.priority] = [shared.requests]
            else:
                vectors.append(shared.requests)
        self.nonzero = (cpu, mem)
        if self.tree is not None:
            for priority, vectors in by_priority.items():
                self.tree.add(priority, vsum(vectors), len(vectors))

    def remove_pod(self, key: str):
        pod = super().remove_pod(key)
        if pod is None:
            return None
        cpu, mem = nonzero_request(pod)
        self.nonzero = (self.nonzero[0] - cpu, self.nonzero[1] - mem)
        self.affinity_pods.pop(key, None)
        if self.tree is not None:
            self.tree.remove(pod.priority, pod.requests)
        return pod

    def replace_pod(self, pod) -> None:
        old = self.pods.get(pod.key)
        super().replace_pod(pod)
        if pod.key in self.affinity_pods:
            self.affinity_pods[pod.key] = pod
        if (self.tree is not None and old is not None
                and (old.priority != pod.priority or old.requests != pod.requests)):
            self.tree.remove(old.priority, old.requests)
            self.tree.add(pod.priority, pod.requests)

    def clone(self) -> "NodeInfo":
        """Copy for a snapshot: containers copied, immutable pods and node objects shared.

        The splay tree is shared, not copied: rebuilding it would cost as much as the rest of
        the clone many times over. Sharing is safe because the shard applies cache changes only
        between cycles, on the scheduling thread, and every change to a node re-clones it into
        the snapshot before the next cycle reads it.
        """
        c = NodeInfo.__new__(NodeInfo)
        c.name, c.node, c.requested, c.generation = self.name, self.node, self.requested, self.generation
        c.nonzero = self.nonzero
        c.pods = dict(self.pods)
        c.host_ports = dict(self.host_ports)
        c.affinity_pods = dict(self.affinity_pods) if self.affinity_pods else {}
        c.tree = self.tree
        c.image_refs = self.image_refs
        c.image_states = ({name: (st.size, len(st.nodes)) for name, st in self.image_refs.items()}
                          if self.image_refs else {})
        return c

    def scratch(self) -> "NodeInfo":
        """A copy that preemption's dry runs may add pods to and remove pods from.

        It has no splay tree: the snapshot's tree is shared with the cache (see `clone`), and
        a dry run needs none, since it works on this node's pods directly.
        """
        c = self.clone()
        c.tree = None
        return c

    def same_as(self, other: "NodeInfo") -> bool:
        """Content equality (used by tests comparing snapshots with the cache)."""
        return (self.name == other.name and self.node is other.node and self.requested == other.requested
                and self.nonzero == other.nonzero
                and self.pods.keys() == other.pods.keys() and self.host_ports == other.host_ports
                and self.generation == other.generation)
