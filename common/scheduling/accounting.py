"""Who holds what on each node: the bookkeeping the shard's cache and the binder's view share.

Both follow the store's watch, count bound pods on their nodes, and count their own decisions
at once as *assumed* pods (so the next decision sees them), which are confirmed when the
binding comes back through the watch, forgotten when it is refused, or expired after
`assume_ttl` seconds if neither happens.

`NodeUsage` is the lean per-node record (requests, pod count, host ports) the binder needs;
the shard's NodeInfo extends it with what its plugins read (splay trees, affinity pods,
generations), and its cache extends `PodAccounting` with a GenerationStore. Neither is
thread-safe: each owner applies events and decisions from one thread or under its own lock.
"""
from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager

from ..model.objects import TERMINAL_PHASES
from ..model.resources import ZERO, vadd, vsub, vsum


class NodeUsage:
    __slots__ = ("name", "node", "pods", "requested", "host_ports")

    def __init__(self, name: str, node=None):
        self.name = name
        self.node = node
        self.pods: dict = {}        # pod key -> Pod
        self.requested = ZERO       # sum of the pods' request vectors (pods slot = count)
        self.host_ports: dict = {}  # (ip, protocol, port) -> number of pods using it

    @property
    def allocatable(self):
        return self.node.allocatable if self.node is not None else ZERO

    @property
    def free(self):
        return vsub(self.allocatable, self.requested)

    def add_pod(self, pod) -> None:
        if pod.key in self.pods:
            self.remove_pod(pod.key)
        self.pods[pod.key] = pod
        self.requested = vadd(self.requested, pod.requests)
        for port in pod.host_ports:
            self.host_ports[port] = self.host_ports.get(port, 0) + 1

    def add_pods(self, pods: list) -> None:
        """Count `pods` as `add_pod` of each would, in one pass when none of them is counted
        here yet: a list of a million running pods counts each node's fifty at once."""
        if any(pod.key in self.pods for pod in pods):
            for pod in pods:  # a pod counted twice: as add_pod does it
                self.add_pod(pod)
            return
        self._add_new(pods)

    def _add_new(self, pods: list) -> None:
        """`add_pods` of pods none of which is counted here: what each node kind keeps of
        them, in one pass (a shard's NodeInfo adds its splay tree and affinity pods)."""
        own = self.pods
        ports = self.host_ports
        vectors = [self.requested]
        for pod in pods:
            own[pod.key] = pod
            vectors.append(pod.requests)
            for port in pod.host_ports:
                ports[port] = ports.get(port, 0) + 1
        self.requested = vsum(vectors)

    def remove_pod(self, key: str):
        pod = self.pods.pop(key, None)
        if pod is None:
            return None
        self.requested = vsub(self.requested, pod.requests)
        for port in pod.host_ports:
            left = self.host_ports[port] - 1
            if left:
                self.host_ports[port] = left
            else:
                del self.host_ports[port]
        return pod

    def replace_pod(self, pod) -> None:
        """Swap in another version of a counted pod that counts exactly like it."""
        self.pods[pod.key] = pod


