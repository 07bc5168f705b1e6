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
