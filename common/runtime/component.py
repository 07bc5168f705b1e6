"""What every runtime process shares: a gRPC server with a Status call, a lease in the store
that tells the others it is alive and where it listens, counters, and a clean shutdown.

Liveness is a lease rather than a heartbeat between processes so that a process that is
killed with -9 simply stops renewing: its lease expires and the others react, with no
goodbye message needed.
"""
from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections import Counter
from concurrent import futures

import grpc

from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc

from . import gcstats, health
from ..config import Config
from ..errors import StoreUnavailable
from .logs import ErrorLog
from .security import SERVER_OPTIONS, Security
from .tracing import Tracer
from .version import VERSION

log = logging.getLogger(__name__)

def port_for(base: int, index: int, override: int | None) -> int:
    """Process `index` listens on base + index; a base of 0 means any free port."""
    if override is not None:
        return override
    return base + index if base else 0


#: --metrics-port's word for no metrics (the config's null).
METRICS_OFF = "off"


def metrics_port_for(base: int | None, index: int, override: int | str | None) -> int | None:
    """Like port_for (0, configured or given, is any free port), but None (the config's
    null) or an override of METRICS_OFF switches metrics off (None)."""
    if override == METRICS_OFF:
        return None
    if override is not None:
        return override
    if base is None:
        return None
    return base + index if base else 0


class Component(rpc.ComponentServicer):
    """Base of the dispatcher, shard and binder processes.

    Where a process listens comes from its config section (`section`, the attribute of
    common.config.Config): `host`, and the ports named by `port_key` and `metrics_port_key`
    (attributes of that section), plus its index; `port` and `metrics_port`
    override them (the command line's --port and --metrics-port).
    """

    role = "component"
    section = ""
    port_key, metrics_port_key = "base_port", "metrics_base_port"

    def __init__(self, cfg: Config, store, index: int, port: int | None = None,
                 metrics_port: int | None = None, registry=None, tracer: Tracer | None = None):
        gcstats.install()  # from the start: the initial list's collections count too
        own = getattr(cfg, self.section)
        self.id = str(index)
        self.store = store
        self.host = own.host
        self.port = port_for(getattr(own, self.port_key), index, port)
        #: A process that stops renewing is dead to the others after this long.
        self.lease_ttl = cfg.dispatcher.shard_timeout_seconds
        #: Port for Prometheus metrics: None = off, 0 = any free port.
        self.metrics_port = metrics_port_for(getattr(own, self.metrics_port_key), index, metrics_port)
        self.registry = registry
        #: Records the pods' trips as traces (common/runtime/tracing.py); off by default.
        self.tracer = tracer or Tracer.from_config(cfg.tracing, f"shardsched-{self.role}", str(index))
        self.metrics_address = ""
        self.started = time.monotonic()
        self.counters: Counter = Counter()
        self.stop_event = threading.Event()
        self.server: grpc.Server | None = None
        self.errors = ErrorLog(logging.getLogger(f"{__name__}.{self.role}"))
        self._lease_held = False
        #: How this process listens and calls its peers (raises SecurityError on bad files).
        self.security = Security.from_config(cfg.security)
        #: The main loop is waiting for the store to answer again.
        self.store_outage = False
        self.health = health.Health(cfg.health.liveness_timeout_seconds)
        self.health.add_ready("shutdown", lambda: "shutting down" if self.stop_event.is_set() else None)
        self.health.add_ready("lease", lambda: None if self._lease_held else "its lease is not held")
        self.health.add_ready("store", lambda: "the store does not answer" if self.store_outage else None)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # --- Status ---------------------------------------------------------------------------

    def queues(self) -> dict[str, int]:
        return {}

    def gauges(self) -> dict[str, int]:
        """Current values reported beside the counters (thresholds, percentiles...)."""
        return {}

    def peers(self) -> list:
        return []

    def Status(self, request, context):
        counters = {**self.counters, **self.gauges(), "skipped_records": self.store.skipped_records,
                    **gcstats.install().counters()}
        return pb.StatusReply(role=self.role, id=self.id, uptime_seconds=time.monotonic() - self.started,
                              queues=self.queues(), counters=counters,
                              address=self.address, metrics=self.metrics_address, peers=self.peers(),
                              version=VERSION)

    # --- serving --------------------------------------------------------------------------

    def register(self, server: grpc.Server) -> None:
        """Add the role's own services (the Status service is always added)."""

    def serve(self, workers: int = 16) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers), options=SERVER_OPTIONS,
                             interceptors=self.security.interceptors())
        rpc.add_ComponentServicer_to_server(self, server)
        self.register(server)
        for host in health.listen_hosts(self.host):  # the pod IP, and loopback for port-forward
            try:
                bound = self.security.add_port(server, f"{host}:{self.port}")
            except RuntimeError:  # grpc's "failed to bind" (older versions return 0 instead)
                bound = 0
            if bound == 0:
                raise OSError(f"{self.role} {self.id}: cannot listen on {host}:{self.port} (address in use?)")
            self.port = bound
        server.start()
        self.server = server
        if self.registry is not None:
            self.metrics_address = health.serve(self.registry, self.health, self.host, self.metrics_port)
        log.info("%s %s serving gRPC on %s%s", self.role, self.id, self.address,
                 f", metrics on {self.metrics_address}" if self.metrics_address else "")

    def renew_lease(self) -> None:
        self.store.put_lease(self.role, self.id, self.address, self.lease_ttl)
        if not self._lease_held:
            self._lease_held = True
            log.info("%s %s holds its lease (ttl %.1f s)", self.role, self.id, self.lease_ttl)

    def leases_forever(self) -> None:
        """Renew the lease a few times per TTL until stopped (runs on its own thread)."""
        while not self.stop_event.wait(self.lease_ttl / 4):
            self.health.beat("leases")
            try:
                self.renew_lease()
            except Exception as e:  # the store may be down for a moment: keep trying
                self.counters["lease_errors"] += 1
                if self._lease_held:
                    self._lease_held = False
                    log.warning("%s %s cannot renew its lease: %s", self.role, self.id, e)

    def loop_forever(self, step, name: str = "main") -> None:
        """Call `step` until stopped, beating the liveness check `name` each time round. A
        failing step is logged (each distinct error once, with its traceback), counted and
        retried after a pause: the store is the source of truth and every loop resumes from
        the last event it applied, so nothing is lost by trying again. A store outage is
        expected now and then and says so (and fails readiness meanwhile); anything else is a
        bug, logged as an error."""
        outage = False
        while not self.stop_event.is_set():
            self.health.beat(name)
            try:
                step()
                if outage:
                    outage = self.store_outage = False
                    log.info("store reachable again")
            except StoreUnavailable as e:
                self.counters["loop_errors"] += 1
                if not outage:
                    outage = self.store_outage = True
                    log.warning("store unavailable, retrying: %s", e)
                self.stop_event.wait(0.2)
            except Exception as e:
                self.counters["loop_errors"] += 1
                self.errors.error(f"{self.role} {self.id} loop step failed", e)
                self.stop_event.wait(0.2)

    def start(self, *background) -> None:
        """After the initial list: settle the heap, listen, take the lease, start the
        background threads. The heap is settled first, before anyone can find this process
        by its lease (a freeze, no collection since `freeze_before_list`: when it was a full
        collection over a shard's 200,000 running pods it held the GIL for seconds after the
        lease was taken, the lease expired before its first renewal, and the dispatcher
        dropped the shard it had just found)."""
        settle_heap()
        self.serve()
        self.renew_lease()
        self.start_background(*background)

    def start_background(self, *targets) -> list[threading.Thread]:
        """The lease's renewals and the role's `targets`, each on a thread of its own."""
        threads = [threading.Thread(target=t, name=f"{self.role}-{self.id}-{t.__name__}", daemon=True)
                   for t in (self.leases_forever, *targets)]
        for t in threads:
            t.start()
        return threads

    def shutdown(self) -> None:
        log.info("%s %s shutting down", self.role, self.id)
        self.stop_event.set()
        if self.server is not None:
            self.server.stop(grace=1.0)
        try:
            self.store.drop_lease(self.role, self.id, self.address)
        except Exception as e:
            log.warning("could not drop the lease (it expires by itself): %s", e)
        self.tracer.shutdown()


