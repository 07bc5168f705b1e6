"""The multi-process runtime end to end on a real redis-server, including kill -9 faults.

Every test starts its own redis-server and processes (dispatcher, shards, binder) on free
ports, creates a small fleet and a few thousand pods, and waits until every schedulable pod
is bound. Then it checks the store: every pod bound exactly once, no node over its
allocatable, no host port used twice on a node.
"""
from __future__ import annotations

import contextlib
import time

import pytest
import redis as redis_py

from common import config
from common.tools import fleet
from common.store import open_store
from common.store.embedded import EmbeddedRedis
from common.tools.local_cluster import LocalCluster
from common.tools.verify import verify_store
from builders import numbered_pod as pod, stack_config

NODES = 60
TIMEOUT_S = 120


def runtime_config(shards: int = 2, binders: int = 1, **sections) -> config.Config:
    """Free ports, metrics off (fixed ports clash with other runs on the machine)."""
    # A standby (another replica) waits for the leader lease to expire.
    election = {"leaseDurationSeconds": 3, "renewDeadlineSeconds": 2, "retryPeriodSeconds": 0.5,
                **sections.pop("leaderElection", {})}
    return stack_config(shards={"count": shards}, binders={"count": binders},
                        dispatcher={"shardTimeoutSeconds": 2, "redispatchAfterSeconds": 5},
                        leaderElection=election, **sections)


@contextlib.contextmanager
def _env(tmp_path, **redis_options):
    """A fresh redis-server with a small mixed fleet; yields (server, store, start)."""
    started = []
    with EmbeddedRedis(**redis_options) as server:
        store = open_store(server.url)
        store.create_many(fleet.generate(NODES, "mixed", seed=1))

        def start(cfg=None, **opts) -> LocalCluster:
            # metrics on free ports: fixed ones collide with any other stack on the machine
            opts.setdefault("free_metrics_ports", True)
            c = LocalCluster(cfg or runtime_config(), server.url, log_dir=str(tmp_path), **opts)
            started.append(c)
            c.start()
            return c

        try:
            yield server, store, start
        finally:
            for c in started:
                c.stop()
            store.close()
            _print_warnings(tmp_path)


def _print_warnings(log_dir) -> None:
    """The processes' warnings and errors, for the report of a failed test (pytest shows a
    fixture's output only then): what CI printed of a stall was the count of bound pods."""
    for path in sorted(log_dir.glob("*.log")):
        lines = [ln for ln in path.read_text(errors="replace").splitlines()
                 if "WARNING" in ln or "ERROR" in ln or "Traceback" in ln]
        if lines:
            print(f"--- {path.name}: {len(lines)} warnings/errors, the last 20:")
            print("\n".join(lines[-20:]))


@pytest.fixture
def cluster_env(tmp_path):
    """A fresh redis-server with a small mixed fleet; yields (url, store, start)."""
    with _env(tmp_path) as (server, store, start):
        yield server.url, store, start


@pytest.fixture
def restartable_env(tmp_path):
    """cluster_env whose server can be saved and restarted (EmbeddedRedis.save/restart);
    yields (server, store, start)."""
    with _env(tmp_path) as env:
        yield env


def wait_bound(store, expected: int, during=None, timeout: float = TIMEOUT_S) -> list[dict]:
    """Poll until `expected` pods are bound; `during(bound)` runs between polls."""
    deadline = time.monotonic() + timeout
    while True:
        pods, _ = store.list("Pod")
        bound = sum(1 for p in pods if p["spec"].get("nodeName"))
        if bound >= expected:
            return pods
        if during is not None:
            during(bound)
        if time.monotonic() > deadline:
            raise AssertionError(f"only {bound}/{expected} pods bound after {timeout} s")
        time.sleep(0.2)


def assert_consistent(store) -> None:
    """No overcommitted node, no shared host port, every bound pod on a real node it may use."""
    report = verify_store(store)
    assert report["ok"], report["violations"][:5]


