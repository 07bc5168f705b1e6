"""A pod's trip through the processes as one OpenTelemetry trace, off by default.

Three spans per scheduled pod, each recorded by the process that did the work, after the
fact, with the times it measured (so a cycle never waits on the tracing library):

- `dispatch` (dispatcher): from the dispatcher seeing the pod pending to its batch going to a
  shard; the trace's root. Its W3C `traceparent` travels in the PendingPod message;
- `schedule` (shard): one per scheduling cycle of the pod, a child of its dispatch; a cycle
  that placed the pod sends its own `traceparent` in the Decision;
- `commit` (binder): from the decision's arrival to its outcome (bound, or why not), a child
  of the cycle that decided it.

Spans carry kube's log keys as attributes (`pod`, `node`) and shardsched's (`shard`,
`binder`, `result`). Sampling is decided at the root (`tracing.samplingRatePerMillion`, as
kube's TracingConfiguration spells it) and followed by the children: an unsampled pod costs
the shard and binder nothing but reading an empty string.

opentelemetry-sdk is an optional dependency (`pip install 'shardsched[tracing]'`): the
package is imported only when tracing is enabled, and a process asked to trace without it
stops at start with an error naming the field.
"""
from __future__ import annotations

import time

from ..config import ConfigError

#: The exporters `tracing.exporter` names.
EXPORTERS = ("otlp", "file")


class Tracer:
    """Records finished spans; without a provider (tracing off) every call returns at once."""

    def __init__(self, provider=None):
        self._provider = provider
        self._tracer = provider.get_tracer("shardsched") if provider is not None else None
        # monotonic -> wall clock, fixed once: spans are recorded with the monotonic times the
        # processes measure
        self._offset_ns = time.time_ns() - time.monotonic_ns()
        if self._tracer is not None:
            from opentelemetry import trace
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
            self._trace = trace
            self._propagator = TraceContextTextMapPropagator()

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @classmethod
    def from_config(cls, cfg, service: str, instance: str) -> "Tracer":
        """The process's tracer for the `tracing` section (`cfg`): off unless enabled."""
        if not cfg.enabled:
            return cls()
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        except ImportError:
            raise ConfigError("tracing.enabled", "needs the opentelemetry-sdk package "
                              "(pip install 'shardsched[tracing]')") from None
        provider = TracerProvider(
            resource=Resource.create({"service.name": service, "service.instance.id": instance}),
            sampler=ParentBased(TraceIdRatioBased(cfg.sampling_rate_per_million / 1e6)))
        provider.add_span_processor(BatchSpanProcessor(_exporter(cfg)))
        return cls(provider)

    def span(self, name: str, parent: str, start: float, end: float, attributes: dict) -> str:
        """Record a finished span from `start` to `end` (time.monotonic() seconds), a child of
        the `parent` traceparent ("" = a new trace); returns its own traceparent, "" when off
        or not sampled."""
        if self._tracer is None:
            return ""
        context = self._propagator.extract({"traceparent": parent}) if parent else None
        span = self._tracer.start_span(name, context=context, attributes=attributes,
                                       start_time=int(start * 1e9) + self._offset_ns)
        span.end(end_time=int(end * 1e9) + self._offset_ns)
        if not span.get_span_context().trace_flags.sampled:
            return ""
        carrier: dict = {}
        self._propagator.inject(carrier, context=self._trace.set_span_in_context(span))
        return carrier.get("traceparent", "")

    def shutdown(self) -> None:
        """Export what is buffered (at the process's end)."""
        if self._provider is not None:
            self._provider.shutdown()


def _exporter(cfg):
    if cfg.exporter == "file":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        # one JSON span per line, appended (several processes may share the file)
        out = open(cfg.file, "a", buffering=1)
        return ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ConfigError("tracing.exporter", "otlp needs the opentelemetry-exporter-otlp-proto-http "
                          "package (pip install 'shardsched[tracing]')") from None
    return OTLPSpanExporter(endpoint=cfg.endpoint)
