"""Prometheus metrics of every process, with kube-scheduler v1.37's names, labels and buckets
where they mean the same (its pkg/scheduler/metrics), shardsched's own under `shardsched_`.

Each process has its own registry (so tests can run several in one interpreter) and serves
it on its own port. Every series carries a `shard` label besides kube's: the shard's id in a
shard, the shard a decision or a pod came from in the binder and the dispatcher.
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter as Tally, deque

from prometheus_client import (CollectorRegistry, Counter, GCCollector, Gauge, Histogram, PlatformCollector,
                               ProcessCollector, disable_created_metrics)

from .version import PYTHON, VERSION

# Counters and histograms would each add a `_created` series holding their creation time:
# twice the series for nothing a dashboard or alert of this scheduler reads.
disable_created_metrics()



def exponential_buckets(start: float, factor: float, count: int) -> tuple:
    """component-base's ExponentialBuckets: `count` upper bounds from `start`, each `factor` times
    the one before."""
    return tuple(start * factor ** i for i in range(count))


#: Buckets for shardsched's own durations, from 0.1 ms (a shard's cycle often takes less than
#: kube-scheduler's smallest bucket, 1 ms) to about 1 s, roughly doubling.
DURATION_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064,
                    0.128, 0.256, 0.512, 1.024)
COUNT_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
#: kube-scheduler v1.37's buckets, metric by metric.
KUBE_ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)       # attempt, algorithm
KUBE_EXTENSION_BUCKETS = exponential_buckets(0.0001, 2, 12)    # framework extension points
KUBE_PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)    # plugin execution
KUBE_SLI_BUCKETS = exponential_buckets(0.01, 2, 20)            # pod scheduling SLI
KUBE_VICTIM_BUCKETS = exponential_buckets(1, 2, 7)
KUBE_POD_ATTEMPT_BUCKETS = exponential_buckets(1, 2, 5)


def new_registry() -> CollectorRegistry:
    """A process's registry: its own series plus the default process (CPU, memory, file
    descriptors), platform (python_info) and garbage-collector collectors, and
    `shardsched_build_info`, as every Prometheus client's default registry has."""
    r = CollectorRegistry()
    ProcessCollector(registry=r)
    PlatformCollector(registry=r)
    GCCollector(registry=r)
    Gauge("shardsched_build_info", "Always 1; the labels say which shardsched this is.",
          ["version", "python_version"], registry=r).labels(VERSION, PYTHON).set(1)
    return r


#: Extender calls: from 1 ms to about 33 s (httpTimeout defaults to 30 s).
EXTENDER_BUCKETS = exponential_buckets(0.001, 2, 16)


def extender_duration(registry: CollectorRegistry) -> Histogram:
    """shardsched_extender_duration_seconds (kube-scheduler has no extender metric): each call
    to an extender, by its urlPrefix, the verb (filter, prioritize, preempt, bind) and the result
    (success, error); shards and binders both call them."""
    return Histogram("shardsched_extender_duration_seconds",
                     "One call to a scheduler extender, by extender (its urlPrefix), verb and result.",
                     ["extender", "verb", "result"], buckets=EXTENDER_BUCKETS, registry=registry)


def extender_observer(histogram: Histogram):
    """The `observe(extender, verb, result, seconds)` an extender client reports its calls to."""
    return lambda extender, verb, result, seconds: histogram.labels(extender, verb, result).observe(seconds)


def observe_all(histogram_series, values: list) -> None:
    """Observe `values` on one labelled histogram series at once: what `observe` does value
    by value (a Python walk over the buckets and a lock per value), as one count per bucket
    hit plus one sum. It reads prometheus_client's series internals (the upper bounds, the
    bucket and sum values; pinned in requirements.lock); tests/common/runtime/test_metrics.py
    checks that the scrape equals observing each value."""
    bounds, buckets = histogram_series._upper_bounds, histogram_series._buckets
    for i, n in Tally(bisect_left(bounds, v) for v in values).items():
        buckets[i].inc(n)
    histogram_series._sum.inc(sum(values))


class _FlushOnScrape:
    """Registered before the shard's own metrics: a scrape (or any collect of the registry)
    first applies what `ShardMetrics` holds back, so it never reads a stale figure."""

    def __init__(self, flush):
        self.flush = flush

    def describe(self):
        return []

    def collect(self):
        self.flush()
        return []


