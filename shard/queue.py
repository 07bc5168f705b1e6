"""The scheduling queue: activeQ, backoffQ and the unschedulable pool.

* activeQ: a heap ordered by the profile's QueueSort plugin (priority, then arrival; a pod
  that failed an attempt counts as arriving again when it is requeued, as in kube-scheduler).
* backoffQ: pods that failed and wait out an exponential backoff (initial * 2^(attempts-1),
  capped at the maximum) before they go back to activeQ. A sorted list by expiry: a pod
  deleted or updated while it waits leaves it at once, and the next expiry is always exact.
* unschedulable pool: pods no node could take, each with the plugins that rejected it. They
  move back (through backoffQ if their backoff has not expired) when a cluster event may help
  them (`wake` with a hint from shard/queueing_hints.py), and after `unschedulable_max`
  seconds at the latest. The pool is a dict in arrival order, so the pods due for that
  periodic retry are found at its front.

Sub-clusters (config `subClusters.label`): activeQ is one heap per pool
(common/scheduling/pools.py; `pool_of` names a pod's), and `pop` serves the pools in turn:
each pop takes the next pod of the next pool, in round-robin order, that has one ready, and
QueueSort orders pods within a pool only. A pool whose pods cannot fit (a saturated GPU pool)
thus takes at most its share of the cycles while other pools have pods ready, and its failed
pods park in the shared backoffQ and unschedulable pool like any other (those only hold pods
until they are due; a due pod goes back to its own pool's heap).
"""
from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter

from sortedcontainers import SortedKeyList

from common.config.plugin_names import (NODE_AFFINITY, NODE_NAME, NODE_PORTS, NODE_RESOURCES_FIT,
                                        NODE_UNSCHEDULABLE, TAINT_TOLERATION)
from .queueing_hints import registered


_NOT_SCHEDULING = ("resourceVersion", "generation", "managedFields", "finalizers")


def _changed(old, new) -> bool:
    """Whether an update changed what scheduling looks at (kube's isPodUpdated: anything but
    status, resourceVersion, generation, managedFields and finalizers)."""
    a, b = getattr(old, "raw", None), getattr(new, "raw", None)
    if not isinstance(a, dict) or not isinstance(b, dict):
        return True

    def view(d):
        meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        return d.get("spec"), {k: v for k, v in meta.items() if k not in _NOT_SCHEDULING}

    return view(a) != view(b)


#: A queueing hint's cluster event (shard/queueing_hints.py's names) -> kube's event label.
EVENT_LABELS = {"node_added": "NodeAdd", "node_updated": "NodeUpdate", "node_deleted": "NodeDelete",
                "pod_left": "AssignedPodDelete", "pod_arrived": "AssignedPodAdd",
                "preemption_changed": "PodDisruptionBudgetChange"}


#: Plugins whose verdict on a node depends on that node alone (the README lists them): a parked pod of a named pool
#: turned down only by these can gain nothing from an event on a node of another pool (its
#: own requirements keep it off those nodes).
NODE_LOCAL = frozenset((NODE_UNSCHEDULABLE, NODE_NAME, TAINT_TOLERATION, NODE_AFFINITY, NODE_PORTS,
                        NODE_RESOURCES_FIT))


def _node_local(entry: "QueuedPod") -> bool:
    """Whether only events on its own pool's nodes can help this parked pod: it has no
    constraints across nodes (affinity, spread), no claims, and only node-local plugins
    turned it down (none known: any event may help)."""
    pod = entry.pod
    return (bool(entry.rejectors) and entry.rejectors <= NODE_LOCAL
            and not pod.has_cross_node_constraints() and not pod.volumes)


class QueuedPod:
    """A pod in the queue with its scheduling history (attempts, backoff, last generation)."""

    __slots__ = ("pod", "queued_at", "initial_at", "attempts", "backoff_until", "unschedulable_since",
                 "last_generation", "rejectors", "seq", "_less", "pool")

    def __init__(self, pod, now: float, less, pool: str = ""):
        self.pod = pod
        self.queued_at = now
        self.initial_at = now  # first queued: the start of kube's scheduling SLI
        self.attempts = 0
        self.backoff_until = 0.0
        self.unschedulable_since = 0.0
        self.last_generation = 0   # node-store generation of the last failed attempt
        self.rejectors: frozenset = frozenset()  # plugins that turned it down last time
        self.seq = 0
        self._less = less
        self.pool = pool  # its sub-cluster pool (activeQ heap)

    def __lt__(self, other: "QueuedPod") -> bool:
        if self._less(self, other):
            return True
        if self._less(other, self):
            return False
        return self.seq < other.seq


