"""What the embedded bench's own processes spend per pod, against the forms before issue 31's
cuts, in one run: the load generator, the kubelet-like churn and the store's admission
share the machine's two cores with the scheduler they measure.

    python -m benchmarks.harness_cost --pods 3000 --json FILE

- running: a bound pod made Running as kwok leaves it (benchmarks/churn.py `running`: a new
  document and status, the rest shared) against a deep copy of the pod changed the same way;
- heartbeat: a node's status heartbeat (`heartbeat`, the changed parts copied) against a deep
  copy of the node;
- timestamp: `now_rfc3339` (formatted once per second) against datetime's strftime per call;
- limits: `check_object`'s quick pass over a Running pod (`_plain`: leaves judged where their
  container is walked) against the walk that pushed every value (`pushed_every_value`);
- create_paced: the bench's pod creator at 1,000 pods/s into an embedded Redis for the
  length of `--pods` (`paced`: calls at most every CREATE_TICK_S) against a call per pod as
  it fell due; CPU of this process per pod (process time), and Redis's (its own counters).

Each item is {"optimised_ms", "baseline_ms", "ratio"} with medians over the repeats (per
`--pods` objects; create_paced per pod in microseconds of CPU, each side's run alternating).
"""
from __future__ import annotations

import copy
import math
import time
from datetime import datetime, timezone

import redis

from common.model.limits import INT64_MIN, MAX_NESTING_DEPTH, _plain
from common.model.resources import INT64_MAX
from common.store.base import prepare
from common.store.embedded import EmbeddedRedis
from common.store.redis_store import RedisStore
from common.store.podstatus import now_rfc3339
from common.tools.fleet import generate

from . import harness
from .churn import heartbeat, running
from .e2e import CREATE_TICK_S, create_pods
from .workloads import basic, mixed


def deep_running(pod: dict, when: str, pod_ip: str) -> dict:
    """`running` as it was: the whole pod deep-copied first."""
    out = copy.deepcopy(pod)
    status = out.setdefault("status", {})
    status.update(phase="Running", startTime=status.get("startTime") or when,
                  hostIP=status.get("hostIP") or "10.0.0.1", podIP=pod_ip)
    status["conditions"] = [{"type": t, "status": "True", "lastTransitionTime": when}
                            for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return out


def deep_heartbeat(node: dict, when: str) -> dict:
    """`heartbeat` as it was: the whole node deep-copied first."""
    out = copy.deepcopy(node)
    out["metadata"].pop("resourceVersion", None)
    for condition in out["status"].get("conditions", ()):
        condition["lastHeartbeatTime"] = when
    return out


def pushed_every_value(obj: dict) -> bool:
    """`_plain` as it was: every value, leaves too, through the stack."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        cls = value.__class__
        if cls is dict:
            if depth > MAX_NESTING_DEPTH:
                return False
            for k, v in value.items():
                if k.__class__ is not str:
                    return False
                stack.append((v, depth + 1))
        elif cls is list:
            if depth > MAX_NESTING_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in value)
        elif cls is str or value is None or cls is bool:
            continue
        elif cls is int:
            if not INT64_MIN <= value <= INT64_MAX:
                return False
        elif cls is float:
            if not math.isfinite(value):
                return False
        else:
            return False
    return True


def bound_pods(n: int, seed: int) -> list[dict]:
    """`n` pods of the mixed workload as the store holds them once bound."""
    out = []
    for i, p in enumerate(mixed(n, seed, 1000)):
        stored = prepare(p)[2]
        stored["metadata"]["resourceVersion"] = f"1-{i}"
        stored["spec"]["nodeName"] = f"kwok-node-{i % 1000}"
        stored["status"] = {"phase": "Running"}
        out.append(stored)
    return out


def compare_each(objs: list, optimised, baseline, repeat: int) -> dict:
    """Each function over every object, alternating repeat by repeat."""
    fast, slow = [], []
    for _ in range(repeat):
        fast += harness.time_ms(lambda: [optimised(o) for o in objs], 1)
        slow += harness.time_ms(lambda: [baseline(o) for o in objs], 1)
    return harness.compare(fast, slow)


def bench_documents(pods: int, seed: int, repeat: int) -> dict:
    bound = bound_pods(pods, seed)
    nodes = generate(max(1, pods // 10), "mixed", seed)
    when = "2026-11-26T10:00:00Z"
    for p in bound[:50]:
        assert running(p, when, "10.0.0.1") == deep_running(p, when, "10.0.0.1")
    for n in nodes[:50]:
        assert heartbeat(n, when) == deep_heartbeat(n, when)
    made_running = [running(p, when, "10.0.0.1") for p in bound]
    assert all(_plain(p) and pushed_every_value(p) for p in made_running)
    return {
        "running": compare_each(bound, lambda p: running(p, when, "10.0.0.1"),
                                lambda p: deep_running(p, when, "10.0.0.1"), repeat),
        "heartbeat": compare_each(nodes, lambda n: heartbeat(n, when), lambda n: deep_heartbeat(n, when), repeat),
        "timestamp": compare_each(range(pods), lambda _: now_rfc3339(),
                                  lambda _: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), repeat),
        "limits": compare_each(made_running, _plain, pushed_every_value, repeat),
    }


def _redis_cpu_us(raw) -> float:
    info = raw.info("cpu")
    return (info["used_cpu_sys"] + info["used_cpu_user"]) * 1e6


def bench_create_paced(pods: int, seed: int, repeat: int) -> dict:
    """Both creators at 1,000 pods/s, alternating, each into a fresh prefix of one server."""
    out: dict[str, list[float]] = {"tick": [], "per_pod": [], "redis_tick": [], "redis_per_pod": []}
    with EmbeddedRedis() as server:
        raw = redis.Redis.from_url(server.url)
        for r in range(repeat):
            for name, tick in (("tick", CREATE_TICK_S), ("per_pod", 0.0)):
                store = RedisStore(server.url, prefix=f"harness-cost-{r}-{name}:")
                manifests = basic(pods, seed, 100)
                cpu, redis_cpu = time.process_time(), _redis_cpu_us(raw)
                create_pods(store, manifests, 1000.0, {}, lambda n: None, tick=tick)
                out[name].append((time.process_time() - cpu) * 1e6 / pods)
                out[f"redis_{name}"].append((_redis_cpu_us(raw) - redis_cpu) / pods)
                store.close()
        raw.close()
    bench, store = harness.compare(out["tick"], out["per_pod"]), harness.compare(out["redis_tick"], out["redis_per_pod"])
    return {"create_paced_us_per_pod": bench, "create_paced_redis_us_per_pod": store}


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    results = bench_documents(args.pods, args.seed, args.repeat)
    results.update(bench_create_paced(args.pods, args.seed, max(2, args.repeat // 3)))
    return harness.report(f"the harness's own work, {args.pods} pods (medians, ratio = baseline / optimised)",
                          results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
