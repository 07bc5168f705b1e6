"""The scheduling cycle: PreFilter, the threshold-bounded filter scan, scoring, selection.

The scan starts at a random row of the node table and walks it in windows. In each window
the vectorised filters run first (one numpy pass each over a contiguous slice of rows), then
the per-node filters in Python on the survivors only. It stops as soon as the feasible-node
threshold is reached; the threshold is re-evaluated after every window because the adaptive
mode depends on how many nodes were rejected so far.

When no node is feasible, the PostFilter plugins (DefaultPreemption) may still find a node
by evicting lower-priority pods; the result then carries the victims.

Nominated pods (pending pods that preempted and wait for their victims to go) count as
already placed on their node for pods of lower or equal priority: such a node passes only if
the pod fits both with and without them, as in kube-scheduler.

Conflict-aware packing (config `packing`). Shards that score the same way see nearly the same
best nodes; when the score packs (MostAllocated), every shard races for the few fullest nodes
and the binder turns the losers into conflicts and retries. Each shard therefore owns a slice
of the nodes (a stable hash of the node's name modulo shards.count) and, among the feasible
nodes scored within `packing.tolerance` percent of the best, picks the best of its own slice;
only when its slice has none does it take the best overall. Each shard then fills its own
nodes, as one scheduler would fill all of them, and shards meet only once a slice is full.

Sub-clusters (config `subClusters.label`): a pod of a named pool (common/scheduling/pools.py)
is filtered only against the rows of the pool's nodes, found in one pass over the label's
column; the others are reported as NodeAffinity's rejections, which they are (the pod's own
selector or required affinity pins the label).

Optimisations that can be switched off (for baselines and ablations): `vectorised`
(per-node filters for everything, like kube-scheduler), `scheduling_context` (skip nodes
unchanged since a pod's last failed attempt), `unit_locating` (honour PreFilter node-name
narrowing), the snapshot's `full_copy`, and `preemption_pruning`.
"""
from __future__ import annotations

import random
import time

import numpy as np

from common.scheduling.disruption import Budgets
from common.scheduling.workloads import Workloads
from common.model.workloads import Namespaces
from common.config import Config, Profile as ProfileConfig
from common.config.plugin_args import profile_args
from common.config.plugin_names import NODE_AFFINITY
from common.model.podgroup import GroupIndex
from common.scheduling.pools import CLUSTER_WIDE, pool_of
from common.scheduling.device_state import DeviceState
from common.scheduling.volumes import VolumeState, claim_volumes
from common.scheduling.extenders import ExtenderError, build as build_extenders
from .diagnosis import Diagnosis
from .extenders import ShardExtenders
from .framework import (ERROR, SKIP, SUCCESS, UNSCHEDULABLE, CycleState, PreFilterResult, Status,
                        unresolvable)
from .plugins.inter_pod_affinity import FILTER_STATE as INTER_POD_FILTER_STATE
from .plugins.topology_spread import FILTER_STATE as SPREAD_FILTER_STATE
from .profile import Profile
from .snapshot import Snapshot
from .threshold import Threshold
from .waiting import WaitingPods

#: scheduler-plugins' CoschedulingArgs defaults.
WINDOW = 512
HOSTNAME = "kubernetes.io/hostname"
MAX_WINDOW = 8192


def _existing_anti_affinity_beyond_node(state) -> bool:
    """Running pods' required anti-affinity over a domain wider than one node (a zone) keeps
    the pod off nodes that did not change themselves: such a failure can be cured by a pod
    leaving another node of the zone, so the scheduling context must not skip them."""
    fs = state.get(INTER_POD_FILTER_STATE)
    return fs is not None and any(key != HOSTNAME for key in fs.forbidden)


def _no_overlap(plugins: list[str]) -> str:
    """kube's PreFilter status when the node-name results of `plugins` share no node."""
    if len(plugins) == 1:
        return f"node(s) didn't satisfy plugin {plugins[0]}"
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}] simultaneously"


def _first_failure(plugins, state, pod, info):
    """(plugin, Status) of the first per-node filter that rejects the node, or None."""
    for p in plugins:
        st = p.filter(state, pod, info)
        if st is not None:
            st.plugin = p.name
            return p, st
    return None


