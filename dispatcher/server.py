"""The dispatcher: pending pods in, one Dispatch stream per live shard out.

It owns no placement logic and no state that matters: everything it knows comes from the
store (pending pods, the shards' leases), so it can be killed and restarted at any time.
What it does:

* follows pending pods for this scheduler (spec.schedulerName of a profile; optionally
  default-scheduler too), reading only the few fields it needs from the raw objects; a pod
  with scheduling gates waits here, undispatched, until an update removes its last gate;
* with sub-clusters (`subClusters.label`, `shardsPerPool`), sends a named pool's pods only to
  the pool's shards (common/scheduling/pools.py: `shardsPerPool` of the live shards, picked by
  the pool's name; a shard's death moves its pools to the next live ones), so that pools are
  scheduled by different processes and never conflict with each other;
* sends the pods that came within DISPATCH_EVERY_S of its last message together in the next
  one (a message costs far more than a pod in it);
* sends each pod to the live shard with the fewest pods in flight (random tie-break), and
  every pod of a pod group (label scheduling.x-k8s.io/pod-group) to the same shard, so the
  whole group is there to be placed as one unit; when that shard dies, the group's pending
  pods all go to one other shard;
* keeps each PodGroup's status current (dispatcher/podgroups.py);
* gives pods to a shard only once it has reported on its stream; re-dispatches at once the
  pods of a shard whose lease expired or whose stream broke (a broken stream is proof enough:
  a shard killed with -9 leaves its lease behind for shardTimeoutSeconds, and its address is
  dialled again only after a growing pause, getting pods once it reports); a shard that joins
  later (restarted) takes its share of the pods the others hold; re-dispatches pods a shard
  gives back, and pods still unbound `redispatchAfterSeconds` after they were sent (telling
  the old shard to drop them, so one pod is never scheduled by two shards on purpose; if it
  happens anyway the binder's atomic bind lets only one win).

Replicas elect a leader (common/runtime/leader_election.py, `leaderElection` in the config); only
the leader opens streams to the shards and dispatches. A standby keeps following pending
pods, so it is ready and takes over at once when it wins the lease. A new leader (a takeover,
a restart) first adopts what the shards already hold: each shard lists the pods it works on
in the first report on a new stream, and those pods stay where they are rather than being
dispatched a second time. A leader that loses its lease closes its streams and stands by.
"""
from __future__ import annotations

import logging
import queue
import random
import time
from collections import Counter

from common.runtime.component import Component, settle_heap
from common.runtime.intake import Intake, Kind
from common.runtime.leader_election import LeaderElector
from common.runtime.lease_lookups import LeaseLookups
from common.runtime.links import Doorbell, Inbox, StreamLink
from common.runtime.metrics import DispatcherMetrics, pending_age_gauge
from common.model.objects import TERMINAL_PHASES, raw_pod_key
from common.model.podgroup import raw_group_key
from common.scheduling.pools import CLUSTER_WIDE, raw_pool_of, shards_for
from common.runtime.identity import replica_identity
from common.runtime.wire import split
from common.store.base import ListSkip
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from .podgroups import GroupStatus

log = logging.getLogger(__name__)

