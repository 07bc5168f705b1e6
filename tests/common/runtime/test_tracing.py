"""A pod's trip as one trace (common/runtime/tracing.py): spans recorded after the fact with
the times each process measured, linked by the traceparent the messages carry."""
from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from builders import make_config
from common import config as config_mod
from common.runtime.tracing import Tracer


def _tracer(ratio: float = 1.0):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracer(provider), exporter


def test_a_pods_trip_is_one_trace_across_the_three_processes():
    # one tracer per process, as the dispatcher, a shard and the binder each have
    (dispatcher, d_out), (shard, s_out), (binder, b_out) = _tracer(), _tracer(), _tracer()
    sent = dispatcher.span("dispatch", "", 10.0, 10.5, {"pod": "default/p", "shard": "0"})
    decided = shard.span("schedule", sent, 10.6, 10.7, {"pod": "default/p", "node": "n1"})
    binder.span("commit", decided, 10.8, 11.0, {"pod": "default/p", "result": "bound"})
    (root,), (cycle,), (commit,) = d_out.get_finished_spans(), s_out.get_finished_spans(), b_out.get_finished_spans()
    assert root.parent is None
    assert cycle.parent.span_id == root.context.span_id and commit.parent.span_id == cycle.context.span_id
    assert root.context.trace_id == cycle.context.trace_id == commit.context.trace_id
    assert [s.name for s in (root, cycle, commit)] == ["dispatch", "schedule", "commit"]
    # the times given, in order, 0.1 s of cycle
    assert root.start_time < root.end_time <= cycle.start_time < cycle.end_time <= commit.start_time
    assert cycle.end_time - cycle.start_time == pytest.approx(0.1e9, abs=1e3)
    assert dict(commit.attributes) == {"pod": "default/p", "result": "bound"}


def test_a_pod_not_sampled_at_the_root_is_not_traced_further():
    dispatcher, d_out = _tracer(ratio=0.0)
    shard, s_out = _tracer(ratio=1.0)
    sent = dispatcher.span("dispatch", "", 1.0, 2.0, {})
    assert sent == "" and d_out.get_finished_spans() == ()
    # a shard given no parent starts no trace of its own for the pod (it records only
    # cycles of pods whose dispatch was traced: ShardServer keeps traces of those only)
    assert Tracer().span("schedule", "", 1.0, 2.0, {}) == ""
    assert s_out.get_finished_spans() == ()


def test_tracing_is_off_by_default_and_costs_nothing():
    tracer = Tracer.from_config(config_mod.defaults().tracing, "shardsched-shard", "0")
    assert not tracer.enabled and tracer.span("schedule", "00-" + "1" * 32 + "-" + "2" * 16 + "-01", 0, 1, {}) == ""
    tracer.shutdown()


def test_a_file_exporter_needs_a_file():
    with pytest.raises(config_mod.ConfigError, match="tracing.file"):
        config_mod.validate({"tracing": {"enabled": True, "exporter": "file"}})


def test_tracing_without_the_sdk_installed_names_the_field(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    cfg = make_config().replace(tracing={"enabled": True}).tracing
    with pytest.raises(config_mod.ConfigError, match="tracing.enabled.*opentelemetry-sdk"):
        Tracer.from_config(cfg, "shardsched-shard", "0")
