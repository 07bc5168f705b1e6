"""The shard's metrics under kube-scheduler v1.37's names, labels and buckets
(pkg/scheduler/metrics/metrics.go), scraped as Prometheus reads them."""
from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from builders import Cluster, node, pod
from common.model.objects import parse_pod
from common.runtime.metrics import ShardMetrics, exponential_buckets
from shard.queue import SchedulingQueue


def scrape(metrics: ShardMetrics) -> dict:
    """family name -> samples, from the text a /metrics endpoint serves."""
    text = generate_latest(metrics.registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def buckets(samples, **labels) -> list[float]:
    return sorted(float(s.labels["le"]) for s in samples if s.name.endswith("_bucket")
                  and all(s.labels.get(k) == v for k, v in labels.items()) and s.labels["le"] != "+Inf")


def test_exponential_buckets_are_component_bases():
    assert exponential_buckets(0.001, 2, 4) == (0.001, 0.002, 0.004, 0.008)


def test_shard_serves_kubes_metrics_with_kubes_labels_and_buckets():
    m = ShardMetrics("0")
    q = SchedulingQueue(lambda a, b: False)
    q.on_incoming = m.queued
    c = Cluster([node("n1", cpu="1")])
    fits, too_big = parse_pod(pod("fits", cpu="100m")), parse_pod(pod("huge", cpu="8"))
    q.add(fits)
    q.add(too_big)
    for _ in range(10):  # one cycle in ten times its plugins one by one
        result = c.sched.schedule(too_big)
        m.cycle(result, 0.001)
    q.requeue_unschedulable(q.pop(), rejectors=result.rejectors)
    m.cycle(c.sched.schedule(fits), 0.002)
    m.bound(1, 0.05)
    m.queues(q.lengths(), q.unschedulable_by_plugin())
    q.move_all_to_active(event="NodeAdd")
    f = scrape(m)

    incoming = {(s.labels["queue"], s.labels["event"]): s.value for s in f["scheduler_queue_incoming_pods"]
                if s.name.endswith("_total")}
    assert incoming == {("active", "PodAdd"): 2, ("unschedulable", "ScheduleAttemptFailure"): 1,
                        ("backoff", "NodeAdd"): 1}
    unschedulable = {(s.labels["plugin"], s.labels["profile"]): s.value for s in f["scheduler_unschedulable_pods"]}
    assert unschedulable == {("NodeResourcesFit", "shardsched"): 1}
    sli = f["scheduler_pod_scheduling_sli_duration_seconds"]
    assert {s.labels["attempts"] for s in sli} == {"1"}
    assert buckets(sli) == list(exponential_buckets(0.01, 2, 20))
    plugin = f["scheduler_plugin_execution_duration_seconds"]
    seen = {(s.labels["plugin"], s.labels["extension_point"], s.labels["status"]) for s in plugin
            if s.name.endswith("_count")}
    assert ("NodeResourcesFit", "PreFilter", "Success") in seen
    assert ("DynamicResources", "PostFilter", "Unschedulable") in seen
    assert buckets(plugin, plugin="NodeResourcesFit", extension_point="PreFilter") == \
        list(exponential_buckets(0.00001, 1.5, 20))
    attempts = f["scheduler_scheduling_attempt_duration_seconds"]
    assert {s.labels["result"] for s in attempts} == {"scheduled", "unschedulable"}
    assert buckets(attempts, result="scheduled") == list(exponential_buckets(0.001, 2, 15))
    assert buckets(f["scheduler_framework_extension_point_duration_seconds"], extension_point="Filter",
                   status="Success") == list(exponential_buckets(0.0001, 2, 12))
    assert buckets(f["scheduler_scheduling_algorithm_duration_seconds"]) == list(exponential_buckets(0.001, 2, 15))
    assert buckets(f["scheduler_pod_scheduling_attempts"]) == list(exponential_buckets(1, 2, 5))
    # every series also says which shard served it
    assert all(s.labels["shard"] == "0" for name, samples in f.items() if name.startswith("scheduler_")
               for s in samples)


def test_observe_all_scrapes_as_observing_each_value():
    """A batch on one histogram series equals observing its values one by one: bucket
    edges included (a value equal to an upper bound counts in that bucket), the +Inf bucket,
    the count and the sum."""
    from prometheus_client import CollectorRegistry, Histogram
    from common.runtime.metrics import observe_all

    bounds = exponential_buckets(0.001, 2, 5)
    values = [0.0, 0.0005, 0.001, 0.0011, 0.002, 0.004, 0.016, 0.017, 3.0, 0.001]
    one_by_one, batched = CollectorRegistry(), CollectorRegistry()
    h1 = Histogram("h", "h", ["shard"], buckets=bounds, registry=one_by_one).labels("0")
    h2 = Histogram("h", "h", ["shard"], buckets=bounds, registry=batched).labels("0")
    for v in values:
        h1.observe(v)
    observe_all(h2, values[:4])
    observe_all(h2, values[4:])

    def samples(r):
        return {(s.name, s.labels.get("le")): s.value for s in r.collect() for s in s.samples}
    expected, got = samples(one_by_one), samples(batched)
    assert got.keys() == expected.keys()
    for k, v in expected.items():
        assert abs(got[k] - v) < 1e-12, k


def test_cycles_held_back_reach_every_series_at_the_next_scrape():
    """Cycles, bindings and queued pods are applied in batches, and a scrape applies what is
    held first: the counts are those of every call so far, and a later call shows at the
    scrape after it."""
    m = ShardMetrics("0")
    c = Cluster([node("n1", cpu="1")])
    fits = parse_pod(pod("fits", cpu="100m"))
    for _ in range(3):
        m.cycle(c.sched.schedule(fits), 0.002)
    m.bound(1, 0.05)
    m.bound(2, 0.5)
    m.queued("active", "PodAdd", 2)
    f = scrape(m)
    attempts = {s.labels["result"]: s.value for s in f["scheduler_schedule_attempts"] if s.name.endswith("_total")}
    assert attempts == {"scheduled": 3}
    duration = {s.name: s.value for s in f["scheduler_scheduling_attempt_duration_seconds"]
                if s.labels.get("le") in (None, "0.002")}
    assert duration["scheduler_scheduling_attempt_duration_seconds_count"] == 3
    assert duration["scheduler_scheduling_attempt_duration_seconds_bucket"] == 3
    assert abs(duration["scheduler_scheduling_attempt_duration_seconds_sum"] - 0.006) < 1e-12
    assert {s.labels["attempts"]: s.value for s in f["scheduler_pod_scheduling_sli_duration_seconds"]
            if s.name.endswith("_count")} == {"1": 1, "2": 1}
    assert [s.value for s in f["scheduler_queue_incoming_pods"] if s.name.endswith("_total")] == [2]
    m.cycle(c.sched.schedule(fits), 0.002)
    f = scrape(m)
    assert [s.value for s in f["scheduler_schedule_attempts"] if s.name.endswith("_total")] == [4]
