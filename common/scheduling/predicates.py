"""Scheduling predicates that more than one role evaluates, as kube keeps them in
component-helpers: the shard's plugins filter with them, the binder re-checks decisions with
them, and `verify` judges the store's final state with them. One definition, so the three can
never disagree about what "fits" means.
"""
from __future__ import annotations

from ..model.resources import PODS, resource_name
from ..model.selectors import Taint, tolerated

# kube-scheduler's filter messages, shared by the shard's plugins and the binder's checks.
UNSCHEDULABLE_NODE = "node(s) were unschedulable"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_IN_USE = "node(s) didn't have free ports for the requested pod ports"
POD_AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


class IgnoredResources:
    """NodeResourcesFit's ignoredResources and ignoredResourceGroups (the part of a resource
    name before its '/'): resources the fit check leaves out. As in kube, only extended
    resources can be ignored (cpu, memory and kubernetes.io/ names are always checked)."""

    def __init__(self, names=(), groups=()):
        self.names = frozenset(names)
        self.groups = frozenset(groups)

    def __bool__(self) -> bool:
        return bool(self.names or self.groups)

    def column(self, col: int) -> bool:
        """Whether the resource in column `col` of a request vector is ignored."""
        name = resource_name(col)
        if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
            return False
        return name in self.names or name.split("/", 1)[0] in self.groups


#: TaintToleration's reason in kube-scheduler v1.37 (v1.33 named the taint: "node(s) had
#: untolerated taint {key: value}").
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"


def untolerated_taint_message(taint) -> str:
    """TaintToleration's reason for a node with `taint` untolerated: kube's, which names none."""
    return UNTOLERATED_TAINT


def insufficient(column: int) -> str:
    """NodeResourcesFit's reason for one resource of the request vector."""
    return "Too many pods" if column == PODS else f"Insufficient {resource_name(column)}"


#: A host port bound to this address conflicts with the same port on every address.
ANY_ADDRESS = "0.0.0.0"
#: Taint effects that keep a pod that does not tolerate them off a node.
HARD_EFFECTS = ("NoSchedule", "NoExecute")
#: What spec.unschedulable means to a pod: a NoSchedule taint it may tolerate.
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def host_ports_conflict(wanted, in_use) -> bool:
    """Whether any (ip, protocol, port) of `wanted` clashes with one of `in_use`: protocol
    and port match and either address is 0.0.0.0 or both are the same address."""
    for ip, proto, port in wanted:
        for used_ip, used_proto, used_port in in_use:
            if used_port == port and used_proto == proto and (
                    ip == used_ip or ip == ANY_ADDRESS or used_ip == ANY_ADDRESS):
                return True
    return False


def node_matches(pod, node) -> bool:
    """The pod's nodeSelector and required node affinity (terms ORed) admit `node`."""
    labels = node.labels
    for k, v in pod.node_selector.items():
        if labels.get(k) != v:
            return False
    terms = pod.required_node_terms
    if terms is None:
        return True
    return any(t.matches(labels, node.name) for t in terms)


def untolerated_taint(taints, tolerations, effects=HARD_EFFECTS):
    """The first of `taints` with one of `effects` that `tolerations` do not tolerate, or None."""
    for taint in taints:
        if taint.effect in effects and not tolerated(taint, tolerations):
            return taint
    return None


def unschedulable_blocks(pod, node) -> bool:
    """The node is cordoned (spec.unschedulable) and the pod does not tolerate that."""
    return bool(node.unschedulable) and not tolerated(UNSCHEDULABLE_TAINT, pod.tolerations)