class ShardMetrics:
    """The shard's series. What happens per cycle, per binding and per queued pod is held
    back (a tuple appended to a deque) and applied to the series in batches by `flush`: the
    shard server flushes with each report (twice a second) and every scrape flushes first.
    Observing each cycle as it ended (about ten histogram observations, each a Python walk
    over the buckets under a lock) was about 5% of a shard's samples in issue 31's profile."""

    def __init__(self, shard: str, registry: CollectorRegistry | None = None):
        r = self.registry = registry or new_registry()
        self.shard = shard
        self._children: dict = {}  # (metric, label values) -> its series, see _series
        self._unschedulable_keys: set = set()  # (plugin, profile) of every series set so far
        #: held back until `flush`: ("cycle", ...), ("bound", ...), ("queued", ...) records
        self._held: deque = deque()
        self._flushing = threading.Lock()  # the loop's thread and a scrape's may both flush
        r.register(_FlushOnScrape(self.flush))
        self.attempts = Counter("scheduler_schedule_attempts_total",
                                "Scheduling attempts by result (scheduled, unschedulable, error).",
                                ["result", "profile", "shard"], registry=r)
        self.attempt_duration = Histogram("scheduler_scheduling_attempt_duration_seconds",
                                          "One scheduling cycle, snapshot update to selection.",
                                          ["result", "profile", "shard"], buckets=KUBE_ATTEMPT_BUCKETS,
                                          registry=r)
        self.algorithm_duration = Histogram("scheduler_scheduling_algorithm_duration_seconds",
                                            "Filtering, scoring and preemption of one cycle.", ["shard"],
                                            buckets=KUBE_ATTEMPT_BUCKETS, registry=r)
        self.pending = Gauge("scheduler_pending_pods", "Pods in the shard's queues.",
                             ["queue", "shard"], registry=r)
        self.preemption_attempts = Counter("scheduler_preemption_attempts_total",
                                           "Preemption attempts.", ["shard"], registry=r)
        self.preemption_victims = Histogram("scheduler_preemption_victims",
                                            "Victims chosen per preemption.", ["shard"],
                                            buckets=KUBE_VICTIM_BUCKETS, registry=r)
        self.pod_attempts = Histogram("scheduler_pod_scheduling_attempts",
                                      "Attempts a pod needed until it was scheduled.", ["shard"],
                                      buckets=KUBE_POD_ATTEMPT_BUCKETS, registry=r)
        self.sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "From a pod's first entry into the shard's queue to its binding, by its attempts.",
            ["attempts", "shard"], buckets=KUBE_SLI_BUCKETS, registry=r)
        self.extension_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Time in each phase of a cycle (PreFilter, Filter, PostFilter, Score).",
            ["extension_point", "status", "profile", "shard"], buckets=KUBE_EXTENSION_BUCKETS, registry=r)
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "One plugin's call at an extension point (PreFilter, PreScore, Score, PostFilter), one "
            "cycle in ten as kube samples them.",
            ["plugin", "extension_point", "status", "shard"], buckets=KUBE_PLUGIN_BUCKETS, registry=r)
        self.unschedulable = Gauge("scheduler_unschedulable_pods",
                                   "Pods parked unschedulable, by a plugin that turned them down.",
                                   ["plugin", "profile", "shard"], registry=r)
        self.incoming = Counter("scheduler_queue_incoming_pods_total",
                                "Pods put in a queue, by queue and the event that put them there.",
                                ["queue", "event", "shard"], registry=r)
        self.threshold = Gauge("shardsched_feasible_node_threshold",
                               "Feasible nodes the last cycle looked for.", ["shard"], registry=r)
        self.nodes_evaluated = Histogram("shardsched_nodes_evaluated",
                                         "Nodes examined by the filter scan of one cycle.", ["shard"],
                                         buckets=COUNT_BUCKETS, registry=r)
        self.snapshot_duration = Histogram("shardsched_snapshot_update_duration_seconds",
                                           "Incremental snapshot update at the start of a cycle.",
                                           ["shard"], buckets=DURATION_BUCKETS, registry=r)
        self.snapshot_cloned = Counter("shardsched_snapshot_nodes_cloned_total",
                                       "Nodes cloned into the snapshot.", ["shard"], registry=r)
        self.context_skipped = Counter("shardsched_scheduling_context_skipped_nodes_total",
                                       "Nodes a retry skipped because they had not changed.",
                                       ["shard"], registry=r)
        self.pruned = Counter("shardsched_preemption_nodes_pruned_total",
                              "Nodes preemption skipped by the priority prefix sums.", ["shard"],
                              registry=r)
        self.extender_duration = extender_duration(r)

    def _series(self, metric, *labels):
        """metric.labels(*labels), kept: prometheus_client takes a lock and re-checks the
        label values on every call, which cost a tenth of a shard's scheduling thread when
        done about ten times per cycle."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def cycle(self, result, seconds: float) -> None:
        """Record one cycle (the shard calls this after every attempt); applied at `flush`."""
        self._held.append(("cycle", result.profile.name if result.profile is not None else "", result.scheduled,
                           seconds, result.phases, result.plugin_times, result.evaluated, result.threshold,
                           result.snapshot_s, result.cloned, result.skipped_by_context, len(result.victims),
                           result.pruned))

    def flush(self) -> None:
        """Apply what was held back since the last flush: each histogram series gets its
        values in one `observe_all`, each counter one increment, each gauge its last value."""
        with self._flushing:
            held = self._held
            values: dict = {}   # histogram series -> values, in order
            counts: Tally = Tally()  # counter series -> increment
            gauges: dict = {}   # gauge series -> last value
            s, series = self.shard, self._series
            while held:
                record = held.popleft()
                kind = record[0]
                if kind == "cycle":
                    self._cycle_values(record, values, counts, gauges)
                elif kind == "bound":
                    _, attempts, seconds = record
                    values.setdefault(series(self.pod_attempts, s), []).append(attempts)
                    values.setdefault(series(self.sli_duration, str(attempts), s), []).append(seconds)
                else:
                    _, queue, event, n = record
                    counts[series(self.incoming, queue, event, s)] += n
            for child, vs in values.items():
                observe_all(child, vs)
            for child, n in counts.items():
                child.inc(n)
            for child, v in gauges.items():
                child.set(v)

    def _cycle_values(self, record, values: dict, counts: Tally, gauges: dict) -> None:
        """One held cycle's observations, as ShardMetrics.cycle used to make them at once."""
        (_, profile, scheduled, seconds, phases, plugin_times, evaluated, threshold, snapshot_s, cloned,
         skipped, victims, pruned) = record
        s, series = self.shard, self._series

        def observe(child, value):
            got = values.get(child)
            if got is None:
                values[child] = [value]
            else:
                got.append(value)

        outcome = "scheduled" if scheduled else "unschedulable"
        counts[series(self.attempts, outcome, profile, s)] += 1
        observe(series(self.attempt_duration, outcome, profile, s), seconds)
        status = "Success" if scheduled else "Unschedulable"
        for point, took in phases.items():
            observe(series(self.extension_duration, point, status, profile, s), took)
        observe(series(self.algorithm_duration, s), sum(phases.values()))
        for plugin, point, code, took in plugin_times or ():
            observe(series(self.plugin_duration, plugin, point, code, s), took)
        observe(series(self.nodes_evaluated, s), evaluated)
        gauges[series(self.threshold, s)] = threshold
        observe(series(self.snapshot_duration, s), snapshot_s)
        if cloned:
            counts[series(self.snapshot_cloned, s)] += cloned
        if skipped:
            counts[series(self.context_skipped, s)] += skipped
        if "PostFilter" in phases:  # preemption ran, whether or not it found victims
            counts[series(self.preemption_attempts, s)] += 1
            if victims:
                observe(series(self.preemption_victims, s), victims)
            if pruned:
                counts[series(self.pruned, s)] += pruned

    def queues(self, lengths: dict[str, int], unschedulable: dict | None = None) -> None:
        """The queues' lengths, and (plugin, profile) -> pods parked unschedulable (a series
        whose count went to zero is kept at 0, as kube's gauge is)."""
        for queue, n in lengths.items():
            self.pending.labels(queue, self.shard).set(n)
        if unschedulable is not None:
            self._unschedulable_keys |= set(unschedulable)
            for plugin, profile in self._unschedulable_keys:
                self.unschedulable.labels(plugin, profile, self.shard).set(unschedulable.get((plugin, profile), 0))

    def queued(self, queue: str, event: str, n: int = 1) -> None:
        """Pods put in a queue (the queue's on_incoming); applied at `flush`."""
        self._held.append(("queued", queue, event, n))

    def bound(self, attempts: int, seconds: float) -> None:
        """A pod of this shard was bound: its attempts and its time since it was first queued
        (applied at `flush`)."""
        self._held.append(("bound", attempts, seconds))


