"""Preemption at fleet scale, with and without priority prefix-sum pruning.

    python -m benchmarks.preemption --nodes 20000 --json FILE

The fleet is the mixed kwok fleet, every node filled to 90% of its cpu with 1-cpu pods. Most
nodes run services: their pods have priority 1000, with 2% at priority 100. One node in 200
runs batch work: 80% of its pods have priority 0. So preemption is possible on few nodes, as
on a cluster where most capacity belongs to protected workloads.

- `infeasible`: a priority-500 pod asking for 100 cpu, more than any untainted node has: no
  preemption can place it. One whole failed cycle (filter scan, then PostFilter) is timed.
- `throughput`: a burst of priority-500 pods asking for 16 cpu each, more than any node has
  free, so each must preempt on a batch node. Each decision is applied to the cache (victims
  removed, the pod assumed) before the next cycle, as the shard does.

The baseline is the same code with pruning off (`preemption.pruning: false`): every node
whose rejection preemption could fix gets a dry run, as in kube-scheduler. The two run on
two identical caches built from the same seed; the chosen nodes and victims must agree.
"""
from __future__ import annotations

import random
import statistics
import time

from common import config
from common.tools.fleet import generate
from common.model.objects import parse_node
from shard.cache import ShardCache
from shard.scheduler import Scheduler

from . import harness
from .fill import instance, template_pod

FILL = 0.9
BATCH_NODE_SHARE = 1 / 200


def preemption_cache(nodes: int, seed: int) -> ShardCache:
    """The fleet described in the module docstring; deterministic for a seed."""
    rng = random.Random(seed)
    shapes = {prio: template_pod(1000, 256, prio) for prio in (0, 100, 1000)}
    cache = ShardCache()
    serial = 0
    for d in generate(nodes, "mixed", seed):
        node = parse_node(d)
        cache.set_node(node)
        batch = rng.random() < BATCH_NODE_SHARE
        for _ in range(int(node.allocatable[0] * FILL) // 1000):
            serial += 1
            if batch:
                prio = 0 if rng.random() < 0.8 else 1000
            else:
                prio = 100 if rng.random() < 0.02 else 1000
            cache.set_pod(instance(shapes[prio], f"fill-{serial}", node.name, start=float(serial)))
    return cache


def scheduler(cache, seed: int, pruning: bool) -> Scheduler:
    s = Scheduler(config.defaults(), cache, seed=seed, preemption_pruning=pruning)
    s.refresh()
    return s


def cycle(s: Scheduler, pod):
    s.refresh()
    return s.schedule(pod)


def infeasible(fast: Scheduler, slow: Scheduler, repeat: int) -> dict:
    pod = template_pod(100_000, 256, 500)
    for s in (fast, slow):
        result = cycle(s, pod)
        assert not result.scheduled and not result.victims
    timed = harness.time_ms(lambda: cycle(fast, pod), repeat)
    baseline = harness.time_ms(lambda: cycle(slow, pod), max(3, repeat // 50))
    return harness.latency(timed, baseline)


def burst(s: Scheduler, pods: int) -> tuple[float, list]:
    """Schedule `pods` preemptors one after another; (pods/s, the decisions)."""
    big = template_pod(16_000, 256, 500)
    decisions = []
    start = time.perf_counter()
    for i in range(pods):
        pod = instance(big, f"preemptor-{i}")
        result = cycle(s, pod)
        assert result.scheduled and result.victims, f"{pod.key} found no victims"
        for v in result.victims:
            s.cache.remove_pod(v.key)
        s.cache.assume(pod, result.node)
        decisions.append((result.node, sorted(v.key for v in result.victims)))
    return pods / (time.perf_counter() - start), decisions


def run(args) -> dict:
    t = time.perf_counter()
    caches = [preemption_cache(args.nodes, args.seed) for _ in range(2)]
    pods = sum(len(info.pods) for _, info in caches[0].nodes.items())
    print(f"built 2 x {args.nodes} nodes, {pods} pods in {time.perf_counter() - t:.1f} s")
    fast, slow = scheduler(caches[0], args.seed, True), scheduler(caches[1], args.seed, False)
    results = {"infeasible": infeasible(fast, slow, args.repeat)}
    rate, chosen = burst(fast, args.burst)
    base_rate, base_chosen = burst(slow, args.burst)
    assert chosen == base_chosen, "pruning changed a decision"
    results["throughput"] = {"pods_per_s": round(rate, 2), "baseline_pods_per_s": round(base_rate, 2),
                             "ratio": round(rate / base_rate, 1),
                             "victims_per_pod": round(statistics.mean(len(v) for _, v in chosen), 1)}
    return results


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=200, help="timed infeasible cycles")
    p.add_argument("--burst", type=int, default=30, help="preemptors in the throughput burst")
    args = p.parse_args(argv)
    results = run(args)
    return harness.report(f"preemption, {args.nodes} mixed nodes filled to 90% (ms, pods/s; "
                          "baseline = no pruning)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
