"""The shard's side of scheduler extenders, as kube-scheduler's schedule_one.go and
preemption.go call them (the HTTP client is common/scheduling/extenders.py):

* filter (findNodesThatPassExtenders): after the Filter plugins, each interested extender in
  turn gets the nodes still feasible; its FailedNodes join the cycle's diagnosis as
  Unschedulable, its FailedAndUnresolvableNodes as UnschedulableAndUnresolvable (preemption
  skips them), with the extender's own message. An error fails the cycle unless the
  extender is ignorable, which is then skipped.
* prioritize (prioritizeNodes): each interested extender's 0..10 scores, times its weight,
  times MaxNodeScore / MaxExtenderPriority (10), are added to the plugins' weighted total. An
  extender's prioritize error only drops its scores, as in kube.
* preempt (callExtenders): DefaultPreemption's candidates and their victims go through each
  interested extender with preemptVerb, which keeps a subset and may change the victims.

An extender's verdict does not depend on the node generations the scheduling context
compares, so a cycle that consulted one filter is not context-safe.
"""
from __future__ import annotations

import logging

import numpy as np

from common.scheduling.extenders import MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE, ExtenderError
from .framework import UNRESOLVABLE, UNSCHEDULABLE, Status

log = logging.getLogger(__name__)


class ShardExtenders:
    """The configured extenders (common.scheduling.extenders.Extender clients), in order."""

    def __init__(self, clients=()):
        self.clients = list(clients)

    def __bool__(self) -> bool:
        return bool(self.clients)

    def consulted(self, pod) -> bool:
        """Whether an extender will filter or score the pod's nodes."""
        return any((ext.filters or ext.prioritizes) and ext.is_interested(pod.raw) for ext in self.clients)

    def filtering(self, pod) -> bool:
        """Whether an extender will filter the pod's nodes."""
        return any(ext.filters and ext.is_interested(pod.raw) for ext in self.clients)

    def filter(self, pod, rows: np.ndarray, table, diag) -> np.ndarray:
        """The rows that pass every interested extender's filter, in the last one's order;
        the others' reasons go into `diag`. Raises ExtenderError (not ignorable)."""
        for ext in self.clients:
            if not len(rows):
                break
            if not ext.filters or not ext.is_interested(pod.raw):
                continue
            try:
                passed, failed, unresolvable = ext.filter(pod.raw, [table.infos[r].node for r in rows])
            except ExtenderError as e:
                if not ext.ignorable:
                    raise
                log.info("skipping extender %s: it failed and is ignorable: %s", ext.name, e)
                continue
            for name, message in unresolvable.items():
                self._reject(table, diag, name, message, UNRESOLVABLE)
            for name, message in failed.items():
                if name not in unresolvable:
                    self._reject(table, diag, name, message, UNSCHEDULABLE)
            row_of = table.row_of
            rows = np.array([row_of[name] for name in passed], dtype=np.int64)
        return rows

    @staticmethod
    def _reject(table, diag, name: str, message: str, code: str) -> None:
        """A node an extender turned down: its reasons so far plus the extender's message; an
        unresolvable verdict makes the node's status unresolvable (kube's order of the two)."""
        row = table.row_of.get(name)
        if row is None:
            return
        prior = diag.node_failures.get(row)
        if prior is None:
            diag.node_failures[row] = (None, Status(code, message))
            return
        status = prior[1]
        if code != UNRESOLVABLE:
            code = status.code
        diag.node_failures[row] = (prior[0], Status(code, *status.reasons, message, plugin=status.plugin))

    def scores(self, pod, rows: np.ndarray, table) -> np.ndarray | None:
        """Each row's sum of the interested extenders' scaled scores; None when none scored."""
        total = None
        nodes = None
        for ext in self.clients:
            if not ext.prioritizes or not ext.is_interested(pod.raw):
                continue
            if nodes is None:
                nodes = [table.infos[r].node for r in rows]
            try:
                scores, weight = ext.prioritize(pod.raw, nodes)
            except ExtenderError as e:  # kube: prioritization errors are ignored
                log.info("extender %s's scores left out: %s", ext.name, e)
                continue
            scale = weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            add = np.fromiter((scores.get(n.name, 0) * scale for n in nodes), dtype=np.int64, count=len(nodes))
            total = add if total is None else total + add
        return total

    def preempt(self, pod, victims: dict, table) -> dict:
        """callExtenders: `victims` is node name -> (victim Pods, PDB violations); returns
        the candidates the interested preempting extenders keep, in the same form. Raises
        ExtenderError (not ignorable), naming a victim or node the extender got wrong."""
        for ext in self.clients:
            if not victims:
                break
            if not ext.supports_preemption or not ext.is_interested(pod.raw):
                continue
            try:
                kept = ext.process_preemption(pod.raw, {node: ([_victim_doc(v) for v in pods], n)
                                                        for node, (pods, n) in victims.items()})
                victims = self._victims(ext, kept, table)
            except ExtenderError as e:
                if not ext.ignorable:
                    raise
                log.info("skipping extender %s in preemption: it failed and is ignorable: %s", ext.name, e)
        return victims

    @staticmethod
    def _victims(ext, kept: dict, table) -> dict:
        """The extender's answer (node -> (victim UIDs, PDB violations)) as Pods on the nodes."""
        out = {}
        for node, (uids, n) in kept.items():
            row = table.row_of.get(node)
            if row is None:
                raise ExtenderError(f"extender {ext.name} preempt: node {node!r} is not a candidate node")
            if not uids:
                if ext.ignorable:
                    continue
                raise ExtenderError(f"expected at least one victim pod on node {node!r}")
            by_uid = {p.uid: p for p in table.infos[row].pods.values()}
            pods = []
            for uid in uids:
                if uid not in by_uid:
                    raise ExtenderError(f"extender: {ext.name} claims to preempt pod (UID: {uid}) on node: {node}, "
                                        "but the pod is not found on that node")
                pods.append(by_uid[uid])
            out[node] = (pods, n)
        return out


def _victim_doc(pod) -> dict:
    """A victim as a v1.Pod document: a bound pod keeps no document in the shard (see
    common.model.objects.Pod), so the fields that name it, its node and its priority."""
    meta = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid or ""}
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    return {"metadata": meta, "spec": {"nodeName": pod.node_name, "priority": pod.priority}}
