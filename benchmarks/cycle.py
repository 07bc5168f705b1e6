"""Scheduling-cycle latency at fleet scale, each case against its unoptimised variant.

    python -m benchmarks.cycle --nodes 20000 --json FILE

One cycle = snapshot update + PreFilter + the filter scan + scoring + selection, for one pod
on a mixed kwok fleet already holding `--pods-per-node` pods per node. The cluster does not
change between repeats (decisions are not assumed) except where a case says so.

Baselines, measured in the same run on the same cache:
- basic, node_affinity, topology_spread, pod_anti_affinity: the `kube` threshold
  (percentageOfNodesToScore's rule) and per-node filters instead of `adaptive` and the
  vectorised filters;
- daemonset: a pod pinned to one node by matchFields metadata.name, without unit locating;
- unschedulable_retry: a pod that fits nowhere, retried after 1% of the nodes changed,
  without the scheduling context. The snapshot has already taken in the changed nodes when
  the retry is timed: that update is paid once by whichever cycle comes next.
- spread_prefilter_honor: PodTopologySpread's PreFilter alone for a pod with a DoNotSchedule
  zone spread and nodeTaintsPolicy Honor (the mixed fleet's 15% tainted nodes), against the
  form before issue 31's per-pod costs, reproduced here: each tainted node's taints walked
  against the pod's tolerations, and the domains found by np.unique (a sort) instead of a
  count. Both must give the same minimum (asserted).
- plugin_clock: a basic pod's cycle as most cycles run it, reading no clock per plugin call
  (only one cycle in PLUGIN_SAMPLE times its plugins), against every cycle timing each plugin
  call, the upper bound of what the unsampled cycles paid when each call read the clock and
  handed its time to ScheduleResult.timed to be thrown away.
- vec_pass: the vectorised filters over one 512-row window for a pod of the mixed workload's
  GPU shape (two filters turn rows down) and a basic one (none does),
  `shard.scheduler.vec_pass`, against the loop before it, reproduced here (`_old_vec_pass`:
  the turned-down rows built for every filter). Both must pass and record the same rows
  (asserted).
- balanced_prescore: NodeResourcesBalancedAllocation's PreScore for a basic pod, its request
  arrays shared by pods of equal requests (a cache, as NodeResourcesFit's), against building
  them on every call as before (`_old_balanced_prescore`). Both must give the same arrays
  (asserted).
- taint_score: TaintToleration's vectorised score over 256 rows of the mixed fleet (which has
  no PreferNoSchedule taint): zeros at once, against the form before (`_old_taint_score`:
  the rows' bits gathered, masked and counted). Both must give the same scores (asserted).
- shard_metrics: the metrics of 256 cycles (a full pass) recorded and flushed in one batch
  (ShardMetrics.cycle holds them back, `flush` applies them), against observing each cycle's
  series at once as before, reproduced here (`_observe_at_once`). Both registries must scrape
  the same counts (asserted).

- resource_scores: NodeResourcesFit's and NodeResourcesBalancedAllocation's vectorised
  scores of a basic pod over the 100 rows a cycle scores, on the table's contiguous cpu and
  memory columns, in place, with no per-call check for nodes lacking either, against the
  forms before, reproduced here (`_old_fit_scores`, `_old_balanced_scores`: the full rows
  gathered, strided two-column views, a min reduction each). Both must give the same
  scores (asserted).
- row_write: the pod columns of 256 rows written (NodeTable._write_pods, what each cycle
  pays for the assumed pod's node and the other shards' binds), free subtracted in numpy, against the
  pod columns written as before (`_old_write_pods`: the node's allocatable padded again and
  free subtracted in Python). Both tables must hold the same columns (asserted).
- image_prescore: ImageLocality's PreScore for a basic pod on the kwok fleet (whose nodes
  report no images), skipping before it reads the pod's containers, against the form before
  (`_old_image_prescore`: the pod's images normalised, then looked up). Both must skip
  (asserted).
- queue_sort: Coscheduling's QueueSort `less` over every ordered pair of 40 queued pods of
  the mixed workload (no PodGroups; as a heap's pushes and pops compare them), two pods of
  equal priority in no group told apart by their group keys alone, against the form before
  (`_old_less`: both pods' order tuples built first). Both must order every pair alike
  (asserted).

Each item: {"median_ms", "p99_ms", "baseline_median_ms", "baseline_p99_ms", "ratio"}.
"""
from __future__ import annotations

