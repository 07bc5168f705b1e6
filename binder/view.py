"""The binder's view of its nodes and the conflict checks every decision must pass.

Shards decide against snapshots that may be a few events old and race with each other, so
the binder re-checks each decision against the freshest state it has: the store's watch
plus the commits it has made itself and not yet seen come back (kept as assumptions in
common.accounting's PodAccounting, exactly as a shard keeps its own, but without the
shard's splay trees and generations, which the binder never reads). A decision that passes is counted at once, so
two decisions in one batch cannot both take the last slot of a node.
"""
from __future__ import annotations

from common.accounting import PodAccounting
from common.disruption import Budgets, refusal
from common.errors import ObjectError
from common.objects import parse_object, raw_pod_key
from common.partition import binder_for
from common.predicates import host_ports_conflict
from common.resources import fits, resource_name, vadd


class BinderView:
    def __init__(self, index: int = 0, binders: int = 1, assume_ttl: float = 30.0):
        self.index = index
        self.binders = binders
        self.cache = PodAccounting(assume_ttl)
        self.pending: dict[str, str] = {}   # pending pod key -> uid, as the watch shows it
        self.claimed: set[str] = set()      # victims of decisions in flight
        self.pdbs: dict = {}                # PodDisruptionBudgets by key
        self.errors: dict[str, ObjectError] = {}

    # --- following the store --------------------------------------------------------------

    def apply(self, type_: str, kind: str, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        if kind == "Node":
            if type_ == "DELETED":
                self.cache.remove_node(meta.get("name"))
                return
            node = self._parse(obj)
            if node is not None:
                self.cache.set_node(node)
            return
        if kind == "PodDisruptionBudget":
            self._apply_pdb(type_, obj)
            return
        if kind != "Pod":
            return
        key = raw_pod_key(obj)
        if type_ == "DELETED":
            self.pending.pop(key, None)
            self.cache.remove_pod(key)
            return
        node_name = (obj.get("spec") or {}).get("nodeName")
        if not node_name:
            self.pending[key] = meta.get("uid") or ""  # all a check needs of a pending pod
            return
        self.pending.pop(key, None)
        pod = self._own_binding(key, meta.get("uid"), node_name, obj) or self._parse(obj)
        if pod is not None:
            self.cache.set_pod(pod)

    def _apply_pdb(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)  # a PDB's key has the same namespace/name form
        pdb = None if type_ == "DELETED" else self._parse(obj)
        if pdb is None:
            self.pdbs.pop(key, None)
        else:
            self.pdbs[key] = pdb

    def _budget_refusal(self, info, victims) -> str | None:
        """Evicting `victims` (with the victims already claimed in flight) breaks a budget?"""
        budgets = Budgets(self.pdbs.values(), self.cache.counted_pods)
        for key in self.claimed:
            pod = self.cache.counted(key)
            if pod is not None:
                budgets.violates(pod)
        return refusal([info.pods[key] for key, _ in victims], budgets)

    def _own_binding(self, key: str, uid, node_name: str, obj: dict):
        """The pod of a binding this binder committed, reused rather than parsed again."""
        if not self.cache.is_assumed(key) or self.cache.pod_node.get(key) != node_name:
            return None
        pod = self.cache.nodes[node_name].pods.get(key)
        return pod.bound_copy(obj) if pod is not None and pod.uid == uid else None

    def _parse(self, obj: dict):
        try:
            return parse_object(obj)
        except ObjectError as e:
            self.errors[e.obj] = e
            return None

    def reset(self) -> None:
        """Before a relist: forget everything the watch told us (assumptions included)."""
        self.__init__(self.index, self.binders, self.cache.assume_ttl)

    # --- checking a decision --------------------------------------------------------------

    def check(self, pod, node_name: str, victims: list[tuple[str, str]]) -> str | None:
        """Why the decision cannot be committed now, or None when it can."""
        if binder_for(node_name, self.binders) != self.index:
            return f"WrongBinder: node {node_name} belongs to binder {binder_for(node_name, self.binders)}"
        info = self.cache.nodes.get(node_name)
        if info is None or info.node is None:
            return f"NodeNotFound: {node_name}"
        if info.node.unschedulable:
            return f"NodeUnschedulable: {node_name}"
        if pod.key in self.cache.pod_node:
            return f"AlreadyBound: {pod.key} is on {self.cache.pod_node[pod.key]}"
        seen_uid = self.pending.get(pod.key)
        if seen_uid is not None and pod.uid and seen_uid != pod.uid:
            return f"UIDMismatch: {pod.key} was recreated"
        freed = None
        for key, uid in victims:
            victim = info.pods.get(key)
            if victim is None or (uid and victim.uid != uid):
                return f"VictimGone: {key}"
            if key in self.claimed:
                return f"VictimClaimed: {key}"
            freed = victim.requests if freed is None else vadd(freed, victim.requests)
        if victims and self.pdbs:
            why = self._budget_refusal(info, victims)
            if why is not None:
                return why
        free = info.free if freed is None else vadd(info.free, freed)
        if not fits(pod.requests, free):
            short = [resource_name(i) for i, (r, f) in enumerate(zip(pod.requests, free)) if r > f]
            return f"Insufficient {', '.join(short)} on {node_name}"
        if pod.host_ports:
            in_use = dict(info.host_ports)
            for key, _ in victims:
                for port in info.pods[key].host_ports:
                    in_use[port] -= 1
            if host_ports_conflict(pod.host_ports, {p: n for p, n in in_use.items() if n > 0}):
                return f"HostPortConflict on {node_name}"
        return None

    def reserve(self, pod, node_name: str, victims: list[tuple[str, str]]) -> None:
        """Count a passed decision until its outcome is known (see `release`)."""
        self.cache.assume(pod, node_name)
        self.claimed.update(key for key, _ in victims)

    def release(self, pod_key: str, victims: list[tuple[str, str]], bound: bool) -> None:
        """The commit finished: keep the pod counted if it was bound, else forget it."""
        self.claimed.difference_update(key for key, _ in victims)
        if bound:
            for key, _ in victims:
                self.cache.remove_pod(key)
        else:
            self.cache.forget(pod_key)