class BinderMetrics:
    def __init__(self, binder: str, registry: CollectorRegistry | None = None):
        r = self.registry = registry or new_registry()
        self.outcomes = Counter("shardsched_binder_outcomes_total",
                                "Decisions answered, by outcome reason (Bound or the conflict).",
                                ["reason", "shard", "binder"], registry=r)
        self.extender_duration = extender_duration(r)
        self.binder = binder


class DispatcherMetrics:
    def __init__(self, lease: str = "shardsched-dispatcher", registry: CollectorRegistry | None = None):
        r = self.registry = registry or new_registry()
        #: client-go's leader election gauge, under its name: 1 while this replica leads.
        self.leader = Gauge("leader_election_master_status", "1 while this replica holds the leader lease.",
                            ["name"], registry=r).labels(lease)
        self.in_flight = Gauge("shardsched_dispatcher_pods_in_flight",
                               "Pods dispatched to a shard and not yet bound.", ["shard"], registry=r)
        self.shard_up = Gauge("shardsched_shard_up", "1 while the shard holds its lease.", ["shard"],
                              registry=r)
        self.dispatched = Counter("shardsched_dispatcher_pods_dispatched_total",
                                  "Pods sent to a shard (re-dispatches included).", ["shard"], registry=r)


# --- what the alerting rules of deploy/ watch (deploy/components/monitoring) ----------------

