"""Decisions whose volume bindings are written, waiting for their claims to be bound.

kube-scheduler's VolumeBinding PreBind polls until the claims are bound, holding a binding
goroutine for up to bindTimeoutSeconds. Here the wait holds nothing: the commit pipeline
hands such decisions over (`add`) and goes on; after each pass of the binder's watch,
`check` asks of each whether its claims are bound as the watch shows them
(common.scheduling.volume_binding.bindings_done). Bound ones go back to the pipeline to be bound
(Commits.resume); those that cannot be bound any more (a provisioner gave up, the partition
was lost) or ran out of time are refused (Commits.finish), and the shard retries them. The reservation holds the node's room
meanwhile, as kube's assumed pod does.
"""
from __future__ import annotations

import threading
import time

from common.config import Config
from common.config.plugin_names import VOLUME_BINDING
from common.scheduling.volume_binding import TIMED_OUT, bind_timeout, bindings_done


class VolumeWaits:
    def __init__(self, cfg: Config, holds, clock=time.monotonic):
        """`holds(partition)` says whether this binder may still commit for a partition."""
        self.cfg = cfg
        self.holds = holds
        self.clock = clock
        self._lock = threading.Lock()
        self._waiting: list = []

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def add(self, items: list) -> None:
        """Decisions whose bindings `write_bindings` wrote (the commit workers call this)."""
        now = self.clock()
        for it in items:
            it.deadline = now + bind_timeout(self.cfg, it.reservation.pod.scheduler_name)
        with self._lock:
            self._waiting.extend(items)

    def check(self, view) -> tuple[list, list]:
        """What can be decided from `view` (the binder's, read under its lock): the decisions
        to bind now, and [(decision, why)] to refuse; the rest keep waiting."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        if not waiting:
            return [], []
        now = self.clock()
        ready, refused, still = [], [], []
        claim_of, volume_of = view.volumes.claims.get, view.volumes.volumes.get  # as the API has them
        for it in waiting:
            r = it.reservation
            info = view.nodes.get(r.node)
            if not self.holds(r.partition):
                refused.append((it, f"NotPartitionHolder: partition {r.partition} was lost while "
                                    f"{r.pod.key}'s volumes were being bound"))
                continue
            if info is None or info.node is None:
                refused.append((it, f"NodeNotFound: node {r.node} not found"))
                continue
            done, why = bindings_done(info.node, r.volumes, it.written, claim_of, volume_of)
            if done:
                ready.append(it)
            elif why is not None:
                refused.append((it, f"{VOLUME_BINDING}: {why}"))
            elif now >= it.deadline:
                refused.append((it, f"{VOLUME_BINDING}: {TIMED_OUT}"))
            else:
                still.append(it)
        with self._lock:
            self._waiting.extend(still)
        return ready, refused