def vec_pass(vec, state, pod, table, rows, base: np.ndarray, diag) -> np.ndarray | None:
    """The vectorised filters over one window (`rows`, a slice or an index array, whose row
    numbers are `base`): which of its rows pass them all (None: no filter ran), in one numpy
    pass each, stopping once none is left. Each filter that turned rows down adds them to
    `diag.vec_failures`. A filter that turns nothing down (most of them, most of the time)
    costs its own call, one `&` and one count: the rows it turned down are built only when
    the count says there are some (benchmarks.cycle's vec_pass: about 1 microsecond a window
    less than building them for every filter)."""
    alive = None  # rows that passed every filter so far (None: all of them)
    left = len(base)  # how many of them
    for p in vec:
        ok = p.filter_vec(state, pod, table, rows)
        passed = ok if alive is None else alive & ok  # never in place: ok may be a view
        kept = np.count_nonzero(passed)  # (several times cheaper than .any() here)
        if kept < left:
            diag.vec_failures.append((p, base[~ok if alive is None else alive & ~ok]))
        alive, left = passed, kept
        if not kept:
            break
    return alive


def _growing(segments):
    """(start, stop) windows over consecutive row segments: two of WINDOW rows, since most
    cycles stop within the first window or two, then each twice the last up to MAX_WINDOW,
    so a scan that must see every node (a pod that fits nowhere) pays for few numpy passes."""
    sizes = iter((WINDOW,))  # the second window is as small as the first
    size = WINDOW
    for lo, hi in segments:
        a = lo
        while a < hi:
            b = min(a + size, hi)
            yield a, b
            a = b
            size = next(sizes, min(size * 2, MAX_WINDOW))


class ScheduleResult:
    """What one cycle decided: a node, or why not (status, lazily built message)."""

    __slots__ = ("pod", "node", "status", "state", "evaluated", "feasible", "diagnosis",
                 "profile", "_message", "victims", "skipped_by_context", "phases",
                 "snapshot_s", "cloned", "threshold", "pruned", "context_safe", "rejectors",
                 "post_filter_parts", "released", "plugin_times")

    def __init__(self, pod, profile, state):
        self.pod, self.profile, self.state = pod, profile, state
        self.node = None
        self.status = None
        self.evaluated = self.feasible = self.skipped_by_context = 0
        self.diagnosis = None
        self._message = None
        self.victims = ()
        self.phases: dict[str, float] = {}  # extension point -> seconds, for the metrics
        self.snapshot_s = 0.0               # set by the loop, which refreshes the snapshot
        self.cloned = 0
        self.threshold = 0
        self.pruned = 0                     # nodes preemption skipped without a dry run
        #: Once PostFilter found no node: each plugin's reasons in order, or the plugin itself
        #: where the cycle skipped it (explain asks it for its words).
        self.post_filter_parts: list | None = None
        #: Whether a retry may skip nodes unchanged since this attempt (scheduling context):
        #: not when the pod's fate depends on pods elsewhere.
        self.context_safe = True
        #: After a failure: the plugins that turned the pod down (Diagnosis.rejectors, plus
        #: DefaultPreemption when preemption found nothing); the queue's hints read them.
        self.rejectors: frozenset = frozenset()
        #: After a gang member's failure: the members the loop gave up on with it (their
        #: messages are in the loop's), whose conditions the shard server writes too.
        self.released: list = []
        #: On a sampled cycle (one in PLUGIN_SAMPLE, as kube samples 10%): (plugin, extension
        #: point, status, seconds) of each PreFilter, PreScore, Score and PostFilter call; else None.
        self.plugin_times: list | None = None

    def timed(self, plugin: str, point: str, t0: float, status) -> None:
        """Record a plugin's call that started at `t0` (perf_counter) on a sampled cycle."""
        if self.plugin_times is not None:
            code = status.code if isinstance(status, Status) else SUCCESS
            self.plugin_times.append((plugin, point, code, time.perf_counter() - t0))

    @property
    def scheduled(self) -> bool:
        return self.node is not None