def partition_gauges(registry: CollectorRegistry, binder: str, partitions: int, held) -> None:
    """`shardsched_binder_partitions` (binders.count) and `shardsched_binder_partitions_held`,
    read at each scrape from `held()` (the partitions this binder holds now): a partition no
    binder holds commits nothing, and only the sum over the binders shows it."""
    Gauge("shardsched_binder_partitions", "Partitions of the nodes (binders.count).", ["binder"],
          registry=registry).labels(binder).set(partitions)
    Gauge("shardsched_binder_partitions_held", "Partitions whose lease this binder holds now.", ["binder"],
          registry=registry).labels(binder).set_function(lambda: len(held()))


def pending_age_gauge(registry: CollectorRegistry, oldest_age) -> None:
    """`shardsched_dispatcher_oldest_pending_pod_seconds`: how long the oldest pending pod of
    this scheduler has waited (`oldest_age()`, read at each scrape; ungated pods, counted from
    when this dispatcher first saw them), for the alert on pods pending too long."""
    Gauge("shardsched_dispatcher_oldest_pending_pod_seconds",
          "Seconds the oldest ungated pending pod of this scheduler has waited since this dispatcher saw it.",
          registry=registry).set_function(oldest_age)


class StatusWriterCollector:
    """The counters of a process's Event and condition writer (common.runtime.events), read
    at each scrape: `shardsched_events_written_total`, `shardsched_events_dropped_total`
    (more than MAX_QUEUED waiting: dropped, never retried) and
    `shardsched_conditions_written_total`, labelled with the process (`shard-0`, `binder-1`)."""

    NAMES = {"events_written": "Events written (created or patched as a series).",
             "events_dropped": "Events dropped: too many were waiting to be written (events.qps).",
             "conditions_written": "PodScheduled conditions written."}

    def __init__(self, registry: CollectorRegistry, process: str, counters: dict):
        self.process, self.counters = process, counters
        registry.register(self)

    def collect(self):
        from prometheus_client.core import CounterMetricFamily

        for key, doc in self.NAMES.items():
            family = CounterMetricFamily(f"shardsched_{key}", doc, labels=["process"])
            family.add_metric([self.process], self.counters.get(key, 0))
            yield family