MEMBERSHIP_EVERY_S = 0.5
#: ... while no shard is known: nothing can be dispatched until one joins (at start-up, the
#: first shard's join was up to MEMBERSHIP_EVERY_S on the way to the first binding); and while
#: fewer than `shards.count` have joined in the JOINING_GRACE_S after a leader starts (the
#: pods held back for them waited as long).
JOINING_EVERY_S = 0.1
#: How long a new leader waits for every shard's first report (what it holds) before it
#: dispatches; shards report every half second.
ADOPT_WAIT_S = 3.0
#: For this long after a dispatcher starts leading, while fewer shards than `shards.count`
#: have joined, each live shard gets at most its share of the pending pods (the rest waits
#: for the others). The first shard to join used to get a whole backlog in its first second
#: and the others, joining a moment later, next to nothing for the rest of the run.
JOINING_GRACE_S = 10.0
#: A shard whose stream broke while its lease lives (killed with -9: the lease lingers up to
#: shardTimeoutSeconds; restarted in place: the same address again) is dialled again this long
#: after the break, then twice as long after each attempt that ends without a report, up to
#: REDIAL_MAX_S: it gets no pods meanwhile, and a dead address is not dialled in a loop.
REDIAL_FIRST_S = 0.5
REDIAL_MAX_S = 4.0
#: The pods that come within this long of the dispatcher's last message go out together, in
#: the next one (one message per shard): each message of a Dispatch stream costs the sending
#: process about 100 us of CPU whatever it carries (gRPC's request thread woken, the message
#: serialised, its write awaited; the shard pays to receive it too), and at 1,000 pods/s the
#: dispatcher sent one or two pods a message, a tenth of a millisecond per pod on a machine
#: whose every core is busy. A pod after a quiet spell still goes at once; a full batch
#: (batchSize per live shard) and a revocation never wait.
DISPATCH_EVERY_S = 0.02
#: The longest a pass waits for events while something is on its way (pods waiting for a
#: shard to join, a new leader's adoption, revocations, pod groups' statuses, a shard to dial
#: again); with none of it, a pass waits until its next check is due (MEMBERSHIP_EVERY_S at
#: most), woken at once by the watch, a shard's report or a change of leadership.
BUSY_WAIT_S = 0.02
#: How often pods dispatched and still unbound are checked (`_overdue`).
OVERDUE_EVERY_S = 1.0


class Pending:
    __slots__ = ("key", "uid", "rv", "group", "shard", "sent_at", "avoid", "gated", "seen_at", "pool")

    def __init__(self, key: str, uid: str, rv: str, group: str | None, seen_at: float, gated: bool = False,
                 pool: str = CLUSTER_WIDE):
        self.key, self.uid, self.rv, self.group = key, uid, rv, group
        self.seen_at = seen_at  # for the age of the oldest pending pod (metrics)
        self.pool = pool  # its sub-cluster pool (common/scheduling/pools.py)
        self.gated = gated  # has scheduling gates: no shard may schedule it yet
        self.shard: str | None = None
        self.sent_at = 0.0
        self.avoid: str | None = None  # the shard that gave it back or sat on it too long


class ShardLink(StreamLink):
    """The Dispatch stream to one shard; `held` are the pods dispatched to it and not yet
    bound or revoked; its reports go to the dispatcher's inbox."""

    def __init__(self, id_: str, address: str, inbox, security):
        super().__init__("shard", f"shard {id_}", address,
                         lambda ch, requests: rpc.ShardStub(ch).Dispatch(requests), inbox, security)
        self.id = id_
        #: The pods the shard last said it works on, and when it said so.
        self.holding: set[str] = set()
        self.holding_at = 0.0
        #: Whether the first holding report came (its pods were adopted). Only then is the
        #: shard given pods: a stream that never connects (a dead process whose lease lingers)
        #: takes none with it.
        self.adopted = False

    def send(self, pods: list, revoked: list[str]) -> None:
        """In messages of at most wire.MESSAGE_BUDGET bytes."""
        pod_runs, revoked_runs = split(pods), split(revoked)
        for i in range(max(len(pod_runs), len(revoked_runs))):
            super().send(pb.PodBatch(pods=pod_runs[i] if i < len(pod_runs) else [],
                                     revoked=revoked_runs[i] if i < len(revoked_runs) else []))


class Redial:
    """A shard whose stream broke while its lease still names the same address: when to dial
    it again, and how long to wait after that attempt if it fails too."""
    __slots__ = ("address", "at", "delay")

    def __init__(self, address: str, now: float):
        self.address, self.at, self.delay = address, now + REDIAL_FIRST_S, REDIAL_FIRST_S

    def failed(self, now: float) -> None:
        self.delay = min(self.delay * 2, REDIAL_MAX_S)
        self.at = now + self.delay