class SchedulingQueue:
    def __init__(self, less, initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 unschedulable_max: float = 300.0, clock=time.monotonic, pool_of=None):
        """`pool_of(pod)` names a pod's pool (default: one pool for all)."""
        self.less = less
        self.pool_of = pool_of or (lambda pod: "")
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.unschedulable_max = unschedulable_max
        self.clock = clock
        #: activeQ: one heap per pool, served in turn from `_turn` on
        self._active: dict[str, list[QueuedPod]] = {}
        self._turn = 0
        self._pools: Counter = Counter()     # pool -> its pods queued anywhere here
        self._backoff = SortedKeyList(key=lambda e: (e.backoff_until, e.seq))
        self._unschedulable: dict[str, QueuedPod] = {}
        #: the same by pool, node-local ones only (`_node_local`); the others under None
        self._parked: dict[str | None, dict[str, QueuedPod]] = {}
        self._where: dict[str, str] = {}      # pod key -> "active" | "backoff" | "unschedulable"
        #: the parked pods' rejector sets, with how many pods have each (few distinct ones)
        self._rejector_sets: Counter = Counter()
        self._entries: dict[str, QueuedPod] = {}
        self._seq = itertools.count()
        #: Called (queue, event) for each pod put in a queue, with kube's queue names and
        #: event labels (scheduler_queue_incoming_pods_total); None: nobody counts.
        self.on_incoming = None

    def _incoming(self, queue: str, event: str, n: int = 1) -> None:
        if self.on_incoming is not None and n:
            self.on_incoming(queue, event, n)

    # --- sizes --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def has_active(self) -> bool:
        """Whether activeQ may hold a pod (stale heap entries count: it is only a hint)."""
        return any(self._active.values())

    def next_backoff(self) -> float | None:
        """When the first pod in backoffQ is due (the clock's time), None when none waits."""
        return self._backoff[0].backoff_until if self._backoff else None

    def lengths(self) -> dict[str, int]:
        """Pods in activeQ, backoffQ and the unschedulable pool; with pools, also each
        named pool's queued pods (`pool:NAME`; the cluster-wide pool's `pool:*`)."""
        counts = {"active": 0, "backoff": 0, "unschedulable": 0}
        for where in self._where.values():
            counts[where] += 1
        if len(self._pools) > 1 or "" not in self._pools:
            counts.update({f"pool:{name or '*'}": n for name, n in self._pools.items()})
        return counts

    # --- adding and removing ------------------------------------------------------------------

    def add(self, pod) -> None:
        """A new pending pod, or a newer version of one already queued."""
        entry = self._entries.get(pod.key)
        if entry is not None:
            changed = _changed(entry.pod, pod)
            if changed:
                # A changed pod (tolerations added, say) may fit nodes that did not change:
                # the scheduling context must not skip them on its next attempt.
                entry.last_generation = 0
            # Parked, it is worth a new try only if what scheduling reads changed: not after
            # a status update (the PodScheduled condition this shard writes after a failure).
            parked = self._where.get(pod.key) == "unschedulable"
            if parked and not changed:
                entry.pod = pod
                return
            if parked:
                self._unpark(pod.key)  # (under its old pool)
            entry.pod = pod
            self._count(entry, -1)
            entry.pool = self.pool_of(pod)
            self._count(entry, 1)
            if parked:
                self._push_active(entry)
                self._incoming("active", "UnscheduledPodUpdate")
            return
        entry = QueuedPod(pod, self.clock(), self.less, self.pool_of(pod))
        self._entries[pod.key] = entry
        self._count(entry, 1)
        self._push_active(entry)
        self._incoming("active", "PodAdd")

    def _count(self, entry: QueuedPod, delta: int) -> None:
        self._pools[entry.pool] += delta
        if self._pools[entry.pool] <= 0:
            del self._pools[entry.pool]

    def delete(self, key: str) -> None:
        """Forget a pod (bound elsewhere, deleted). activeQ heap entries are dropped lazily
        on pop; the other two places let go of it at once."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._count(entry, -1)
        where = self._where.pop(key, None)
        if where == "unschedulable":
            self._unpark(key)
        elif where == "backoff":
            self._backoff.remove(entry)

    def _push_backoff(self, entry: QueuedPod) -> None:
        entry.seq = next(self._seq)
        self._where[entry.pod.key] = "backoff"
        self._backoff.add(entry)

    def _push_active(self, entry: QueuedPod) -> None:
        entry.seq = next(self._seq)
        self._where[entry.pod.key] = "active"
        heap = self._active.get(entry.pool)
        if heap is None:
            heap = self._active[entry.pool] = []
        heapq.heappush(heap, entry)

    def pop(self) -> QueuedPod | None:
        """The next pod to schedule, or None when activeQ is empty (after moving due pods):
        the first of the next pool in turn that has one (see the module's docstring)."""
        self.flush()
        pools = list(self._active)
        for i in range(len(pools)):
            at = (self._turn + i) % len(pools)
            entry = self._pop_from(self._active[pools[at]])
            if entry is not None:
                self._turn = at + 1
                return entry
        for name in [n for n, heap in self._active.items() if not heap]:
            del self._active[name]  # pools without pods ready leave the rotation
        return None

    def _pop_from(self, heap: list) -> QueuedPod | None:
        while heap:
            entry = heapq.heappop(heap)
            key = entry.pod.key
            if self._entries.get(key) is entry and self._where.get(key) == "active":
                del self._where[key]
                entry.attempts += 1
                return entry
        return None

    # --- after an attempt ---------------------------------------------------------------------

    def _backoff_for(self, attempts: int) -> float:
        # The exponent is capped: a pod retried for days must not overflow a float.
        return min(self.initial_backoff * (2 ** min(max(attempts - 1, 0), 62)), self.max_backoff)

    def requeue_backoff(self, entry: QueuedPod) -> None:
        """A failed attempt that may succeed soon (error, binding conflict)."""
        if self._entries.get(entry.pod.key) is not entry:
            return
        now = self.clock()
        entry.queued_at = now  # re-added: kube refreshes the timestamp PrioritySort compares
        entry.backoff_until = now + self._backoff_for(entry.attempts)
        self._push_backoff(entry)
        self._incoming("backoff", "ScheduleAttemptFailure")

    def requeue_unschedulable(self, entry: QueuedPod, generation: int = 0,
                              rejectors: frozenset = frozenset()) -> None:
        """No node fits: park the pod until a cluster event may help it; `rejectors` are the
        plugins that turned it down (none known: any event wakes it)."""
        if self._entries.get(entry.pod.key) is not entry:
            return
        now = self.clock()
        entry.queued_at = now
        entry.backoff_until = now + self._backoff_for(entry.attempts)
        entry.unschedulable_since = now
        entry.last_generation = generation
        entry.rejectors = rejectors
        self._rejector_sets[rejectors] += 1
        self._where[entry.pod.key] = "unschedulable"
        self._unschedulable[entry.pod.key] = entry
        self._incoming("unschedulable", "ScheduleAttemptFailure")
        where = entry.pool if _node_local(entry) else None  # None: any event may concern it
        by_pool = self._parked.get(where)
        if by_pool is None:
            by_pool = self._parked[where] = {}
        by_pool[entry.pod.key] = entry

    def _unpark(self, key: str) -> QueuedPod:
        entry = self._unschedulable.pop(key)
        self._rejector_sets[entry.rejectors] -= 1
        if self._rejector_sets[entry.rejectors] <= 0:
            del self._rejector_sets[entry.rejectors]
        for where in (entry.pool, None):
            by_pool = self._parked.get(where)
            if by_pool is not None and by_pool.pop(key, None) is not None:
                if not by_pool:
                    del self._parked[where]
                break
        return entry

    def done(self, key: str) -> None:
        """The pod was scheduled: it leaves the queue."""
        self.delete(key)

    # --- moving pods back ---------------------------------------------------------------------

    def unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """(plugin, schedulerName) -> pods parked unschedulable that plugin turned down
        (kube's scheduler_unschedulable_pods)."""
        out: dict[tuple[str, str], int] = {}
        for entry in self._unschedulable.values():
            for plugin in entry.rejectors:
                key = (plugin, entry.pod.scheduler_name)
                out[key] = out.get(key, 0) + 1
        return out

    def _candidates(self, pools):
        """The parked pods an event may concern: all, or with `pools` (the pools of the node
        it happened on) those of these pools, of the cluster-wide pool, and of the others
        those whose fate may depend on a node of another pool (`_node_local`)."""
        if pools is None:
            return list(self._unschedulable.values())
        out = []
        for name in {None, "", *pools}:
            by_pool = self._parked.get(name)
            if by_pool:
                out += by_pool.values()
        return out

    def move_all_to_active(self, only=None, entries: bool = False, event: str = "ForceActivate",
                           pools=None) -> int:
        """Move unschedulable pods back; with `only`, just those for which `only(pod)` (or
        `only(entry)` with `entries`) is true, among those `pools` may concern (see
        `_candidates`). `event` is the cause's label, as kube's."""
        if only is None:
            moved = list(self._unschedulable.values())
            self._unschedulable.clear()
            self._parked.clear()
            self._rejector_sets.clear()
        else:
            moved = [e for e in self._candidates(pools) if only(e if entries else e.pod)]
            for e in moved:
                self._unpark(e.pod.key)
        return self._move_back(moved, event)

    def wake_pods(self, keys, only, event: str) -> int:
        """Move back those of these parked pods for which `only(entry)`: an event that concerns
        known pods only (those that reference a ResourceClaim: kube's preQueueingHint), found
        by key instead of walking the pool."""
        moved = [e for key in keys if (e := self._unschedulable.get(key)) is not None and only(e)]
        for e in moved:
            self._unpark(e.pod.key)
        return self._move_back(moved, event)

    def _move_back(self, moved: list, event: str) -> int:
        """Unparked pods to backoffQ, or to activeQ when their backoff is over."""
        now = self.clock()
        to_backoff = 0
        for entry in moved:
            if entry.backoff_until > now:
                self._push_backoff(entry)
                to_backoff += 1
            else:
                self._push_active(entry)
        self._incoming("backoff", event, to_backoff)
        self._incoming("active", event, len(moved) - to_backoff)
        return len(moved)

    def has_parked(self) -> bool:
        """Whether any pod waits in the unschedulable pool: a cluster event (`wake`) can move
        nothing else, so while none waits (a shard's initial list) its hint is not worth
        preparing."""
        return bool(self._unschedulable)

    def wake(self, hint, *event, pools=None) -> int:
        """A cluster event: move the parked pods for which `hint(pod, rejectors, *event)`
        (shard/queueing_hints.py) says it could make them fit. `pools`: the sub-cluster pools
        of the node the event happened on (None: any), so that an event in one pool never
        walks the backlog of another (a saturated pool's thousands of parked pods)."""
        name = getattr(hint, "__name__", "")
        # the rejector sets with a plugin that registered this event (all, for an event
        # without a name of its own): the other parked pods are not asked
        woken = {r for r in self._rejector_sets if name not in EVENT_LABELS or registered(r, name)}
        if not woken:
            return 0

        def only(e) -> bool:
            return e.rejectors in woken and hint(e.pod, e.rejectors, *event)
        return self.move_all_to_active(only=only, entries=True, event=EVENT_LABELS.get(name, "ClusterEvent"),
                                       pools=pools)

    def activate(self, keys) -> int:
        """Move these queued pods to activeQ now, from backoff or the unschedulable pool
        (kube's PodsToActivate: the siblings of a pod group member that reached Permit)."""
        moved = 0
        for key in keys:
            where = self._where.get(key)
            if where not in ("backoff", "unschedulable"):
                continue
            entry = self._entries[key]
            if where == "backoff":
                self._backoff.remove(entry)
            else:
                self._unpark(key)
            self._push_active(entry)
            moved += 1
        self._incoming("active", "ForceActivate", moved)
        return moved

    def hold_back(self, keys, until: float) -> None:
        """Keep these queued pods in backoff until at least `until`, wherever they wait: a
        pod group backs off as one after a failure."""
        for key in keys:
            where = self._where.get(key)
            if where is None:
                continue
            entry = self._entries[key]
            if where == "backoff":
                if entry.backoff_until >= until:
                    continue
                self._backoff.remove(entry)
            elif where == "unschedulable":
                self._unpark(key)
            entry.backoff_until = max(entry.backoff_until, until)
            self._push_backoff(entry)  # an activeQ heap entry is dropped when popped

    def flush(self) -> None:
        """Move pods whose backoff expired, and pods unschedulable for too long, to activeQ."""
        now = self.clock()
        backoff = self._backoff
        done = 0
        while backoff and backoff[0].backoff_until <= now:
            self._push_active(backoff.pop(0))
            done += 1
        self._incoming("active", "BackoffComplete", done)
        if self._unschedulable:
            stale = []
            for entry in self._unschedulable.values():  # oldest first: stop at the first fresh one
                if now - entry.unschedulable_since < self.unschedulable_max:
                    break
                stale.append(entry)
            for entry in stale:
                self._unpark(entry.pod.key)
                self._push_active(entry)
            self._incoming("active", "UnschedulableTimeout", len(stale))

    def next_ready_in(self) -> float | None:
        """Seconds until the next backoff expires (None when nothing waits)."""
        if not self._backoff:
            return None
        return max(0.0, self._backoff[0].backoff_until - self.clock())