def test_pods_flow_through_dispatcher_shards_and_binder(cluster_env):
    url, store, start = cluster_env
    cluster = start()
    assert not store.create_many([pod(i) for i in range(1500)])
    wait_bound(store, 1500)
    assert_consistent(store)
    leases = cluster.wait_ready()
    per_shard = {id_: cluster.status("shard", a).counters["bound"] for id_, a in leases["shard"].items()}
    assert sum(per_shard.values()) == 1500
    binder = cluster.status("binder", leases["binder"]["0"])
    assert binder.counters["bound"] == 1500


def test_host_ports_and_capacity_conflicts_are_resolved_by_the_binder(cluster_env):
    """Two shards race for scarce slots: each node has one port 8080 and the pods are big."""
    url, store, start = cluster_env
    start()
    untainted = sum(1 for d in store.list("Node")[0] if not d["spec"].get("taints"))
    assert not store.create_many([pod(i, cpu="1", port=8080) for i in range(NODES + 20)])
    pods = wait_bound(store, untainted, timeout=60)
    time.sleep(1.0)
    assert_consistent(store)
    unbound = [p for p in store.list("Pod")[0] if not p["spec"].get("nodeName")]
    assert unbound, "more pods than ports: some must stay pending"
    assert len(pods) == NODES + 20


def flow_with_fault(store, total: int, fault, first: int = 500) -> list[dict]:
    """Create `first` pods, call `fault(bound)` once some of them are bound, then create the
    rest and wait for all: the fault always strikes while pods flow (triggering on a bound
    count alone raced the scheduler, which could bind them all between two polls)."""
    store.create_many([pod(i) for i in range(first)])
    deadline = time.monotonic() + TIMEOUT_S
    while not (bound := sum(1 for p in store.list("Pod")[0] if p["spec"].get("nodeName"))):
        assert time.monotonic() < deadline, "nothing was bound"
        time.sleep(0.05)
    fault(bound)
    store.create_many([pod(i) for i in range(first, total)])
    return wait_bound(store, total)


def test_kill_9_of_a_shard_loses_no_pod(cluster_env):
    url, store, start = cluster_env
    cluster = start()
    killed = []

    def kill_once(bound):
        cluster.kill("shard", 0)
        killed.append(bound)

    flow_with_fault(store, 2000, kill_once)
    assert killed, "the shard finished before it could be killed"
    assert_consistent(store)


@pytest.mark.parametrize("role", ["binder", "dispatcher"])
def test_kill_9_and_restart(cluster_env, role):
    url, store, start = cluster_env
    cluster = start()
    restarted = []

    def crash(bound):
        cluster.kill(role, 0)
        cluster.start_one(role, 0)
        restarted.append(bound)

    flow_with_fault(store, 2000, crash)
    assert restarted
    assert_consistent(store)


def test_dropped_redis_connections_are_survived(cluster_env):
    url, store, start = cluster_env
    start()
    admin = redis_py.Redis.from_url(url)
    dropped = []
    # Each batch is still being dispatched and scheduled when the connections drop (waiting
    # for a count of bound pods instead raced the scheduler: it could bind them all first).
    for batch in range(3):
        store.create_many([pod(i) for i in range(batch * 500, (batch + 1) * 500)])
        time.sleep(0.1)
        dropped.append(admin.client_kill_filter(_type="normal", skipme=True))
    wait_bound(store, 1500)
    assert all(n > 0 for n in dropped), dropped
    assert_consistent(store)


def test_malformed_pod_is_reported_and_the_rest_flows(cluster_env):
    url, store, start = cluster_env
    start()
    bad = pod(0, name="bad")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "four"
    bad["metadata"].update(uid="uid-bad-0", creationTimestamp="2026-11-22T00:00:00Z")
    # Another client wrote it past validation (a real API server accepts more than we do).
    store._put_rows("Pod", "create", [("default/bad-0", bad, "")])
    store.create_many([pod(i) for i in range(300)])
    wait_bound(store, 300)
    deadline = time.monotonic() + 30
    while True:
        conditions = (store.get("Pod", "default/bad-0").get("status") or {}).get("conditions") or []
        messages = [c.get("message", "") for c in conditions if c.get("type") == "PodScheduled"]
        if any("spec.containers[0].resources.requests.cpu" in m for m in messages):
            break
        assert time.monotonic() < deadline, f"bad pod not reported: {conditions}"
        time.sleep(0.2)