class Dispatcher(Component):
    role = "dispatcher"
    section = "dispatcher"
    port_key, metrics_port_key = "port", "metrics_port"

    def __init__(self, cfg, store, index: int | str = 0, port: int | None = None, seed: int = 0,
                 metrics_port: int | None = None, tracer=None, link_factory=None, clock=time.monotonic):
        """`link_factory(id, address, inbox, security)` opens the stream to a shard (ShardLink;
        tests pass their own); `clock`, what its pacing, grace periods and ages are read from
        (tests pass one that a busy machine's pauses cannot move)."""
        self.clock = clock
        d = cfg.dispatcher
        self.metrics = DispatcherMetrics(cfg.leader_election.resource_name)
        super().__init__(cfg, store, int(index) if str(index).isdigit() else 0, port, metrics_port,
                         self.metrics.registry, tracer)
        self.id = str(index)
        self.cfg = cfg
        #: Created once the server listens; None = no election.
        self.elector: LeaderElector | None = None
        self.leading = False
        self.adopt_until = 0.0
        #: until when a live shard gets only its share while others have yet to join
        self.joining_until = 0.0
        self.held_back = False
        self.names = {p.scheduler_name for p in cfg.profiles}
        if d.also_default_scheduler:
            self.names.add("default-scheduler")
        self.batch_size = d.batch_size
        self.pool_label = cfg.sub_clusters.label
        self.shards_per_pool = cfg.sub_clusters.shards_per_pool
        self.pools: Counter = Counter()          # pool -> its pending pods here
        self.redispatch_after = d.redispatch_after_seconds
        self.rng = random.Random(seed)
        self.pending: dict[str, Pending] = {}
        pending_age_gauge(self.metrics.registry, self._oldest_pending_age)
        self.unsent: dict[str, None] = {}        # pending keys waiting for a shard, in order
        #: Pending keys dispatched to a shard, oldest dispatch first: the re-dispatch check
        #: stops at the first one that is not overdue.
        self.sent: dict[str, None] = {}
        self.revoke: dict[str, list[str]] = {}   # shard id -> keys it must drop
        self.shards: dict[str, ShardLink] = {}
        self.link_factory = link_factory or ShardLink
        #: shard id -> when to dial it again: its stream broke and its lease lingers (Redial)
        self.redial: dict[str, Redial] = {}
        self.groups: dict[str, str] = {}         # pod group -> shard id
        self.group_pending: Counter = Counter()  # pod group -> its pending pods here
        self.group_status = GroupStatus(store, self.errors)
        #: rung by the watch, the shards' reports and the elector: what a pass waits on
        self.doorbell = Doorbell()
        self.inbox = Inbox(self.doorbell.ring)
        #: the shards' leases looked at off the dispatching thread (`membership_forever`)
        self.shard_lookups = LeaseLookups(store, "shard", self.inbox, "leases", self.errors, self.counters,
                                          clock=self.clock)
        # Pending pods only: the initial list passes over bound pods unread (but for the
        # pod groups' members, which the PodGroups' status counts).
        self.intake = Intake([*self.group_status.kinds, Kind("Pod", handle=self._apply_pod, skip_listed=ListSkip(),
                                                                skip_event=self._passes_over)])
        self.apply = self.intake.apply
        self.informer = self.intake.informer(store, self._relist, linger_s=cfg.store.watch_linger_seconds)
        #: whether the watch rings the doorbell (kube://, memory; not Redis: see `_wait_for`)
        self.event_driven = self.informer.wake_with(self.doorbell)
        self._membership_at = 0.0
        #: whether `membership_forever` runs (then the pass never looks at the leases itself)
        self.looking_off_thread = False
        self._overdue_at = 0.0
        #: when the last Dispatch message went out (DISPATCH_EVERY_S)
        self.dispatched_at = float("-inf")
        self.health.add_ready("informer", lambda: None if self.informer.rv is not None else "pods not listed yet")
        self.health.add_ready("leader", self._leader_ready)
        self.health.add_ready("shards", lambda: None if not self.leading or any(
            link.alive for link in self.shards.values()) else "leading, but no shard is connected")

    def gauges(self) -> dict[str, int]:
        return {"leader": int(self.leading), "skipped_objects": self.informer.skipped}

    def queues(self) -> dict[str, int]:
        out = {"pending": len(self.pending), "unsent": len(self.unsent)}
        if self.pool_label:
            out.update({f"pool:{name or '*'}": n for name, n in self.pools.items() if n})
        for id_, link in self.shards.items():
            out[f"in_flight_shard_{id_}"] = len(link.held)
        return out

    def peers(self) -> list:
        """Shards and binders as their leases show them, for `shardsched top`."""
        return [pb.Peer(role=role, id=id_, address=address) for role in ("shard", "binder")
                for id_, address in sorted(self.store.list_leases(role).items())]

    # --- following pending pods -------------------------------------------------------------

    def _passes_over(self, type_: str, key: str, bound: bool, data: bytes) -> bool:
        """A pod event that cannot concern pending pods (the store's EventSkip, undecoded): a
        bound or deleted pod this dispatcher does not hold. Every pod brings it two or three
        of them (bound, then Running), and nearly all bound pods are none of its business.
        A new pod (ADDED) is always read: "bound" is judged on the document's bytes, where a
        label named nodeName would read as bound too."""
        return type_ != "ADDED" and (bound or type_ == "DELETED") and key not in self.pending

    def _apply_pod(self, type_: str, obj: dict) -> None:
        """A pod event (after the PodGroups' status saw it): pending pods of this scheduler
        are followed, read raw."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        key = raw_pod_key(obj)
        done = (type_ == "DELETED" or spec.get("nodeName") or meta.get("deletionTimestamp")
                or (obj.get("status") or {}).get("phase") in TERMINAL_PHASES
                or (spec.get("schedulerName") or "default-scheduler") not in self.names)
        known = self.pending.get(key)
        if done:
            if known is not None:
                self._forget(known, revoke=type_ == "DELETED" or not spec.get("nodeName"))
            return
        uid = meta.get("uid") or ""
        gated = bool(spec.get("schedulingGates"))
        if known is not None and known.uid == uid:
            if known.gated and not gated:  # its last gate was removed: schedule it now
                known.gated, known.rv = False, str(meta.get("resourceVersion") or "")
                known.seen_at = self.clock()  # it waits for a scheduler from now on
                self.unsent[key] = None
            return  # otherwise a status change of a pod we already handle
        if known is not None:
            self._forget(known, revoke=True)  # deleted and recreated under the same name
        group = raw_group_key(obj)
        pool = raw_pool_of(obj, self.pool_label)
        self.pending[key] = Pending(key, uid, str(meta.get("resourceVersion") or ""), group, self.clock(), gated,
                                    pool)
        self.pools[pool] += 1
        if not gated:
            self.unsent[key] = None
        if group is not None:
            self.group_pending[group] += 1

    def _oldest_pending_age(self) -> float:
        """Seconds since the oldest ungated pending pod was first seen (0 with none); runs in
        the metrics server's thread: list() copies the values in one step under the GIL."""
        now = self.clock()
        return max((now - p.seen_at for p in list(self.pending.values()) if not p.gated), default=0.0)

    def _forget(self, p: Pending, revoke: bool) -> None:
        del self.pending[p.key]
        self.pools[p.pool] -= 1
        if self.pools[p.pool] <= 0:
            del self.pools[p.pool]
        if p.group is not None:
            self.group_pending[p.group] -= 1
            if self.group_pending[p.group] <= 0:  # placed, or gone: the next one may go anywhere
                del self.group_pending[p.group]
                self.groups.pop(p.group, None)
        self.unsent.pop(p.key, None)
        self.sent.pop(p.key, None)
        link = self.shards.get(p.shard) if p.shard else None
        if link is not None:
            link.held.discard(p.key)
            if revoke:
                self.revoke.setdefault(link.id, []).append(p.key)

    def _relist(self) -> None:
        log.info("relisting pods: forgetting %d pending pods", len(self.pending))
        for p in list(self.pending.values()):
            self._forget(p, revoke=True)
        self.group_status.relist()

    def _unassign(self, p: Pending, avoid: str | None = None) -> None:
        """Back to the pods waiting for a shard (avoiding `avoid` next time, if given)."""
        self.sent.pop(p.key, None)
        p.shard = None
        if avoid is not None:
            p.avoid = avoid
        self.unsent[p.key] = None

    # --- shards -----------------------------------------------------------------------------

    def _joining(self, now: float) -> bool:
        return not self.shards or (len(self.shards) < self.cfg.shards.count and now < self.joining_until)

    def _membership(self) -> None:
        """The shards' leases looked at from the pass when due: only where no
        `membership_forever` thread looks for it (a step driven by hand)."""
        now = self.clock()
        if self.looking_off_thread or now - self._membership_at < (
                JOINING_EVERY_S if self._joining(now) else MEMBERSHIP_EVERY_S):
            return
        self._apply_leases(self.store.list_leases("shard"), now)

    def membership_forever(self) -> None:
        """The shards' leases looked up off the dispatching thread
        (common/runtime/lease_lookups.py), while this replica leads, as often as the pass
        would look: JOINING_EVERY_S while shards are joining, else MEMBERSHIP_EVERY_S."""
        self.looking_off_thread = True
        self.shard_lookups.forever(self.stop_event, lambda: JOINING_EVERY_S if self._joining(self.clock())
                                   else MEMBERSHIP_EVERY_S, active=lambda: self.leading)

    def _apply_leases(self, leases: dict[str, str], now: float) -> None:
        """The shards as their leases, looked up at `now`, show them: joined, gone, to be
        dialled again."""
        self._membership_at = now
        for id_, link in list(self.shards.items()):
            if leases.get(id_) != link.address:
                self._shard_down(link)
        for id_, r in list(self.redial.items()):
            if leases.get(id_) != r.address:  # expired, or another process holds it now
                del self.redial[id_]
        for id_, address in leases.items():
            if id_ in self.shards:
                continue
            r = self.redial.get(id_)
            if r is not None:
                if now < r.at:
                    continue
                r.failed(now)  # (the next attempt's time, should this one end without a report)
                log.info("dialling shard %s at %s again (its stream broke; its lease lives)", id_, address)
            else:
                log.info("shard %s joined at %s", id_, address)
                self.counters["shards_joined"] += 1
            self.shards[id_] = self.link_factory(id_, address, self.inbox, self.security)
            self.metrics.shard_up.labels(id_).set(1)
        for id_, link in self.shards.items():
            self.metrics.in_flight.labels(id_).set(len(link.held))

    def _shard_down(self, link: ShardLink) -> None:
        link.close()
        if self.shards.get(link.id) is link:
            del self.shards[link.id]
            if link.adopted:
                log.warning("shard %s lost; re-dispatching its %d pods", link.id, len(link.held))
                self.counters["shards_lost"] += 1
            else:  # (it was given nothing)
                log.info("stream to shard %s at %s ended before its first report", link.id, link.address)
            self.metrics.shard_up.labels(link.id).set(0)
            self.metrics.in_flight.labels(link.id).set(0)
        self.revoke.pop(link.id, None)
        for key in link.held:
            p = self.pending.get(key)
            if p is not None:
                self._unassign(p)
        for group, id_ in list(self.groups.items()):
            if id_ == link.id:
                del self.groups[group]

    def _take_back(self, link: ShardLink, keys) -> None:
        for key in keys:
            p = self.pending.get(key)
            if p is not None and p.shard == link.id:
                link.held.discard(key)
                self._unassign(p, avoid=link.id)
                self.counters["returned"] += 1

    def _drain(self) -> None:
        while True:
            try:
                what, link, payload = self.inbox.get_nowait()
            except queue.Empty:
                return
            if what == "leases":
                if self.leading:
                    self._apply_leases(*payload)
            elif payload is not None:
                self._take_back(link, payload.returned)
                if payload.holding_listed:
                    link.holding, link.holding_at = set(payload.holding), self.clock()
                    if not link.adopted and self.shards.get(link.id) is link:
                        self._adopt(link)
            elif self.shards.get(link.id) is link:
                self._broke(link)

    def _broke(self, link: ShardLink) -> None:
        """The shard's stream ended: proof enough that it is gone (its lease may outlive it
        by shardTimeoutSeconds). Its pods go to the live shards now, and it is dialled again
        only after a pause (Redial), getting pods once it reports on the new stream."""
        if link.id not in self.redial:
            self.redial[link.id] = Redial(link.address, self.clock())
        self._shard_down(link)

    # --- dispatching ------------------------------------------------------------------------

    def _overdue(self) -> None:
        """Once a second: pods unbound too long that their shard does not say it is working
        on (its last list of them is newer than the dispatch) go to another shard, or back to
        the same one when it is the only one. A pod its shard still holds (parked as
        unschedulable, say) stays where it is, its clock restarted."""
        now = self.clock()
        if now - self._overdue_at < OVERDUE_EVERY_S:
            return
        self._overdue_at = now
        deadline = now - self.redispatch_after
        overdue, held = [], []
        for key in self.sent:
            p = self.pending[key]
            if p.sent_at >= deadline:
                break
            link = self.shards.get(p.shard)
            if link is not None and link.holding_at > p.sent_at and key in link.holding:
                held.append(p)
            else:
                overdue.append(p)
        for p in held:
            p.sent_at = now
            del self.sent[p.key]
            self.sent[p.key] = None
        for p in overdue:
            old = self.shards.get(p.shard)
            if old is not None:
                old.held.discard(p.key)
                self.revoke.setdefault(old.id, []).append(p.key)
            self._unassign(p, avoid=p.shard)
        if overdue:
            self.counters["redispatched"] += len(overdue)
            log.info("re-dispatching %d pods unbound for %.0f s", len(overdue), self.redispatch_after)

    def _pick(self, p: Pending, live: list[ShardLink]) -> ShardLink:
        if p.group is not None:
            link = self.shards.get(self.groups.get(p.group, ""))
            if link is not None:
                return link
        if self.shards_per_pool and p.pool != CLUSTER_WIDE:
            ids = set(shards_for(p.pool, [link.id for link in live], self.shards_per_pool))
            live = [link for link in live if link.id in ids]
        others = [link for link in live if link.id != p.avoid]
        live = others or live
        least = min(len(link.held) for link in live)
        link = self.rng.choice([link for link in live if len(link.held) == least])
        if p.group is not None:
            self.groups[p.group] = link.id
        return link

    def _share(self, live: list[ShardLink]) -> int | None:
        """How many pods a live shard may hold: no limit (None), except shortly after this
        dispatcher began to lead while fewer than `shards.count` have joined; then its share
        of the pending pods."""
        expected = self.cfg.shards.count
        if len(live) >= expected or self.clock() >= self.joining_until:
            return None
        return -(-(len(self.unsent) + sum(len(link.held) for link in live)) // expected)

    def _dispatch(self) -> int:
        live = [link for link in self.shards.values() if link.alive and link.adopted]
        share = self._share(live)
        batches: dict[str, list] = {}
        sent = 0
        if live and self.unsent:
            now = self.clock()
            for key in list(self.unsent)[: self.batch_size * len(live)]:
                p = self.pending[key]
                link = self._pick(p, live)  # (a pool's or a group's shard as ever)
                if share is not None and len(link.held) >= share:
                    continue  # it waits for the shards yet to join
                del self.unsent[key]
                p.shard, p.sent_at = link.id, now
                self.sent[key] = None
                link.held.add(key)
                trace = (self.tracer.span("dispatch", "", p.seen_at, now, {"pod": key, "shard": link.id})
                         if self.tracer.enabled else "")
                batches.setdefault(link.id, []).append(pb.PendingPod(key=key, uid=p.uid, resource_version=p.rv,
                                                                     traceparent=trace))
                sent += 1
        for id_, pods in batches.items():
            self.metrics.dispatched.labels(id_).inc(len(pods))
        for id_ in set(batches) | set(self.revoke):
            link = self.shards.get(id_)
            if link is not None:
                link.send(batches.get(id_, []), self.revoke.get(id_, []))
        self.revoke = {}
        self.counters["dispatched"] += sent
        #: nothing could go out for want of shards (none reported yet, or each has its share
        #: while others are yet to join): the next step waits for events as an idle one
        self.held_back = bool(self.unsent) and not sent
        return sent

    def _due(self) -> bool:
        """Whether the pods waiting for a shard go now (DISPATCH_EVERY_S): the last message
        went out long enough ago, or there is a batch for every live shard, or a revocation
        to send."""
        return (bool(self.revoke) or self.clock() - self.dispatched_at >= DISPATCH_EVERY_S
                or len(self.unsent) >= self.batch_size * max(1, len(self.shards)))

    def _resting(self) -> float:
        """How long the pods waiting for a shard have yet to wait for their message (0: none
        waits, or they are due, or none can go for want of shards)."""
        if not (self.unsent and self.shards and not self.held_back) or self._due():
            return 0.0
        return max(0.0, self.dispatched_at + DISPATCH_EVERY_S - self.clock())

    def step(self) -> None:
        self._drain()
        leading = self.elector is None or self.elector.leading()
        if leading != self.leading:
            self._lead() if leading else self._stand_by()
        if self.leading:
            self._membership()
        rest = self._resting()
        if rest:
            # Pods wait for their message: what the watch brings meanwhile (more pods, the
            # bindings of those sent) waits with them and is read in one poll before it,
            # where a sync waiting for events polled every watch linger (5 ms) for nothing.
            self.stop_event.wait(rest)
        self.informer.sync(timeout=0.0 if rest or (self.unsent and self.shards and not self.held_back)
                           else self._wait_for())
        if self.leading:
            self._overdue()
            if not self._adopting() and self._due():
                revoking = bool(self.revoke)
                if self._dispatch() or revoking:  # a message went out
                    self.dispatched_at = self.clock()
            self.counters["podgroup_status_writes"] += self.group_status.step()  # the leader's job

    def _wait_for(self) -> float:
        """How long a pass with nothing to send may wait for events (the doorbell ends it at
        an event, a report or a change of leadership): BUSY_WAIT_S while something is on its
        way or where the watch cannot ring (Redis), else until the next check is due: the
        pods sent and unbound (OVERDUE_EVERY_S), and the shards' leases (MEMBERSHIP_EVERY_S)
        where the pass looks at them itself (with `membership_forever` running, its answers
        ring the doorbell when they change)."""
        if (not self.event_driven or self.unsent or self.revoke or self.adopt_until or self.redial
                or self.group_status.dirty):
            return BUSY_WAIT_S
        if not self.leading:
            return MEMBERSHIP_EVERY_S  # a standby: the elector rings when it leads
        now = self.clock()
        due = now + MEMBERSHIP_EVERY_S if self.looking_off_thread else (
            self._membership_at + (JOINING_EVERY_S if self._joining(now) else MEMBERSHIP_EVERY_S))
        if self.sent:
            due = min(due, self._overdue_at + OVERDUE_EVERY_S)
        return min(MEMBERSHIP_EVERY_S, max(0.0, due - now))

    # --- leadership -------------------------------------------------------------------------

    def _lead(self) -> None:
        log.info("dispatcher %s leads: adopting what the shards hold, then dispatching", self.id)
        self.leading = True
        self.adopt_until = self.clock() + ADOPT_WAIT_S
        self.joining_until = self.clock() + JOINING_GRACE_S
        self.counters["leader_transitions"] += 1
        self.metrics.leader.set(1)

    def _stand_by(self) -> None:
        log.warning("dispatcher %s no longer leads: closing its shard streams, standing by", self.id)
        self.leading = False
        for link in list(self.shards.values()):
            self._shard_down(link)
        self.metrics.leader.set(0)

    def _adopting(self) -> bool:
        """A new leader waits until every shard said what it holds (or ADOPT_WAIT_S passed)."""
        if not self.adopt_until:
            return False
        if self.clock() < self.adopt_until and (
                not self.shards or not all(link.adopted for link in self.shards.values())):
            return True
        self.adopt_until = 0.0
        return False

    def _adopt(self, link: ShardLink) -> None:
        """The shard's first report on this stream: the pending pods it works on (dispatched by
        a previous leader, or by this one before a restart of the stream) stay with it."""
        link.adopted = True
        if self.redial.pop(link.id, None) is not None:
            log.info("shard %s at %s is back", link.id, link.address)
        now, adopted = self.clock(), 0
        for key in link.holding:
            p = self.pending.get(key)
            if p is None or p.shard == link.id:
                continue
            if p.shard is not None:  # re-dispatched while its stream was down: one shard each
                self.revoke.setdefault(link.id, []).append(key)
                continue
            self.unsent.pop(key, None)
            p.shard, p.sent_at = link.id, now
            self.sent[key] = None
            link.held.add(key)
            adopted += 1
        if adopted:
            self.counters["adopted"] += adopted
            log.info("adopted %d pods shard %s already holds", adopted, link.id)
        if self.clock() >= self.joining_until and not self._adopting():
            self._rebalance(link)

    def _rebalance(self, joined: ShardLink) -> None:
        """A shard that joins a running dispatcher (restarted after a kill, or added) takes
        its share of the pods the others hold, not only of those still to come: while it was
        away the others took its pods and every new one. From each shard holding more than
        batchSize over the even share, the pods dispatched last (the least likely to be under
        way) are revoked and dispatched again; a pod group's or a pool's stay (their shards
        are chosen by other rules)."""
        live = [link for link in self.shards.values() if link.alive and link.adopted]
        fair = -(-sum(len(link.held) for link in live) // len(live))
        excess = {link.id: len(link.held) - fair for link in live
                  if link is not joined and len(link.held) - fair > self.batch_size}
        moved = []
        for key in reversed(self.sent):
            if not excess:
                break
            p = self.pending[key]
            if p.shard in excess and p.group is None and p.pool == CLUSTER_WIDE:
                moved.append(p)
                excess[p.shard] -= 1
                if not excess[p.shard]:
                    del excess[p.shard]
        for p in moved:
            old = self.shards[p.shard]
            old.held.discard(p.key)
            self.revoke.setdefault(old.id, []).append(p.key)
            self._unassign(p)
        if moved:
            self.counters["rebalanced"] += len(moved)
            log.info("shard %s joined: %d pods the others held go to it", joined.id, len(moved))

    def _leader_ready(self) -> str | None:
        """A leader is ready while its lease is renewed in time; a standby while it can reach
        the lease (it is ready to take over: it follows the pods already)."""
        if self.elector is None or self.leading or not self.elector.error:
            return None
        return f"cannot reach the leader lease: {self.elector.error}"

    def elect_forever(self) -> None:
        self.elector.run(self.stop_event, lambda: self.health.beat("election"), on_change=self.doorbell.ring)

    def run(self) -> None:
        self.informer.start()
        settle_heap()  # (what Component.start does first: the dispatcher's start differs)
        self.serve()
        if self.cfg.leader_election.leader_elect:
            # stable across restarts of this replica, unlike its address (common/runtime/identity.py)
            self.elector = LeaderElector.from_config(self.cfg, self.store, replica_identity(
                self.cfg.leader_election.identity, self.role, self.id))
            self.elector.step()
        self.renew_lease()
        self.start_background(self.membership_forever, *([self.elect_forever] if self.elector is not None else []))
        self.loop_forever(self.step)
        for link in list(self.shards.values()):
            link.close()
        if self.elector is not None:
            self.elector.release()
        self.shutdown()


def build(cfg, store, args) -> Dispatcher:
    """The component `python -m dispatcher` runs (see common.runtime.runner)."""
    return Dispatcher(cfg, store, args.id, port=args.port, seed=args.seed, metrics_port=args.metrics_port)
