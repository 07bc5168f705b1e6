"""The binder process: checks shards' decisions against its own view and commits them.

Each shard holds one Decide stream. A batch of decisions is checked under the view's lock
(so decisions of different shards are serialised per binder and cannot overcommit a node),
then committed with one pipelined store call for the evictions and one for the bindings,
and answered with one batch of outcomes. The watch thread keeps the view current.
"""
from __future__ import annotations

import logging
import threading

import orjson

from common.component import Component
from common.disruption import VICTIMS_TERMINATING, eviction_failures
from common.errors import ObjectError
from common.informer import Informer
from common.metrics import BinderMetrics
from common.objects import parse_object
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from .view import BinderView

log = logging.getLogger(__name__)


class BinderServer(Component, rpc.BinderServicer):
    role = "binder"
    section = "binders"

    def __init__(self, cfg: dict, store, index: int, port: int | None = None,
                 metrics_port: int | None = None):
        binders = cfg["binders"]
        self.metrics = BinderMetrics(str(index))
        super().__init__(cfg, store, index, port, metrics_port, self.metrics.registry)
        self.view = BinderView(index, binders["count"], cfg["shards"]["assumeTtlSeconds"])
        self.lock = threading.Lock()
        self.informer = Informer(store, ("Node", "PodDisruptionBudget", "Pod"), self._apply, self._relist)

    def _apply(self, type_: str, kind: str, obj: dict) -> None:
        with self.lock:
            self.view.apply(type_, kind, obj)

    def _relist(self) -> None:
        with self.lock:
            self.view.reset()

    def register(self, server) -> None:
        rpc.add_BinderServicer_to_server(self, server)

    def queues(self) -> dict[str, int]:
        return {"assumed": len(self.view.cache.assumed)}

    # --- the watch --------------------------------------------------------------------------

    def watch_step(self) -> None:
        self.informer.sync(timeout=0.2)
        with self.lock:
            self.view.cache.expire()

    def watch_forever(self) -> None:
        self.loop_forever(self.watch_step)

    # --- decisions --------------------------------------------------------------------------

    def Decide(self, request_iterator, context):
        log.info("decision stream opened from %s", context.peer())
        for batch in request_iterator:
            outcomes = self.decide(batch)
            for o in outcomes:
                reason = "Bound" if o.bound else o.reason.split(":", 1)[0].split(" ", 1)[0]
                self.metrics.outcomes.labels(reason, batch.shard, self.id).inc()
            yield pb.OutcomeBatch(outcomes=outcomes)

    def decide(self, batch) -> list:
        """Check, commit and answer one batch of decisions."""
        outcomes = []
        passed = []  # (decision, pod, victims)
        with self.lock:
            for d in batch.decisions:
                self.counters["decisions"] += 1
                victims = [(v.key, v.uid) for v in d.victims]
                try:
                    pod = parse_object(orjson.loads(d.pod_json))
                except (ObjectError, orjson.JSONDecodeError) as e:
                    outcomes.append(self._rejected(d, f"InvalidPod: {e}"))
                    continue
                reason = self.view.check(pod, d.node, victims)
                if reason is not None:
                    outcomes.append(self._rejected(d, reason))
                    continue
                self.view.reserve(pod, d.node, victims)
                passed.append((d, pod, victims))
        if passed:
            outcomes += self._commit(passed)
        return outcomes

    def _commit(self, passed) -> list:
        evictions = [v for _, _, victims in passed for v in victims]
        evicted = dict(zip((k for k, _ in evictions), self.store.evict_many(evictions))) if evictions else {}
        to_bind, outcomes, released = [], [], []
        for d, pod, victims in passed:
            refused = eviction_failures((k for k, _ in victims), (evicted[k] for k, _ in victims))
            if refused is None and (terminating := self._still_there(victims)):
                refused = f"{VICTIMS_TERMINATING}: {', '.join(terminating)}"
            if refused is not None:
                released.append((pod.key, victims, False))
                outcomes.append(self._rejected(d, refused))
            else:
                to_bind.append((d, pod, victims))
        results = self.store.bind_many([(pod.key, d.node, pod.uid or None) for d, pod, _ in to_bind]) \
            if to_bind else []
        for (d, pod, victims), reason in zip(to_bind, results):
            released.append((pod.key, victims, reason is None))
            if reason is None:
                self.counters["bound"] += 1
                outcomes.append(pb.Outcome(pod_key=d.pod_key, node=d.node, bound=True,
                                           evicted=[k for k, _ in victims]))
            else:
                outcomes.append(self._rejected(d, reason))
        with self.lock:
            for key, victims, bound in released:
                self.view.release(key, victims, bound)
        return outcomes

    def _still_there(self, victims) -> list[str]:
        """Victims the store still holds after their eviction: on a real cluster an evicted
        pod terminates gracefully, and the preemptor is bound only once they are gone (its
        shard nominates it to the node meanwhile and retries)."""
        return [key for key, uid in victims
                if (obj := self.store.get("Pod", key)) is not None
                and (not uid or (obj.get("metadata") or {}).get("uid") == uid)]

    def _rejected(self, d, reason: str):
        log.debug("decision for %s on %s rejected: %s", d.pod_key, d.node, reason)
        self.counters["rejected"] += 1
        self.counters["rejected_" + reason.split(":", 1)[0].split(" ", 1)[0]] += 1
        return pb.Outcome(pod_key=d.pod_key, node=d.node, bound=False, reason=reason)

    # --- running ----------------------------------------------------------------------------

    def run(self) -> None:
        """List, serve, and follow the store until stopped."""
        self.informer.start()
        self.start(self.watch_forever)
        self.stop_event.wait()
        self.shutdown()


def build(cfg: dict, store, args) -> BinderServer:
    """The component `python -m binder` runs (see common.runner)."""
    return BinderServer(cfg, store, int(args.id), port=args.port, metrics_port=args.metrics_port)