def scrape(address: str) -> dict[str, list]:
    """Metric family name -> samples, from a process's /metrics endpoint."""
    from urllib.request import urlopen

    from prometheus_client.parser import text_string_to_metric_families

    with urlopen(f"http://{address}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_every_process_serves_its_metrics_with_shard_labels(cluster_env):
    url, store, start = cluster_env
    cluster = start(free_metrics_ports=True)
    store.create_many([pod(i) for i in range(300)] + [pod(i, cpu="500", name="huge") for i in range(3)])
    wait_bound(store, 300)
    time.sleep(1.5)  # let the shards report queue lengths and the dispatcher its gauges
    leases = cluster.wait_ready()
    shard_series = ["scheduler_schedule_attempts", "scheduler_scheduling_attempt_duration_seconds",
                    "scheduler_pending_pods", "scheduler_pod_scheduling_attempts",
                    "scheduler_framework_extension_point_duration_seconds",
                    "scheduler_scheduling_algorithm_duration_seconds", "scheduler_pod_scheduling_sli_duration_seconds",
                    "scheduler_queue_incoming_pods",
                    "shardsched_feasible_node_threshold", "shardsched_nodes_evaluated",
                    "shardsched_snapshot_update_duration_seconds", "shardsched_snapshot_nodes_cloned"]
    scheduled = unschedulable = 0
    for id_, address in leases["shard"].items():
        families = scrape(cluster.status("shard", address).metrics)
        for name in shard_series:
            assert families.get(name), f"shard {id_}: no {name}"
            assert all(s.labels["shard"] == id_ for s in families[name]), name
        results = {s.labels["result"]: s.value for s in families["scheduler_schedule_attempts"]
                   if s.name.endswith("_total")}
        scheduled += results.get("scheduled", 0)
        # the three huge pods' shard(s) (the dispatcher may hand all three to one) park them
        if results.get("unschedulable", 0):
            unschedulable += results["unschedulable"]
            parked = families.get("scheduler_unschedulable_pods")
            assert parked and all(s.labels["shard"] == id_ for s in parked), f"shard {id_}: no scheduler_unschedulable_pods"
        assert "scheduler_preemption_attempts" in families
    # attempts, not pods: a decision refused or withdrawn (a busy machine) is tried again
    assert scheduled >= 300 and unschedulable >= 3
    binder = scrape(cluster.status("binder", leases["binder"]["0"]).metrics)
    bound = [s for s in binder["shardsched_binder_outcomes"] if s.labels["reason"] == "Bound"
             and s.name.endswith("_total")]
    assert sum(s.value for s in bound) == 300
    assert {s.labels["shard"] for s in bound} <= set(leases["shard"])
    dispatcher = scrape(cluster.status("dispatcher", leases["dispatcher"]["0"]).metrics)
    up = {s.labels["shard"]: s.value for s in dispatcher["shardsched_shard_up"]}
    assert up == {id_: 1.0 for id_ in leases["shard"]}
    assert {s.labels["shard"] for s in dispatcher["shardsched_dispatcher_pods_in_flight"]} == set(leases["shard"])


def test_top_shows_every_shard_and_binder(cluster_env):
    import io

    from rich.console import Console

    from common.tools import top

    url, store, start = cluster_env
    cluster = start()
    store.create_many([pod(i) for i in range(200)])
    wait_bound(store, 200)
    dispatcher = cluster.wait_ready()["dispatcher"]["0"]
    out = io.StringIO()
    top.run(dispatcher, None, cluster.security, interval=0.2, iterations=2, console=Console(file=out, width=200))
    text = out.getvalue()
    for name in ("shard 0", "shard 1", "binder 0"):
        assert name in text
    bound_column = [line.split("│")[8].strip() for line in text.splitlines() if "│ shard" in line]
    assert sum(int(x) for x in bound_column[-2:]) == 200  # the last refresh's rows


def test_two_binders_each_commit_their_own_nodes(cluster_env):
    from common.scheduling.partition import PARTITION_ROLE, partition_of
    from common.model.objects import parse_node

    url, store, start = cluster_env
    cluster = start(runtime_config(shards=2, binders=2))
    leases = cluster.wait_ready()
    own = {"0": leases["binder"]["0"], "1": leases["binder"]["1"]}
    # The binders start together: one that saw no other at first holds both partitions until
    # the other's lease shows, then hands the extra one over. Wait for that before the flow.
    deadline = time.monotonic() + 30
    while store.list_leases(PARTITION_ROLE) != own:
        assert time.monotonic() < deadline, f"partitions never settled: {store.list_leases(PARTITION_ROLE)}"
        time.sleep(0.1)
    store.create_many([pod(i) for i in range(600)])
    pods = wait_bound(store, 600)
    assert_consistent(store)
    counts = {id_: cluster.status("binder", a).counters["bound"] for id_, a in leases["binder"].items()}
    assert store.list_leases(PARTITION_ROLE) == own
    expected = {"0": 0, "1": 0}
    for p in pods:
        node = parse_node(store.get("Node", p["spec"]["nodeName"]))
        expected[str(partition_of(node, 2, "topology.kubernetes.io/zone"))] += 1
    assert counts == expected and min(counts.values()) > 0


def test_a_standby_binder_takes_over_a_killed_binders_partition(cluster_env):
    """kill -9 of the binder holding the only partition while pods flow, with a standby
    replica running: the standby takes the partition over once its lease expires, and every
    pod is bound exactly once."""
    from common.scheduling.partition import PARTITION_ROLE

    url, store, start = cluster_env
    cfg = runtime_config().replace(binders={"lease_duration_seconds": 2})
    cluster = start(cfg)
    cluster.start_one("binder", 1)  # the standby
    leases = cluster.wait_ready()
    holder = store.list_leases(PARTITION_ROLE)["0"]
    assert holder == leases["binder"]["0"]
    took_over = []

    def kill_the_holder(bound):
        cluster.kill("binder", 0)
        killed_at = time.monotonic()
        while (now_holder := store.list_leases(PARTITION_ROLE).get("0")) in (None, holder):
            assert time.monotonic() - killed_at < 30, "nobody took the partition over"
            time.sleep(0.05)
        took_over.append(time.monotonic() - killed_at)
        print(f"partition 0 taken over by {now_holder} {took_over[0]:.1f} s after the kill -9")

    flow_with_fault(store, 2000, kill_the_holder)
    assert took_over and took_over[0] < 2 * cfg.binders.lease_duration_seconds + 2
    assert_consistent(store)


@pytest.mark.parametrize("pods, shards, wait_s, big_nodes", [(10, 2, 10, 1), (300, 2, 8, 5)])
def test_pods_that_fit_nowhere_are_placed_once_a_node_comes(cluster_env, pods, shards, wait_s, big_nodes):
    """Pods that fit nowhere are re-dispatched every 2 s while they wait; once big enough
    nodes are added, every one is bound. Shards used to ignore a pod from its third dispatch
    on (a version they had seen), so none ever was, however long one waited."""
    url, store, start = cluster_env
    cfg = runtime_config(shards=shards).replace(dispatcher={"redispatch_after_seconds": 2})
    start(cfg)
    store.create_many([pod(i, cpu="100", name="huge") for i in range(pods)])
    time.sleep(wait_s)
    assert not any(p["spec"].get("nodeName") for p in store.list("Pod")[0])
    store.create_many([dict(node, metadata={**node["metadata"], "name": f"big-{i}"})
                       for i, node in enumerate(fleet.generate(big_nodes, "uniform", seed=2))
                       for node in [_big(node)]])
    wait_bound(store, pods, timeout=90)
    assert_consistent(store)


def _big(node: dict) -> dict:
    """A kwok node with room for 100 cpu pods: 100 x 100 cpu, 110 pods."""
    node = dict(node)
    alloc = {"cpu": "10000", "memory": "100Ti", "pods": "110"}
    node["status"] = {**node["status"], "allocatable": alloc, "capacity": alloc}
    return node


def test_poison_records_are_skipped_and_every_pod_still_bound(cluster_env):
    """Malformed entries in the event stream (not an event, invalid JSON, metadata a list)
    and a pod hash entry without its state record, written while pods flow: every process
    skips and counts them and goes on; they used to stop all four from applying events."""
    url, store, start = cluster_env
    cluster = start()
    r = redis_py.Redis.from_url(url)

    def poison(bound):
        r.xadd("shardsched:events", {"garbage": "x"})
        r.xadd("shardsched:events", {"prev": "0-0", "t": "ADDED", "k": "Pod", "n": "default/bad", "o": "{not json"})
        r.xadd("shardsched:events", {"prev": "0-0", "t": "ADDED", "k": "Pod", "n": "default/bad",
                                     "o": '{"kind": "Pod", "metadata": []}'})
        r.hset("shardsched:obj:Pod", "default/orphan", '{"kind": "Pod", "metadata": {"name": "orphan"}}')

    flow_with_fault(store, 1500, poison)
    assert_consistent(store)
    leases = cluster.wait_ready()
    for role in ("dispatcher", "shard", "binder"):
        for address in leases[role].values():
            assert cluster.status(role, address).counters["skipped_records"] >= 3, role


def test_a_store_restarted_from_an_older_snapshot_is_noticed(restartable_env):
    """Redis comes back from a snapshot taken while 600 pods were pending, after the scheduler
    had bound them: the store says pending again, every process had seen them bound. The
    processes notice that the history went back, relist, and bind them again; they used to
    wait for events that never came, and the pods stayed pending."""
    server, store, start = restartable_env
    cluster = start()
    cluster.kill("dispatcher", 0)
    store.create_many([pod(i) for i in range(600)])
    server.save()
    cluster.start_one("dispatcher", 0)
    wait_bound(store, 600)
    server.restart()
    assert not any(p["spec"].get("nodeName") for p in store.list("Pod")[0])
    wait_bound(store, 600, timeout=60)
    assert_consistent(store)


def test_a_store_restarted_empty_is_noticed(restartable_env):
    """Redis comes back empty (no persistence); a client recreates the fleet and creates new
    pods: every process relists and they are all bound. Each batch takes two thirds of the
    cluster's cpu, so a process still counting the pods the store lost would find no room
    for most of the new ones."""
    server, store, start = restartable_env
    start()
    store.create_many([pod(i, cpu="2") for i in range(600)])
    wait_bound(store, 600)
    server.restart()
    store.create_many(fleet.generate(NODES, "mixed", seed=1))
    store.create_many([pod(i, cpu="2", name="after") for i in range(600)])
    wait_bound(store, 600, timeout=60)
    assert_consistent(store)


def test_a_standby_dispatcher_takes_over_when_the_leader_is_killed(cluster_env):
    """kill -9 of the leading dispatcher while pods flow, a standby running: the standby takes
    the leader lease over once it expires, adopts the pods the shards hold (here the ones that
    fit nowhere, parked in the shards), and every pod is bound exactly once."""
    from urllib.request import urlopen

    from common.runtime.identity import replica_identity
    from common.runtime.leader_election import ELECTION_ROLE

    url, store, start = cluster_env
    cfg = runtime_config()
    name = cfg.leader_election.resource_name
    cluster = start(cfg, free_metrics_ports=True)
    store.create_many([pod(i, cpu="500", name="huge") for i in range(20)])
    cluster.start_one("dispatcher", 1)
    deadline = time.monotonic() + 30
    while "1" not in (dispatchers := store.list_leases("dispatcher")):
        assert time.monotonic() < deadline, "the standby never started"
        time.sleep(0.1)
    leader, standby = dispatchers["0"], dispatchers["1"]
    standby_identity = replica_identity(cfg.leader_election.identity, "dispatcher", "1")
    assert store.list_leases(ELECTION_ROLE) == {
        name: replica_identity(cfg.leader_election.identity, "dispatcher", "0")}
    reply = cluster.status("dispatcher", standby)
    assert reply.counters["leader"] == 0 and reply.queues["pending"] >= 20, "a standby follows the pods"
    with urlopen(f"http://{reply.metrics}/readyz", timeout=5) as resp:
        assert resp.status == 200, "a standby is ready"
    while sum(cluster.status("shard", a).queues.get("unschedulable", 0)
              for a in store.list_leases("shard").values()) < 20:
        assert time.monotonic() < deadline, "the huge pods never reached the shards"
        time.sleep(0.1)
    took_over = []

    def kill_the_leader(bound):
        cluster.kill("dispatcher", 0)
        killed_at = time.monotonic()
        while store.list_leases(ELECTION_ROLE).get(name) != standby_identity:
            assert time.monotonic() - killed_at < 30, "the standby never took over"
            time.sleep(0.05)
        took_over.append(time.monotonic() - killed_at)

    flow_with_fault(store, 3000, kill_the_leader)
    assert_consistent(store)
    after = cluster.status("dispatcher", standby)
    binders = store.list_leases("binder")
    bound = sum(cluster.status("binder", a).counters["bound"] for a in binders.values())
    print(f"leader killed; the standby led {took_over[0]:.2f} s later (leaseDurationSeconds "
          f"{cfg.leader_election.lease_duration_seconds}), adopted {after.counters['adopted']} pods "
          f"the shards held, re-dispatched {after.counters['redispatched']}; bindings: {bound} for 3000 pods")
    assert after.counters["leader"] == 1 and after.counters["adopted"] >= 20
    assert bound == 3000, "a pod was bound twice, or one went unbound"
    assert took_over[0] < cfg.leader_election.lease_duration_seconds + 3


def test_each_pods_trip_is_one_trace_across_the_processes(cluster_env, tmp_path):
    """tracing.enabled (every pod sampled, spans appended to a file by every process): each
    bound pod has a dispatch span (the dispatcher), a scheduling cycle that placed it, its
    child (a shard), and the commit that bound it, the cycle's child (the binder)."""
    import json

    url, store, start = cluster_env
    spans_file = tmp_path / "spans.jsonl"
    cluster = start(runtime_config(tracing={"enabled": True, "exporter": "file", "file": str(spans_file),
                                            "samplingRatePerMillion": 1000000}))
    assert not store.create_many([pod(i) for i in range(30)])
    wait_bound(store, 30)
    cluster.stop()  # each process exports what it buffered as it stops
    spans = [json.loads(line) for line in spans_file.read_text().splitlines() if line.strip()]
    by_id = {s["context"]["span_id"]: s for s in spans}
    services = {s["resource"]["attributes"]["service.name"] for s in spans}
    assert services == {"shardsched-dispatcher", "shardsched-shard", "shardsched-binder"}
    commits = [s for s in spans if s["name"] == "commit" and s["attributes"]["result"] == "bound"]
    assert {s["attributes"]["pod"] for s in commits} == {f"default/p-{i}" for i in range(30)}
    for commit in commits:
        cycle = by_id[commit["parent_id"]]
        dispatch = by_id[cycle["parent_id"]]
        assert (cycle["name"], dispatch["name"]) == ("schedule", "dispatch")
        assert cycle["attributes"]["result"] == "scheduled"
        assert cycle["attributes"]["node"] == commit["attributes"]["node"]
        assert dispatch["parent_id"] is None
        assert commit["context"]["trace_id"] == cycle["context"]["trace_id"] == dispatch["context"]["trace_id"]