import random
import time

import numpy as np

from common import config
from common.model.objects import parse_pod
from common.model.resources import BASE_RESOURCES, INT64_MAX
from common.runtime.metrics import ShardMetrics
from common.scheduling.predicates import untolerated_taint
from shard import scheduler as scheduler_module
from shard.diagnosis import Diagnosis
from shard.framework import CycleState
from shard.framework import SKIP, Status
from shard.node_table import gather
from shard.plugins.image_locality import _images
from shard.queue import QueuedPod
from shard.plugins.scoring import MAX_NODE_SCORE
from shard.scheduler import Scheduler, vec_pass

from . import harness
from .fill import fleet_cache, instance, template_pod
from .workloads import mixed

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
WEB = {"app": "web"}
WEB_SELECTOR = {"matchLabels": WEB}


def pod_templates() -> dict:
    """The pod of each case (DaemonSet pods get their node name per repeat)."""
    return {
        "basic": template_pod(100, 500),
        "node_affinity": template_pod(100, 500, affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]},
                                     {"key": "node.kubernetes.io/instance-type", "operator": "NotIn",
                                      "values": ["memory"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
                "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}]}}]}}),
        "topology_spread": template_pod(100, 500, labels=WEB, topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": WEB_SELECTOR},
            {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": WEB_SELECTOR}]),
        "pod_anti_affinity": template_pod(100, 500, labels=WEB, affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": WEB_SELECTOR, "topologyKey": HOSTNAME}]}}),
        "unschedulable_retry": template_pod(1_000_000, 500),
    }


def daemonset_pod(node: str):
    return template_pod(50, 64, owner=None, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
        tolerations=[{"operator": "Exists"}])


def scheduler(cache, seed: int, mode: str = "adaptive", **opts) -> Scheduler:
    cfg = config.defaults().replace(threshold={"mode": mode})
    s = Scheduler(cfg, cache, seed=seed, **opts)
    s.refresh()
    return s


def cycle(s: Scheduler, pod, last_generation: int = 0):
    s.refresh()
    return s.schedule(pod, last_generation=last_generation)


def measure(fn, repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    return harness.time_ms(fn, repeat)


def spread_honor_pod():
    return template_pod(100, 500, labels=WEB, topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": WEB_SELECTOR, "nodeTaintsPolicy": "Honor"}])


def _old_spread_min(table, pod, c, counts) -> tuple[int, np.ndarray]:
    """The PreFilter's minimum as computed before: a per-node taint walk, then np.unique."""
    n = len(table)
    ok = table.label_column(c.topology_key)[0][:n] != 0
    tolerated = np.ones(n, dtype=bool)
    for row in np.flatnonzero(ok & (table.taints[:n] != 0)):
        tolerated[row] = untolerated_taint(table.infos[row].node.taints, pod.tolerations) is None
    ok = ok & tolerated
    codes, sums = table.domain_counts(c.topology_key, counts, ok)
    domains = np.unique(codes[ok])
    domains = domains[domains != 0]
    low = int(sums[domains].min()) if len(domains) else 0
    return (0 if len(domains) < c.min_domains else low), ok


def bench_spread_prefilter(s: Scheduler, repeat: int) -> dict:
    """PodTopologySpread.pre_filter against _old_spread_min on the same table."""
    pod = spread_honor_pod()
    s.refresh()
    plugin = next(p for p in s.profile_for(pod).plugins if p.name == "PodTopologySpread")
    table = plugin.handle.table
    state = {}

    def new():
        plugin.pre_filter(state, pod)
    new()
    c = state["PodTopologySpread/filter"][0].constraint
    counts = table.pod_counts(("spread", pod.namespace, c.selector.key),
                              lambda p: p.namespace == pod.namespace and not p.deleting and c.selector.matches(p.labels))
    old_min, _ = _old_spread_min(table, pod, c, counts)
    assert state["PodTopologySpread/filter"][0].min == old_min
    return harness.latency(measure(new, repeat),
                           measure(lambda: _old_spread_min(table, pod, c, counts), max(5, repeat // 4)))


def _observe_at_once(m: ShardMetrics, result, seconds: float) -> None:
    """ShardMetrics.cycle before its observations were held back: every series at once."""
    s, series = m.shard, m._series
    profile = result.profile.name if result.profile is not None else ""
    outcome = "scheduled" if result.scheduled else "unschedulable"
    series(m.attempts, outcome, profile, s).inc()
    series(m.attempt_duration, outcome, profile, s).observe(seconds)
    status = "Success" if result.scheduled else "Unschedulable"
    for point, took in result.phases.items():
        series(m.extension_duration, point, status, profile, s).observe(took)
    series(m.algorithm_duration, s).observe(sum(result.phases.values()))
    for plugin, point, code, took in result.plugin_times or ():
        series(m.plugin_duration, plugin, point, code, s).observe(took)
    series(m.nodes_evaluated, s).observe(result.evaluated)
    series(m.threshold, s).set(result.threshold)
    series(m.snapshot_duration, s).observe(result.snapshot_s)
    if result.cloned:
        series(m.snapshot_cloned, s).inc(result.cloned)
    if result.skipped_by_context:
        series(m.context_skipped, s).inc(result.skipped_by_context)


def bench_shard_metrics(s: Scheduler, repeat: int) -> dict:
    """A pass of 256 cycles' metrics, held back and flushed, against observed at once."""
    pod = template_pod(100, 500)
    results = [s.schedule(pod) for _ in range(256)]  # one in PLUGIN_SAMPLE times its plugins
    held, at_once = ShardMetrics("0"), ShardMetrics("0")

    def batched():
        for r in results:
            held.cycle(r, 0.0004)
        held.flush()

    def old():
        for r in results:
            _observe_at_once(at_once, r, 0.0004)
    out = harness.latency(measure(batched, repeat), measure(old, repeat))
    count = "scheduler_scheduling_attempt_duration_seconds_count"
    labels = {"result": "scheduled", "profile": results[0].profile.name, "shard": "0"}
    assert held.registry.get_sample_value(count, labels) == at_once.registry.get_sample_value(count, labels)
    return out


def bench_plugin_clock(s: Scheduler, repeat: int) -> dict:
    """Unsampled cycles against cycles that all time their plugins (PLUGIN_SAMPLE = 1)."""
    pod = template_pod(100, 500)
    every = scheduler_module.PLUGIN_SAMPLE

    def sampled_every_cycle():
        scheduler_module.PLUGIN_SAMPLE = 1
        try:
            return measure(lambda: cycle(s, pod), repeat)
        finally:
            scheduler_module.PLUGIN_SAMPLE = every
    scheduler_module.PLUGIN_SAMPLE = 10**9  # (no sampled cycle among the timed ones)
    try:
        unsampled = measure(lambda: cycle(s, pod), repeat)
    finally:
        scheduler_module.PLUGIN_SAMPLE = every
    return harness.latency(unsampled, sampled_every_cycle())


def _old_vec_pass(vec, state, pod, table, rows, base, diag):
    """The filter loop of Scheduler._scan before vec_pass: every filter built the rows it
    turned down, and counted them."""
    alive = None
    for p in vec:
        ok = p.filter_vec(state, pod, table, rows)
        failed = ~ok if alive is None else alive & ~ok
        alive = ok if alive is None else alive & ok
        if np.count_nonzero(failed):
            diag.vec_failures.append((p, base[failed]))
            if not np.count_nonzero(alive):
                break
    return alive


def gpu_pod():
    """The mixed workload's GPU pod: a toleration, the GPU pool's affinity, one GPU."""
    return parse_pod(next(p for p in mixed(100, 1, 100) if p["metadata"]["name"].startswith("gpu-")))


def bench_vec_pass(s: Scheduler, repeat: int) -> dict:
    """One window's vectorised filters for two pods, each form in turn (the sum of both)."""
    s.refresh()
    table = s.table
    cases = []
    for pod in (template_pod(100, 500), gpu_pod()):
        profile = s.profile_for(pod)
        state = CycleState()
        assert s._pre_filter(profile, state, pod, Diagnosis(len(table)), s.schedule(pod))
        vec = s._filters(profile, state)[0]
        rows = slice(0, min(512, len(table)))
        cases.append((vec, state, pod, rows, np.arange(rows.start, rows.stop)))

    def each(form):
        out = []
        for vec, state, pod, rows, base in cases:
            diag = Diagnosis(len(table))
            out.append((form(vec, state, pod, table, rows, base, diag), diag.vec_failures))
        return out
    for (new, new_failed), (old, old_failed) in zip(each(vec_pass), each(_old_vec_pass)):
        assert np.array_equal(new, old)
        assert [(p.name, list(r)) for p, r in new_failed] == [(p.name, list(r)) for p, r in old_failed]
    return harness.latency(measure(lambda: each(vec_pass), repeat), measure(lambda: each(_old_vec_pass), repeat))


def _old_balanced_prescore(plugin, state, pod) -> None:
    """NodeResourcesBalancedAllocation.pre_score before its arrays were cached."""
    requests = pod.requests
    req = np.array([requests[c] if c < len(requests) else 0 for c in plugin.cols], dtype=np.int64)
    if not req.any():
        return
    use = np.array([c < len(BASE_RESOURCES) or r > 0 for c, r in zip(plugin.cols, req)], dtype=bool)
    state[plugin.name] = (req, use)


def bench_balanced_prescore(s: Scheduler, repeat: int) -> dict:
    """1,000 PreScore calls (a basic pod), each form."""
    pod = template_pod(100, 500)
    plugin = next(p for p in s.profile_for(pod).plugins if p.name == "NodeResourcesBalancedAllocation")
    new, old = {}, {}
    plugin.pre_score(new, pod, None)
    _old_balanced_prescore(plugin, old, pod)
    assert all(np.array_equal(a, b) for a, b in zip(new[plugin.name], old[plugin.name]))
    calls = range(1000)
    return harness.latency(measure(lambda: [plugin.pre_score(new, pod, None) for _ in calls], repeat),
                           measure(lambda: [_old_balanced_prescore(plugin, old, pod) for _ in calls], repeat))


def _old_taint_score(plugin, state, pod, table, rows):
    """TaintToleration.score_vec without its no-PreferNoSchedule-taint shortcut (no row of the
    benchmark's fleet overflows the 63 bits, so this is all of it)."""
    _, tolerated, _ = state[plugin.name]
    return np.bitwise_count(table.prefer_taints.take(rows, 0) & ~tolerated).astype(np.int64)


def bench_taint_score(s: Scheduler, repeat: int) -> dict:
    """1,000 calls over the same 256 rows, each form."""
    pod = template_pod(100, 500)
    s.refresh()
    table = s.table
    plugin = next(p for p in s.profile_for(pod).plugins if p.name == "TaintToleration")
    state = CycleState()
    plugin.pre_filter(state, pod)
    rows = np.array(random.Random(0).sample(range(len(table)), min(256, len(table))), dtype=np.int64)
    assert np.array_equal(plugin.score_vec(state, pod, table, rows), _old_taint_score(plugin, state, pod, table, rows))
    calls = range(1000)
    return harness.latency(measure(lambda: [plugin.score_vec(state, pod, table, rows) for _ in calls], repeat),
                           measure(lambda: [_old_taint_score(plugin, state, pod, table, rows) for _ in calls], repeat))


def _old_fit_scores(table, rows, nonzero_req):
    """NodeResourcesFit.score_vec's LeastAllocated cpu-and-memory path before the table's
    base columns: full rows gathered, two-column views, a min reduction per call."""
    requested = gather(table.nonzero, rows)[:, slice(0, 2)] + nonzero_req
    cap = gather(table.alloc, rows)[:, slice(0, 2)]
    assert cap.min(initial=1) > 0
    s = np.maximum((cap - requested) * MAX_NODE_SCORE // cap, 0)
    return s @ np.ones(2, dtype=np.int64) // 2


def _old_balanced_scores(table, rows, req):
    """NodeResourcesBalancedAllocation.score_vec's two-resource path before the base columns."""
    alloc = gather(table.alloc, rows)[:, slice(0, 2)]
    used = gather(table.requested, rows)[:, slice(0, 2)] + req
    assert alloc.min(initial=1) > 0
    frac = np.minimum(used / alloc, 1.0)
    std = np.abs(frac[:, 0] - frac[:, 1]) / 2
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def bench_resource_scores(s: Scheduler, repeat: int) -> dict:
    """1,000 calls of both scores over the 100 rows of a basic pod's cycle, each form."""
    pod = template_pod(100, 500)
    s.refresh()
    table = s.table
    profile = s.profile_for(pod)
    fit, balanced = (next(p for p in profile.plugins if p.name == name)
                     for name in ("NodeResourcesFit", "NodeResourcesBalancedAllocation"))
    state = CycleState()
    balanced.pre_score(state, pod, None)
    req = state[balanced.name][0]
    nonzero_req = np.array(pod.nonzero, dtype=np.int64)
    rows = np.array(sorted(random.Random(1).sample(range(len(table)), min(100, len(table)))), dtype=np.int64)
    assert not table.base_gaps
    assert np.array_equal(fit.score_vec(state, pod, table, rows), _old_fit_scores(table, rows, nonzero_req))
    assert np.array_equal(balanced.score_vec(state, pod, table, rows), _old_balanced_scores(table, rows, req))
    calls = range(1000)

    def new():
        for _ in calls:
            fit.score_vec(state, pod, table, rows)
            balanced.score_vec(state, pod, table, rows)

    def old():
        for _ in calls:
            _old_fit_scores(table, rows, nonzero_req)
            _old_balanced_scores(table, rows, req)
    return harness.latency(measure(new, repeat), measure(old, repeat))


def _old_write_pods(table, row: int, info) -> None:
    """NodeTable._write_pods before free was subtracted in numpy."""
    requested = table._row(info.requested)
    table.requested[row] = requested
    table.free[row] = [a - r for a, r in zip(table._row(info.node.allocatable), requested)]
    table.nonzero[row] = [min(x, INT64_MAX) for x in info.nonzero]
    table.generation[row] = info.generation
    if info.affinity_pods or info.name in table._indexed:
        table._index_terms(info.name, info.affinity_pods)


def bench_row_write(s: Scheduler, repeat: int) -> dict:
    """The pod columns of 256 rows written again, each form."""
    s.refresh()
    table = s.table
    rows = random.Random(2).sample(range(len(table)), min(256, len(table)))
    writes = [(row, table.infos[row]) for row in rows]

    def each(write):
        for row, info in writes:
            write(table, row, info)
    def written(write):
        for col in (table.free, table.nonzero, table.requested):
            col[rows] = 0
        each(write)
        return [col[rows].copy() for col in (table.free, table.nonzero, table.requested)]
    assert all(np.array_equal(a, b) for a, b in zip(written(_old_write_pods), written(type(table)._write_pods)))
    return harness.latency(measure(lambda: each(type(table)._write_pods), repeat),
                           measure(lambda: each(_old_write_pods), repeat))


def _old_image_prescore(plugin, state, pod):
    """ImageLocality.pre_score before it looked at the table's images first."""
    images, containers = _images(pod)
    if not any(img in plugin.handle.table.image_nodes for img in images):
        return Status(SKIP)
    state[plugin.name] = (images, containers)
    return None


def bench_image_prescore(s: Scheduler, repeat: int) -> dict:
    """1,000 PreScore calls (a basic pod), each form."""
    pod = template_pod(100, 500)
    s.refresh()
    plugin = next(p for p in s.profile_for(pod).plugins if p.name == "ImageLocality")
    state = CycleState()
    assert plugin.pre_score(state, pod, None).code == _old_image_prescore(plugin, state, pod).code == SKIP
    calls = range(1000)
    return harness.latency(measure(lambda: [plugin.pre_score(state, pod, None) for _ in calls], repeat),
                           measure(lambda: [_old_image_prescore(plugin, state, pod) for _ in calls], repeat))


def _old_less(plugin, a, b) -> bool:
    """Coscheduling.less before its no-group shortcut."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    oa, ob = plugin._order(a), plugin._order(b)
    if not oa[2] and not ob[2]:
        return a.queued_at < b.queued_at
    return oa < ob


def bench_queue_sort(s: Scheduler, repeat: int) -> dict:
    """1,600 comparisons (40 pods, every ordered pair), each form."""
    pods = [parse_pod(p) for p in mixed(40, 1, 100)]
    profile = s.profile_for(pods[0])
    plugin = profile.queue_sort
    entries = [QueuedPod(p, float(i % 7), profile.less) for i, p in enumerate(pods)]
    pairs = [(a, b) for a in entries for b in entries]
    assert [plugin.less(a, b) for a, b in pairs] == [_old_less(plugin, a, b) for a, b in pairs]
    return harness.latency(measure(lambda: [plugin.less(a, b) for a, b in pairs], repeat),
                           measure(lambda: [_old_less(plugin, a, b) for a, b in pairs], repeat))


def run(args) -> dict:
    t = time.perf_counter()
    cache = fleet_cache(args.nodes, args.pods_per_node, args.seed)
    rng = random.Random(args.seed)
    names = [name for name, _ in cache.nodes.items()]
    web = template_pod(100, 500, labels=WEB)
    for i, name in enumerate(rng.sample(names, max(1, len(names) // 10))):
        cache.set_pod(instance(web, f"web-{i}", name))
    print(f"filled {args.nodes} nodes x {args.pods_per_node} pods in {time.perf_counter() - t:.1f} s")
    fast = scheduler(cache, args.seed)
    slow = scheduler(cache, args.seed, mode="kube", vectorised=False)
    results = {}
    templates = pod_templates()
    for case in ("basic", "node_affinity", "topology_spread", "pod_anti_affinity"):
        pod = templates[case]
        assert cycle(fast, pod).scheduled and cycle(slow, pod).scheduled, case
        results[case] = harness.latency(measure(lambda: cycle(fast, pod), args.repeat),
                                        measure(lambda: cycle(slow, pod), max(5, args.repeat // 10)))

    no_locating = scheduler(cache, args.seed, unit_locating=False)
    ds_pods = [daemonset_pod(n) for n in rng.sample(names, 50)]
    picks = iter(range(10**9))

    def ds_cycle(s):
        pod = ds_pods[next(picks) % len(ds_pods)]
        result = cycle(s, pod)
        assert result.node == pod.required_node_terms[0].single_node_name(), result.node
    results["daemonset"] = harness.latency(measure(lambda: ds_cycle(fast), args.repeat),
                                           measure(lambda: ds_cycle(no_locating), max(5, args.repeat // 10)))

    no_context = scheduler(cache, args.seed, scheduling_context=False)
    stuck = templates["unschedulable_retry"]
    filler = template_pod(10, 16)
    serial = iter(range(10**9))

    def retry(s):
        """Untimed: a failed attempt, then 1% of the nodes change and the snapshot takes
        them in (whichever cycle runs next pays that, whatever its pod); timed: the retry."""
        generation = cache.nodes.generation
        assert not cycle(s, stuck, generation).scheduled
        for name in rng.sample(names, max(1, len(names) // 100)):
            cache.assume(instance(filler, f"churn-{next(serial)}"), name)
        s.refresh()
        t0 = time.perf_counter()
        result = cycle(s, stuck, generation)
        elapsed = (time.perf_counter() - t0) * 1000
        assert not result.scheduled
        return elapsed

    results["unschedulable_retry"] = harness.latency(
        [retry(fast) for _ in range(max(5, args.repeat // 10))],
        [retry(no_context) for _ in range(max(5, args.repeat // 10))])
    results["spread_prefilter_honor"] = bench_spread_prefilter(fast, args.repeat)
    results["plugin_clock"] = bench_plugin_clock(fast, args.repeat)
    results["vec_pass"] = bench_vec_pass(fast, args.repeat)
    results["balanced_prescore"] = bench_balanced_prescore(fast, args.repeat)
    results["taint_score"] = bench_taint_score(fast, args.repeat)
    results["shard_metrics"] = bench_shard_metrics(fast, args.repeat)
    results["resource_scores"] = bench_resource_scores(fast, args.repeat)
    results["row_write"] = bench_row_write(fast, args.repeat)
    results["image_prescore"] = bench_image_prescore(fast, args.repeat)
    results["queue_sort"] = bench_queue_sort(fast, args.repeat)
    return results


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--repeat", type=int, default=200)
    args = p.parse_args(argv)
    results = run(args)
    return harness.report(f"scheduling cycle, {args.nodes} mixed nodes (ms; ratio = baseline "
                          "median / median)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