def settle_heap() -> None:
    """Take everything allocated so far out of the cyclic garbage collector's walks.

    A shard or binder holds millions of long-lived objects (nodes, pods, node infos) after
    its initial list. Without this, every full collection walks all of them, and parsing
    events allocates enough to trigger one every few hundred pods: profiles showed those
    pauses as a quarter of a shard's time. A larger young-generation threshold also makes
    the small collections rarer; nothing here creates cycles that need prompt collection.

    It freezes without collecting first: the list builds no cyclic garbage (a collection
    after listing 100,000 pods found none), and that one full collection over everything
    the list built was most of the time from listed to ready (1.5-2.7 s of a shard's 72 s
    over a million pods). Nor does the runner's `freeze_before_list`, over the imports.
    """
    pauses = gcstats.install()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    gc.enable()  # (a process's runner disables it while the initial lists load)
    pauses.ready()


def freeze_before_list() -> None:
    """Freeze what the imports and the component's set-up left, then keep the cyclic
    collector off while the initial lists load: they build what the process keeps (no
    cyclic garbage), and each full collection would walk all of it again; `settle_heap`
    freezes that too and turns collection back on.

    No collection first: over the imports it found nothing to free (a kube:// shard, binder
    or dispatcher just built) and cost each process 10-20 ms of CPU, all four at once at
    start on the cores the API server serves their lists from. Whatever cyclic garbage the
    imports might leave is kept: a few objects, once."""
    gc.disable()
    gc.freeze()


def stop_on_signals(component: Component) -> None:
    """SIGTERM and SIGINT stop the component's loops (the main thread then shuts down).

    SIGHUP is logged and otherwise ignored: by Python's default it killed the process (and
    `up` restarted it), whether it came from a closed terminal (`up` stops its children
    itself then) or from an operator who expected a reload, which no process does: the
    configuration is read once, at start."""
    def handler(signum, frame):
        component.stop_event.set()

    def hangup(signum, frame):
        # logged from a thread: the handler may interrupt the main thread inside logging's lock
        threading.Thread(target=log.info, name="sighup", daemon=True, args=(
            "%s %s: SIGHUP ignored (the configuration is read only at start: restart the process "
            "to apply a new one)", component.role, component.id)).start()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, hangup)


def status_of(address: str, security: Security, timeout: float = 5.0):
    """The Status reply of the process listening at `address` (raises grpc.RpcError)."""
    with security.channel(address) as ch:
        return rpc.ComponentStub(ch).Status(pb.StatusRequest(), timeout=timeout)
