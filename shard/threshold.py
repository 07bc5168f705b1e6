"""How many feasible nodes a scheduling cycle looks for before it stops filtering.

Modes (config `threshold.mode`):

* ``all``: every node is filtered and scored.
* ``kube``: kube-scheduler's percentageOfNodesToScore rule: below 100 nodes, all of them;
  otherwise ``max(5, 50 - nodes/125)`` percent of the nodes, and never fewer than 100.
* ``percentage``: ``threshold.percentage`` percent of the nodes (0 falls back to the kube rule),
  never fewer than 100 (or all nodes when there are fewer).
* ``adaptive`` (default): a target that starts at ``maxFeasibleNodes`` and shrinks

  - with the share of nodes rejected so far in this cycle, ``r = rejected / examined``:
    multiplied by ``(1 - r) ** rejectionDecay``: when most nodes are infeasible, every extra
    feasible node costs many filter evaluations, so fewer are worth finding;
  - with the active queue length ``q``: divided by ``1 + queueDecay * log10(1 + q)``: a long
    queue asks for throughput over placement quality;

  and never below ``minFeasibleNodes``. With ``growth: true`` (quality-first profiles) both
  factors are inverted: the target grows with rejections and queue length instead.

The result is always capped at the number of nodes.
"""
from __future__ import annotations

import math

from common.config import ThresholdConfig

MIN_FEASIBLE_NODES = 100


def kube_rule(nodes: int, percentage: int = 0) -> int:
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    if not percentage:
        percentage = max(5, 50 - nodes // 125)
    return max(MIN_FEASIBLE_NODES, nodes * percentage // 100)


class Threshold:
    """Feasible-node target for one cycle; `target()` may be asked again as the scan goes."""

    def __init__(self, cfg: ThresholdConfig):
        self.mode = cfg.mode
        self.percentage = cfg.percentage
        self.min_nodes = cfg.min_feasible_nodes
        self.max_nodes = cfg.max_feasible_nodes
        self.rejection_decay = cfg.rejection_decay
        self.queue_decay = cfg.queue_decay
        self.growth = cfg.growth
        self.last = 0  # the most recent target, exported as a metric

    def target(self, nodes: int, examined: int = 0, rejected: int = 0, queued: int = 0) -> int:
        if self.mode == "all":
            t = nodes
        elif self.mode == "kube":
            t = kube_rule(nodes)
        elif self.mode == "percentage":
            t = kube_rule(nodes, self.percentage)
        else:
            t = self._adaptive(nodes, examined, rejected, queued)
        self.last = min(t, nodes)
        return self.last

    def _adaptive(self, nodes: int, examined: int, rejected: int, queued: int) -> int:
        r = rejected / examined if examined else 0.0
        queue_factor = 1.0 + self.queue_decay * math.log10(1 + queued)
        if self.growth:
            t = self.max_nodes * (1 + r) ** self.rejection_decay * queue_factor
        else:
            t = self.max_nodes * (1 - r) ** self.rejection_decay / queue_factor
        return max(self.min_nodes, int(t))