class PodAccounting:
    """Nodes by name with the pods counted on them, bound or assumed."""

    #: The per-node record; subclasses keep richer ones.
    node_type = NodeUsage

    def __init__(self, assume_ttl: float = 30.0, clock=time.monotonic):
        self.nodes = self._new_nodes()        # node name -> node record (dict-like)
        self.pod_node: dict[str, str] = {}    # pod key -> node it is counted on
        self.assumed: dict[str, float] = {}   # pod key -> deadline (clock seconds)
        self.assume_ttl = assume_ttl
        self.clock = clock
        #: "namespace/claim" -> counted pods mounting that PersistentVolumeClaim (kube's
        #: usedPVCSet, which VolumeRestrictions' ReadWriteOncePod check reads)
        self.claims_in_use: Counter = Counter()
        #: While a list loads (`listing`): its bound pods not counted yet, by node name (None
        #: outside a list), and by key
        self._deferred: dict[str, list] | None = None
        self._deferred_keys: dict = {}

    # --- what subclasses keep differently ---------------------------------------------------

    def _new_nodes(self):
        return {}

    def _store(self, info) -> None:
        """`info` changed (or is new)."""
        self.nodes[info.name] = info

    def _drop(self, name: str) -> None:
        del self.nodes[name]

    def _counted(self, pod, node_name: str) -> None:
        """`pod` is now counted on `node_name`."""

    def _uncounted(self, pod, node_name: str) -> None:
        """`pod` is no longer counted on `node_name`."""

    def _node_changed(self, old, new) -> None:
        """A node object was added (old None), replaced, or removed (new None)."""

    def _counted_many(self, pods: list, node_name: str) -> None:
        """`pods` are now counted on `node_name` (`_counted` of each)."""
        for pod in pods:
            self._counted(pod, node_name)

    # --- an initial list ----------------------------------------------------------------------

    @contextmanager
    def listing(self):
        """While an initial list loads (common.runtime.informer's `listing`): a bound pod not
        counted yet is set aside under its node and every node's pods are counted at the end
        in one pass each (`NodeUsage.add_pods`: one sum of their vectors, one insert per
        priority into a shard's splay tree, one store of the node: one generation), instead
        of one update of its node per pod, which was a quarter of a shard's start over a
        million running pods. Whatever else happens meanwhile (a node or pod removed, a pod
        set again, assumed, refreshed, or the counted pods read) counts what was set aside
        first, so it sees exactly what counting them one by one would have left; `counted`
        finds a pod set aside too. What reads the node records directly (a snapshot) must
        wait for the end of the list."""
        if self._deferred is not None:  # an inner list: the outer one counts
            yield
            return
        self._deferred = {}
        try:
            yield
        finally:
            self._count_deferred()
            self._deferred = None

    def _count_deferred(self) -> None:
        """Count the pods set aside while listing, node by node."""
        if not self._deferred_keys:
            return
        deferred, self._deferred, self._deferred_keys = self._deferred, {}, {}
        pod_node = self.pod_node
        for node_name, pods in deferred.items():
            info = self.nodes.get(node_name)
            if info is None:
                info = self.node_type(node_name)
            info.add_pods(pods)
            self._counted_many(pods, node_name)
            for pod in pods:
                pod_node[pod.key] = node_name
                if pod.volumes:
                    self._claims(pod, 1)
            self._store(info)

    # --- nodes --------------------------------------------------------------------------------

    def set_node(self, node) -> None:
        self._count_deferred()
        info = self.nodes.get(node.name) or self.node_type(node.name)
        old, info.node = info.node, node
        self._store(info)
        self._node_changed(old, node)

    def remove_node(self, name: str) -> None:
        self._count_deferred()
        info = self.nodes.get(name)
        if info is None:
            return
        if info.node is not None:
            self._node_changed(info.node, None)
        if info.pods:
            info.node = None  # pods still point at it: keep a placeholder until they go
            self._store(info)
        else:
            self._drop(name)

    def live_nodes(self):
        self._count_deferred()
        for _, info in self.nodes.items():
            if info.node is not None:
                yield info

    # --- pods ---------------------------------------------------------------------------------

    def set_pod(self, pod) -> None:
        """A pod seen through the watch: bound pods are counted on their node."""
        if not pod.node_name or pod.phase in TERMINAL_PHASES:
            self.remove_pod(pod.key)
            return
        key = pod.key
        if self._deferred is not None and key not in self.pod_node and key not in self._deferred_keys:
            self._deferred.setdefault(pod.node_name, []).append(pod)  # counted at the list's end
            self._deferred_keys[key] = pod
            return
        self._count_deferred()
        if self.assumed.pop(pod.key, None) is not None and self._confirmed(pod):
            return  # the binding of our assumption arrived
        self._place(pod, pod.node_name)

    def refresh_pod(self, pod) -> bool:
        """Swap in a new version of a bound pod counted on the same node whose update changed
        only its status (common.model.changes.pod_status_only), without marking the node changed;
        False when it is not counted there as bound (the caller then sets it as usual)."""
        self._count_deferred()
        name = self.pod_node.get(pod.key)
        if name != pod.node_name or pod.key in self.assumed:
            return False
        info = self.nodes.get(name)
        if pod.key not in info.pods:
            return False
        info.replace_pod(pod)
        return True

    def _confirmed(self, pod) -> bool:
        """Swap in the bound version of a pod assumed on the same node, if it counts exactly
        as the assumed one did (see Pod.counts_like); False means it must be placed anew.

        Nothing a decision reads changes, so the node is not marked changed: in a shard that
        means no snapshot clone, no node-table row rewrite, and pending pods' scheduling
        contexts stay valid.
        """
        name = self.pod_node.get(pod.key)
        if name != pod.node_name:
            return False
        info = self.nodes.get(name)
        old = info.pods.get(pod.key)
        if old is None or not old.counts_like(pod):
            return False
        info.replace_pod(pod)
        return True

    def remove_pod(self, key: str) -> None:
        if key in self._deferred_keys:
            self._count_deferred()
        self.assumed.pop(key, None)
        name = self.pod_node.pop(key, None)
        if name is None:
            return
        info = self.nodes.get(name)
        removed = info.remove_pod(key)
        if removed is not None:
            self._uncounted(removed, name)
            self._claims(removed, -1)
        if info.node is None and not info.pods:
            self._drop(name)
        else:
            self._store(info)

    def _place(self, pod, node_name: str) -> None:
        self._count_deferred()
        old = self.pod_node.get(pod.key)
        if old is not None and old != node_name:
            self.remove_pod(pod.key)
        info = self.nodes.get(node_name)
        if info is None:
            info = self.node_type(node_name)
        previous = info.pods.get(pod.key)
        if previous is not None:
            self._uncounted(previous, node_name)
            self._claims(previous, -1)
        info.add_pod(pod)
        self._counted(pod, node_name)
        self._claims(pod, 1)
        self.pod_node[pod.key] = node_name
        self._store(info)

    def _claims(self, pod, delta: int) -> None:
        for v in pod.volumes:
            if v.claim is not None and not v.ephemeral:
                key = f"{pod.namespace}/{v.claim}"
                left = self.claims_in_use[key] + delta
                if left > 0:
                    self.claims_in_use[key] = left
                else:
                    self.claims_in_use.pop(key, None)

    def counted(self, key: str):
        """The pod counted under `key` (bound or assumed, or set aside while listing), or None."""
        deferred = self._deferred_keys.get(key)
        if deferred is not None:
            return deferred
        name = self.pod_node.get(key)
        return None if name is None else self.nodes.get(name).pods.get(key)

    def counted_pods(self):
        """Every pod counted on a node."""
        self._count_deferred()
        return (p for _, info in self.nodes.items() for p in info.pods.values())

    # --- assumptions --------------------------------------------------------------------------

    def assume(self, pod, node_name: str) -> None:
        """Count `pod` on `node_name` now, before its binding is committed."""
        self._place(pod, node_name)
        self.assumed.pop(pod.key, None)  # re-inserted last: the dict stays in deadline order
        self.assumed[pod.key] = self.clock() + self.assume_ttl

    def hold(self, key: str, seconds: float) -> None:
        """Keep an assumed pod counted for `seconds` from now, no longer (a binder's
        decision in doubt; a shard's pod waiting at Permit)."""
        if key in self.assumed:
            del self.assumed[key]  # re-inserted last; expire() may then see it a little late
            self.assumed[key] = self.clock() + seconds

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def forget(self, key: str) -> None:
        """The decision was refused: stop counting the pod."""
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