#: One cycle in this many times its plugins one by one (kube's pluginMetricsSamplePercent, 10).
PLUGIN_SAMPLE = 10


class Scheduler:
    def __init__(self, cfg: Config, cache, store=None, seed: int = 0, *, clock=time.monotonic,
                 vectorised: bool | None = None, scheduling_context: bool | None = None,
                 unit_locating: bool | None = None, full_snapshot: bool | None = None,
                 zone_order: bool | None = None, preemption_pruning: bool | None = None,
                 registry: dict | None = None, slice_of: tuple[int, int] = (0, 1),
                 extenders: ShardExtenders | None = None):
        """Optimisations default to `shards.optimizations` in the config; keyword arguments
        override them (benchmarks compare both settings on one cache). `registry` maps plugin
        names to classes (default: shard.registry.REGISTRY). `slice_of` is (this shard's
        index, the number of shards): the slice of the nodes packing prefers (one slice: off).
        `extenders`: the clients of the configured extenders (default: `cfg.extenders`'
        without metrics; the shard server passes them timed)."""
        opts = cfg.shards.optimizations

        def pick(arg, default):
            return default if arg is None else arg

        self.cache = cache
        self.store = store
        self.rng = random.Random(seed)
        self.vectorised = pick(vectorised, opts.vectorised_filters)
        self.scheduling_context = pick(scheduling_context, opts.scheduling_context)
        self.unit_locating = pick(unit_locating, opts.unit_locating)
        self.snapshot = Snapshot(full=pick(full_snapshot, not opts.incremental_snapshot),
                                 zone_order=pick(zone_order, not opts.swap_delete_node_list))
        self.preemption_pruning = pick(preemption_pruning, cfg.preemption.pruning)
        self.extenders = extenders if extenders is not None else ShardExtenders(build_extenders(cfg.extenders))
        self.threshold = Threshold(cfg.threshold)
        #: node name -> {pod key: Pod}: pending pods nominated to the node (kept by the loop).
        self.nominated: dict[str, dict] = {}
        #: PodDisruptionBudgets by key (kept by the loop); preemption avoids breaking them.
        self.pdbs: dict = {}
        #: Claims, volumes, storage classes and CSINodes (kept by the loop).
        self.volumes = VolumeState()
        #: DRA's claims, device classes and slices (kept by the loop).
        self.devices = DeviceState()
        #: Services and ReplicaSets, StatefulSets, ReplicationControllers (kept by the loop),
        #: whose selectors default spreading takes.
        self.workloads = Workloads()
        #: Namespaces (kept by the loop), whose labels pod affinity's namespaceSelector reads.
        self.namespaces = Namespaces()
        #: Pods held at Permit until their plugins allow them.
        self.waiting = WaitingPods(clock)
        #: PodGroups and their members (kept by the loop), for Coscheduling and preemption.
        self.groups = GroupIndex()
        #: (binders.count, binders.partitionLabel): a group is committed by one binder.
        self.partitioning = (cfg.binders.count, cfg.binders.partition_label)
        self.clock = clock
        self._cycles = 0  # for sampling plugin times
        self.slice_index, self.slices = slice_of[0] % max(slice_of[1], 1), max(slice_of[1], 1)
        self.pack_tolerance = cfg.packing.tolerance
        self.pool_label = cfg.sub_clusters.label
        self.profiles = {p.scheduler_name: Profile(p, self, profile_args(cfg, i), self._threshold(cfg, p),
                                                   registry)
                         for i, p in enumerate(cfg.profiles)}
        mode = cfg.packing.mode
        #: scheduler names of the profiles whose choice prefers this shard's slice
        self.sliced = frozenset() if self.slices == 1 or mode == "off" else frozenset(
            name for name, prof in self.profiles.items() if mode == "always" or prof.packs)

    def _threshold(self, cfg: Config, profile: ProfileConfig) -> Threshold:
        """The profile's own (percentageOfNodesToScore), else the scheduler's."""
        pct = profile.percentage_of_nodes_to_score
        if pct is None:
            return self.threshold
        return Threshold(cfg.threshold.replace(mode="percentage", percentage=pct))

    @property
    def table(self):
        return self.snapshot.table

    def profile_for(self, pod) -> Profile | None:
        return self.profiles.get(pod.scheduler_name)

    def refresh(self) -> int:
        """Start of a cycle: bring the snapshot up to the cache; returns nodes cloned."""
        return self.snapshot.update(self.cache)

    # --- one cycle ----------------------------------------------------------------------------

    def schedule(self, pod, queued: int = 0, last_generation: int = 0, profile: Profile | None = None,
                 *, post_filter: bool = True) -> ScheduleResult:
        """One cycle. `post_filter=False` (explain's full rescan) leaves PostFilter out: the
        cycle being explained already ran it, and its plugins may act (Coscheduling rejects
        a group's waiting pods)."""
        profile = profile or self.profile_for(pod)
        t0 = time.perf_counter()
        state = CycleState()
        result = ScheduleResult(pod, profile, state)
        self._cycles += 1
        if self._cycles % PLUGIN_SAMPLE == 0 and post_filter:
            result.plugin_times = []
        table = self.table
        table.fit_width()  # a column for every slot the pod or a plugin may name
        n = len(table)
        diag = Diagnosis(n)
        result.diagnosis = diag
        if not self._pre_filter(profile, state, pod, diag, result):
            result.rejectors = frozenset((result.status.plugin,))
            if n and profile.post_filter and post_filter:
                self._post_filter(profile, state, pod, result,
                                  result.status.code == UNSCHEDULABLE and self._preempting(profile, pod))
            return result
        if self.pool_label:
            self._narrow_to_pool(profile, pod, diag)
        rows_hint = diag.kept
        if n == 0:
            result.status = Status("UnschedulableAndUnresolvable", "no nodes available to schedule pods")
            result._message = "no nodes available to schedule pods"  # kube's words for an empty cluster
            return result
        # A pod mounting claims depends on objects that are not nodes (claims, volumes, other
        # pods' ReadWriteOncePod claims): no node may be skipped as unchanged.
        result.context_safe = not (pod.has_cross_node_constraints() or _existing_anti_affinity_beyond_node(state)
                                   or state.get(SPREAD_FILTER_STATE) or claim_volumes(pod)
                                   or self.extenders.filtering(pod) or bool(pod.resource_claims))
        skip_unchanged = self.scheduling_context and last_generation > 0 and result.context_safe
        t1 = time.perf_counter()
        feasible = self._scan(profile, state, pod, diag, result, queued, rows_hint,
                              last_generation if skip_unchanged else 0)
        if len(feasible) and self.extenders:
            try:
                feasible = self.extenders.filter(pod, feasible, self.table, diag)
            except ExtenderError as e:  # kube: the cycle fails with the error; the pod backs off
                result.status, result._message = Status(ERROR, str(e)), str(e)
                result.rejectors, result.context_safe = frozenset(("",)), False
                return result
        t2 = time.perf_counter()
        result.phases["PreFilter"], result.phases["Filter"] = t1 - t0, t2 - t1
        result.threshold = profile.threshold.last
        result.feasible = len(feasible)
        if not len(feasible):
            result.status = Status(UNSCHEDULABLE)
            result.rejectors = diag.rejectors()
            preempting = self._preempting(profile, pod)
            if result.skipped_by_context:
                if preempting:  # preemption needs every node's verdict
                    return self.schedule(pod, queued, 0, profile)
                result.diagnosis = None  # partial: the message needs a full scan (see explain)
            if profile.post_filter and post_filter:
                self._post_filter(profile, state, pod, result, preempting)
            return result
        result.node = self._select(profile, state, pod, feasible, result)
        result.phases["Score"] = time.perf_counter() - t2
        result.status = Status(SUCCESS)
        return result

    def _preempting(self, profile, pod) -> bool:
        """Whether preemption could find victims at all: some counted pod has a lower priority."""
        return (self.cache.lowest_priority() < pod.priority
                and any(p.finds_victims for p in profile.post_filter))

    def _pre_filter(self, profile, state, pod, diag, result) -> bool:
        """Run PreFilter; False when it rejected the pod (the result says why).

        Node-name results narrow the scan (unit locating). kube's own results are merged as
        kube-scheduler merges them, by name, before looking at the snapshot: when they have no
        name in common, PreFilter fails with kube's "didn't satisfy plugin(s)" message. An
        UnschedulableAndUnresolvable rejection stops PreFilter at once; after an Unschedulable
        one the other plugins still run (their state is what preemption and the PostFilters
        read: kube's RunPreFilterPlugins) and the last such rejection is the cycle's."""
        table = self.table
        n = len(table)
        names, with_nodes, rejected = None, [], None
        sampled = result.plugin_times is not None  # (an unsampled cycle reads no clock per plugin)
        for p in profile.pre_filter:
            t = time.perf_counter() if sampled else 0.0
            out = p.pre_filter(state, pod)
            if sampled:
                result.timed(p.name, "PreFilter", t, out)
            if out is None:
                continue
            if isinstance(out, PreFilterResult):
                if not out.hint:
                    with_nodes.append(p.name)
                    names = out.node_names if names is None else names & out.node_names
                    if not names:
                        out = unresolvable(_no_overlap(with_nodes))
                if isinstance(out, PreFilterResult):
                    if self.unit_locating:
                        rows = np.array(sorted(table.row_of[nm] for nm in out.node_names if nm in table.row_of),
                                        dtype=np.int64)
                        if len(rows) < n:
                            diag.narrow(p, rows, out.hint)
                    continue
            if out.code == SKIP:
                state.skip_filter.add(p.name)
                continue
            out.plugin = p.name
            if out.code == UNSCHEDULABLE:
                rejected = out  # kube runs the other PreFilters (preemption may follow) and keeps the last
                continue
            diag.pre_filter_status = out
            result.status = out
            return False
        if rejected is not None:
            diag.pre_filter_status = rejected
            result.status = rejected
            return False
        return True

    def _narrow_to_pool(self, profile, pod, diag) -> None:
        """Scan only the rows of the pod's pool, if it has one and the profile runs the
        NodeAffinity filter that enforces the pin (its words explain the other rows)."""
        pool = pool_of(pod, self.pool_label)
        if pool == CLUSTER_WIDE:
            return
        affinity = next((p for p in profile.filters if p.name == NODE_AFFINITY), None)
        if affinity is None:
            return
        codes, values = self.table.label_column(self.pool_label)
        code = values.get(pool)
        rows = np.zeros(0, dtype=np.int64) if code is None else np.flatnonzero(codes[:len(self.table)] == code)
        diag.narrow(affinity, rows, hint=True)

    def _post_filter(self, profile, state, pod, result, preempting: bool) -> None:
        """Run PostFilter until one finds a node (preemption: the result gets the node and
        victims), as kube's RunPostFilterPlugins, after any failure, a PreFilter rejection
        included; else the result keeps every plugin's reasons (the "preemption: ..." part of
        kube's message). Plugins that look for victims run only when `preempting` (a
        rejection some node could get over, and a pod of lower priority somewhere): else
        they could not succeed, and explain asks them for their words if a message is wanted.
        The PostFilter phase (a preemption attempt, to the metrics) is timed when one ran,
        and a preemption that found nothing counts DefaultPreemption among the pod's
        rejectors (shard/queueing_hints.py)."""
        t = time.perf_counter()
        searched = False
        parts: list = []
        for p in profile.post_filter:
            if p.finds_victims:
                if not preempting:
                    parts.append(p)
                    continue
                searched = True
            t0 = time.perf_counter()
            out = p.post_filter(state, pod, result)
            result.timed(p.name, "PostFilter", t0, out.status if out.node is None else None)
            result.pruned += out.pruned
            if out.node is not None:
                result.node, result.victims = out.node, out.victims
                result.status = Status(SUCCESS)
                break
            parts.append(tuple(out.status.reasons) if out.status is not None else ())
            if out.status is not None and out.status.code == ERROR:
                # kube's RunPostFilterPlugins returns at an error: no later plugin runs, and its
                # message is the pod's PostFilter message
                result.post_filter_parts = [parts[-1]]
                break
        else:
            result.post_filter_parts = parts
            if searched:
                result.rejectors |= {p.name for p in profile.post_filter if p.finds_victims}
        if searched:
            result.phases["PostFilter"] = time.perf_counter() - t

    def budgets(self) -> Budgets:
        """The PodDisruptionBudgets as preemption spends them, counted over the bound pods."""
        return Budgets(self.pdbs.values(), self.cache.counted_pods)

    # --- one node, node by node (preemption's dry runs, nominated pods) -----------------------

    def check_node(self, profile, state, pod, info) -> Status | None:
        """Every filter of the profile on one node, nominated pods included; None = fits."""
        others = self._nominated_on(pod, info.name)
        if others:
            scratch = info.scratch()
            st = state.clone()
            for other in others:
                self.add_to(profile, st, pod, other, scratch)
            status = self._filter_node(profile, st, pod, scratch)
            if status is not None:
                return status
        return self._filter_node(profile, state, pod, info)

    def _filter_node(self, profile, state, pod, info) -> Status | None:
        skip = state.skip_filter
        failure = _first_failure([p for p in profile.filters if p.name not in skip], state, pod, info)
        return None if failure is None else failure[1]

    def _nominated_on(self, pod, node_name: str) -> list:
        """Pods nominated to the node that `pod` must leave room for (priority >= its own)."""
        here = self.nominated.get(node_name)
        if not here:
            return []
        return [p for p in here.values() if p.priority >= pod.priority and p.key != pod.key]

    def add_to(self, profile, state, pod, other, info) -> None:
        """Count `other` on `info` (a scratch copy), and in the PreFilter state."""
        info.add_pod(other)
        for p in profile.add_pod:
            p.add_pod(state, pod, other, info)

    def remove_from(self, profile, state, pod, other, info) -> None:
        info.remove_pod(other.key)
        for p in profile.remove_pod:
            p.remove_pod(state, pod, other, info)

    def _filters(self, profile, state):
        skip = state.skip_filter
        if not self.vectorised:
            return [], [p for p in profile.filters if p.name not in skip]
        return ([p for p in profile.vec_filters if p.name not in skip],
                [p for p in profile.node_filters if p.name not in skip])

    def _scan(self, profile, state, pod, diag, result, queued, rows_hint, skip_before,
              everywhere: bool = False) -> np.ndarray:
        """The feasible rows the cycle scores: the threshold's number of them, or with
        `everywhere` (grading a choice) every feasible row, unsliced."""
        table = self.table
        n = len(table)
        vec, per_node = self._filters(profile, state)
        if skip_before:
            # Scheduling context: only rows changed since the pod's last failed attempt can
            # have become feasible, and one pass over the generation column finds them.
            before = n if rows_hint is None else len(rows_hint)
            if rows_hint is None:
                rows_hint = np.flatnonzero(table.generation[:n] > skip_before)
            else:
                rows_hint = rows_hint[table.generation[rows_hint] > skip_before]
            result.skipped_by_context = before - len(rows_hint)
        if rows_hint is not None:
            start = self.rng.randrange(len(rows_hint)) if len(rows_hint) > WINDOW else 0
            ordered = np.concatenate((rows_hint[start:], rows_hint[:start]))
            windows = (ordered[a:b] for a, b in _growing([(0, len(ordered))]))
        else:
            # Lazily: most cycles stop within the first window or two.
            start = self.rng.randrange(n)
            windows = (slice(a, b) for a, b in _growing([(start, n), (0, start)]))
        found: list[np.ndarray] = []
        nfound = examined = rejected = 0
        sliced = not everywhere and profile.name in self.sliced  # the threshold counts its own nodes

        def target_after(examined, rejected):
            return n if everywhere else profile.threshold.target(n, examined, rejected, queued)

        target = target_after(0, 0)
        for rows in windows:
            base = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
            alive = vec_pass(vec, state, pod, table, rows, base, diag)
            cand = base if alive is None else base[alive]
            if per_node and len(cand):
                keep = []
                infos = table.infos
                for i, row in enumerate(cand):
                    failure = _first_failure(per_node, state, pod, infos[row])
                    if failure is not None:
                        diag.node_failures[int(row)] = failure
                    else:
                        keep.append(row)
                        if nfound + len(keep) >= target and not vec:
                            base = base[:i + 1]  # the per-node baseline stops node by node,
                            break                # like kube: the rest was not examined
                cand = np.array(keep, dtype=np.int64)
            if self.nominated and len(cand):
                cand = self._leave_room_for_nominated(profile, state, pod, diag, cand)
            examined += len(base)
            rejected += len(base) - len(cand)
            if len(cand):
                found.append(cand)
                nfound += int(np.count_nonzero(self.own(cand))) if sliced else len(cand)
            result.evaluated = examined
            target = target_after(examined, rejected)
            if nfound >= target:
                break
        if not found:
            return np.zeros(0, dtype=np.int64)
        feasible = np.concatenate(found)
        if sliced:
            return self._slice_candidates(feasible, max(target, 1))
        return feasible[:max(target, 1)]

    def _slice_candidates(self, feasible: np.ndarray, target: int) -> np.ndarray:
        """What a packing cycle scores: up to `target` nodes of its own slice (the threshold
        counted those, so a shard samples its slice as one scheduler samples the cluster),
        and up to as many others, which only a tolerance below 100 may choose (or none of
        its own is feasible)."""
        mine = self.own(feasible)
        own = feasible[mine][:target]
        if len(own) and self.pack_tolerance >= 100:
            return own
        return np.concatenate((own, feasible[~mine][:target]))

    def _leave_room_for_nominated(self, profile, state, pod, diag, cand: np.ndarray) -> np.ndarray:
        """Re-check the feasible rows whose nodes hold nominated pods, with those pods there."""
        names = self.table.names
        keep = np.ones(len(cand), dtype=bool)
        for i, row in enumerate(cand):
            if names[row] in self.nominated and self._nominated_on(pod, names[row]):
                st = self.check_node(profile, state, pod, self.table.infos[row])
                if st is not None:
                    keep[i] = False
                    diag.node_failures[int(row)] = (None, st)
        return cand[keep]

    def _select(self, profile, state, pod, rows: np.ndarray, result: ScheduleResult) -> str:
        table = self.table
        if len(rows) == 1:
            return table.names[int(rows[0])]
        total = self._totals(profile, state, pod, rows, result)
        best = None
        if profile.name in self.sliced:
            best = self._own_slice_best(total, rows)
        if best is None:
            best = (total == total.max()).nonzero()[0]
        pick = best[self.rng.randrange(len(best))] if len(best) > 1 else best[0]
        return table.names[int(rows[pick])]

    def _totals(self, profile, state, pod, rows: np.ndarray, result: ScheduleResult) -> np.ndarray:
        """PreScore, then each rows' weighted sum of the profile's normalised scores (the
        plugins' times go to `result`, on a sampled cycle)."""
        table = self.table
        total = None
        sampled = result.plugin_times is not None  # (an unsampled cycle reads no clock per plugin)
        for p in profile.pre_score:
            t = time.perf_counter() if sampled else 0.0
            st = p.pre_score(state, pod, rows)
            if sampled:
                result.timed(p.name, "PreScore", t, st)
            if st is not None and st.code == SKIP:
                state.skip_score.add(p.name)
        for p, vectorised, normalizes in profile.score_forms:
            if p.name in state.skip_score:
                continue
            t = time.perf_counter() if sampled else 0.0
            if vectorised:
                s = np.asarray(p.score_vec(state, pod, table, rows), dtype=np.int64)
            else:
                infos = table.infos
                s = np.fromiter((p.score(state, pod, infos[r]) for r in rows), dtype=np.int64, count=len(rows))
            if normalizes:
                p.normalize(state, pod, s)
            if sampled:
                result.timed(p.name, "Score", t, None)
            weighed = s if p.weight == 1 else s * p.weight
            total = weighed if total is None else total + weighed  # never in place: s may be shared
        if self.extenders:
            extra = self.extenders.scores(pod, rows, table)
            if extra is not None:
                total = extra if total is None else total + extra
        if total is None:  # every scorer skipped: all nodes tie
            total = np.zeros(len(rows), dtype=np.int64)
        return total

    def grade(self, result: ScheduleResult) -> float | None:
        """The regret of a cycle's choice, off the clock: every feasible node of the same
        snapshot is scored for the pod (no threshold, no slice), and the chosen node's total
        falls short of the best by this percentage of the best (0: an optimal node). Call it
        before the next cycle refreshes the snapshot. None for what it cannot grade fairly:
        failures, preemption (victims change the node), pod groups and pods with claims (their
        Reserve already changed what a rescan would see), pods an extender filters or scores
        (grading would call it again), or a node the rescan no longer finds."""
        pod, profile = result.pod, result.profile
        if (not result.scheduled or result.victims or claim_volumes(pod) or self.extenders.consulted(pod)
                or pod.resource_claims
                or self.groups.group_of.get(pod.key) is not None):
            return None
        state = CycleState()
        diag = Diagnosis(len(self.table))
        scratch = ScheduleResult(pod, profile, state)
        if not self._pre_filter(profile, state, pod, diag, scratch):
            return None
        rows = self._scan(profile, state, pod, diag, scratch, 0, diag.kept, 0, everywhere=True)
        at = np.flatnonzero(rows == self.table.row_of.get(result.node, -1))
        if not len(at):
            return None
        total = self._totals(profile, state, pod, rows, scratch) if len(rows) > 1 else np.zeros(1, dtype=np.int64)
        best = int(total.max())
        return 0.0 if best <= 0 else 100.0 * (best - int(total[at[0]])) / best

    def own(self, rows: np.ndarray) -> np.ndarray:
        """Which of `rows` belong to this shard's slice (crc32 of the node's name, the same
        in every process, modulo the number of shards)."""
        return self.table.name_hash[rows] % self.slices == self.slice_index

    def _own_slice_best(self, total: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Positions (into `rows`) of the best-scored nodes of this shard's slice among those
        within `packing.tolerance` percent of the best score; None when it has none there."""
        top = int(total.max())
        near = (total >= top - max(top, 0) * self.pack_tolerance // 100) & self.own(rows)
        if not near.any():
            return None
        own = np.flatnonzero(near)
        scores = total[own]
        return own[scores == scores.max()]

    # --- explaining a failure -----------------------------------------------------------------

    def explain(self, result: ScheduleResult, post_filter: bool = True) -> str:
        """kube-scheduler's unschedulable message for a failed cycle (full scan if needed);
        without PostFilter's words when `post_filter` is false (a gang's member: kube's
        pod-group cycle runs no per-pod PostFilter)."""
        if result._message is not None and (post_filter or result.status.code == ERROR):
            return result._message  # (an extender's error is the whole message, as kube's)
        pod = result.pod
        if result.diagnosis is None:
            redo = self.schedule(pod, profile=result.profile, post_filter=False)
            if redo.scheduled:  # a node skipped as unchanged fits: retry without skipping
                result.context_safe = False
                return "the pod fits now and will be retried"
            result.diagnosis, result.state = redo.diagnosis, redo.state
        diag = result.diagnosis
        if diag.pre_filter_status is not None:
            st = diag.pre_filter_status
            message = f"0/{diag.total_nodes} nodes are available: {st.message()}."
        else:
            message = diag.message(result.state, pod, self.table)
        if not post_filter:
            return message
        post = self._post_filter_message(result)
        result._message = f"{message} {post}" if post else message
        return result._message

    @staticmethod
    def _post_filter_message(result) -> str:
        """What PostFilter said about a failed cycle: its plugins' reasons, joined as kube
        joins them. A plugin the cycle skipped (it could not find a node) is asked now; kube
        runs it anyway and reports why it failed, and it does no dry run in those cases."""
        if not result.post_filter_parts:
            return ""
        reasons = []
        for part in result.post_filter_parts:
            if isinstance(part, tuple):
                reasons += part
                continue
            out = part.post_filter(result.state, result.pod, result)
            reasons += out.status.reasons if out.status is not None else ()
        return Status(UNSCHEDULABLE, *reasons).message()
