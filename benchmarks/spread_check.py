"""The binder's and verify's cross-node checks against the walk they replaced, in one run.

    python -m benchmarks.spread_check --nodes 20000 --replicas 30000 --anti-replicas 10000 --json FILE

A mixed fleet, and one Deployment of `--replicas` running pods (app=web) spread over the
untainted nodes, zones taking turns, in a ConstrainedAccounting as the binder and verify keep
one. Each case times one check (common.scheduling.constraints) with the per-domain sums the
index keeps (optimised) against summing the selector's per-node counts on every call, one
eligibility test per node holding a matching pod (baseline: the code before the sums,
reproduced here; its eligible domains are cached as they were):

- spread_zone: a new replica, DoNotSchedule zone spread (maxSkew 1), on a random node;
- spread_hostname: the same over hostnames (maxSkew 1), a domain per node;
- verify_form: a running replica judged again on its own node, itself left out (what
  `verify` does for every pod with a hard constraint);
- anti_affinity_own: a pod whose own required anti-affinity (hostname) selects the replicas;
- existing_anti: a pod labelled as a second Deployment, of `--anti-replicas` running pods
  (app=db) with required hostname anti-affinity to each other, judged against their terms
  (InterPodAffinity's "existing pods" rule), on nodes with and without one;
- new_selector: the first count of a selector not asked about before (one of 100 small
  Deployments of 5 pods, app=small-N), its label key already indexed by earlier selectors:
  the pods of the nodes holding its label pair (optimised) against a walk over every counted
  pod (baseline, what each new selector paid before issue 31's per-pod costs);
- bind_update: one matching pod counted and uncounted (a bind and a delete), with the sums of
  the cases above kept (optimised) against the counters alone (baseline): what keeping them
  adds to every bind, so a ratio below 1.

Both variants must give the same answers (asserted). Each item is {"optimised_ms",
"baseline_ms", "ratio"}, medians over the repeats.
"""
from __future__ import annotations

import itertools
import random
import time
from collections import Counter

from common.model.objects import parse_node, parse_pod
from common.scheduling.constraints import (ConstrainedAccounting, _excluded, _spread_eligibility,
                                           inter_pod_affinity_failure, topology_spread_failure)
from common.scheduling.predicates import (EXISTING_ANTI_AFFINITY, POD_ANTI_AFFINITY_MISMATCH, SPREAD_MISMATCH,
                                         SPREAD_MISSING_LABEL)
from common.scheduling.term_groups import selector_buckets, term_buckets
from common.tools.fleet import generate

from . import harness
from .fill import instance
from .workloads import HOSTNAME, ZONE

LABELS = {"app": "web"}
DB = {"app": "db"}


def _pod(name: str, labels: dict = LABELS, **spec) -> object:
    return parse_pod({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"namespace": "bench", "name": name, "uid": f"uid-{name}", "labels": labels},
                      "spec": {"schedulerName": "shardsched", "containers": [{
                          "name": "pause", "image": "registry.k8s.io/pause:3.9",
                          "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}}], **spec}})


def _spread(key: str) -> dict:
    return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": LABELS}}]}


def cluster(nodes: int, replicas: int, anti_replicas: int, seed: int):
    """(the accounting, the untainted nodes' names, the spread replicas' keys)."""
    acc = ConstrainedAccounting()
    by_zone: dict[str, list[str]] = {}
    for d in generate(nodes, "mixed", seed):
        node = parse_node(d)
        acc.set_node(node)
        if not node.taints:
            by_zone.setdefault(node.labels.get(ZONE, ""), []).append(node.name)
    per_zone = min(len(z) for z in by_zone.values())
    ring = [z[k] for k in range(per_zone) for z in by_zone.values()]
    template = _pod("template", **_spread(ZONE))
    keys = []
    for i in range(replicas):
        p = instance(template, f"web-{i}", ring[i % len(ring)], start=float(i))
        acc.set_pod(p)
        keys.append(p.key)
    db = _pod("template", DB, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": DB}, "topologyKey": HOSTNAME}]}})
    for i in range(min(anti_replicas, len(ring))):  # one per node
        acc.set_pod(instance(db, f"db-{i}", ring[i], start=float(i)))
    return acc, ring, keys


def walk_spread_failure(index, pod, node, exclude: dict):
    """The check as it was: the selector's counts summed per domain on every call."""
    hard = [c for c in pod.spread_constraints if c.hard]
    for c in hard:
        value = node.labels.get(c.topology_key)
        if value is None:
            return "UnschedulableAndUnresolvable", SPREAD_MISSING_LABEL
        eligible, cache_key = _spread_eligibility(pod, hard, c)
        domains = index.eligible_domains(cache_key, c.topology_key, eligible).nodes  # cached, as before
        ns, sel = pod.namespace, c.selector

        def predicate(p, ns=ns, sel=sel):
            return p.namespace == ns and not p.deleting and sel.matches(p.labels)

        counts = index.counts(("spread", ns, sel.key), predicate, selector_buckets((ns,), sel))
        minus = _excluded(index, exclude, predicate)
        sums: Counter = Counter()
        for name, n in counts.items():
            labels = index.labels(name)
            if labels is None or c.topology_key not in labels or not eligible(index.nodes[name].node):
                continue
            sums[labels[c.topology_key]] += n - minus[name]
        lowest = min((sums[d] for d in domains), default=0)
        self_match = 1 if sel.matches(pod.labels) else 0
        if sums[value] + self_match - lowest > c.max_skew:
            return "Unschedulable", SPREAD_MISMATCH
    return None


def walk_anti_failure(index, pod, node):
    """The pod's own required anti-affinity as it was: the term's counts walked per call."""
    for t in pod.anti_affinity[0]:
        value = node.labels.get(t.topology_key)
        if value is None:
            continue

        def predicate(p, t=t):
            return t.matches(p, None)

        counts = index.counts(("term", t.cache_key(None)), predicate, term_buckets(t))
        if sum(n for name, n in counts.items() if (index.labels(name) or {}).get(t.topology_key) == value):
            return "Unschedulable", POD_ANTI_AFFINITY_MISMATCH
    return None


def walk_existing_anti(index, pod, node):
    """Existing pods' required anti-affinity as it was: each matching group's nodes walked."""
    for g in index.anti_terms.matching(pod):
        value = node.labels.get(g.topology_key)
        if value is None:
            continue
        for where in g.nodes:
            labels = index.labels(where)
            if labels is not None and labels.get(g.topology_key) == value:
                return "Unschedulable", EXISTING_ANTI_AFFINITY
    return None


def compare_checks(nodes: list, fast, slow, repeat: int) -> dict:
    """Time `fast(node)` against `slow(node)` over the same nodes in turn; same answers."""
    for node in nodes:
        assert fast(node) == slow(node), node.name

    def timed(check) -> list[float]:
        turn, current = itertools.cycle(nodes), [None]
        return harness.time_ms(lambda: check(current[0]), repeat, lambda: current.__setitem__(0, next(turn)))

    return harness.compare(timed(fast), timed(slow))


def bench_bind_update(acc, ring: list, repeat: int, seed: int) -> dict:
    """A replica counted then uncounted, with the kept sums, then with only the counters."""
    rng = random.Random(seed)
    template = _pod("template", **_spread(ZONE))
    serial = [0]

    def bind_and_delete():
        serial[0] += 1
        p = instance(template, f"new-{serial[0]}", rng.choice(ring))
        acc.set_pod(p)
        acc.remove_pod(p.key)

    optimised = harness.time_ms(bind_and_delete, repeat)
    index = acc.constraints
    kept, kept_of = dict(index._sums), dict(index._sums_of)
    index._sums.clear()
    index._sums_of.clear()
    try:
        baseline = harness.time_ms(bind_and_delete, repeat)
    finally:
        index._sums.update(kept)
        index._sums_of.update(kept_of)
    return harness.compare(optimised, baseline)


def bench_new_selector(acc, ring: list, repeat: int, seed: int) -> dict:
    """Counts of a fresh selector key with its label pair named (the nodes holding it) and
    without (the walk), on the same index; both must be equal."""
    rng = random.Random(seed)
    for d in range(100):
        template = _pod("template", {"app": f"small-{d}"})
        for i in range(5):
            acc.set_pod(instance(template, f"small-{d}-{i}", rng.choice(ring)))
    index = acc.constraints
    serial = itertools.count()

    def count(named: bool, app: str | None = None):
        n = next(serial)
        app = app or f"small-{n % 100}"
        return index.counts(("new_selector", n), lambda p: p.namespace == "bench" and p.labels.get("app") == app,
                            (("bench", "app", app),) if named else ())

    assert count(True, "small-7") == count(False, "small-7")
    return harness.compare(harness.time_ms(lambda: count(True), repeat),
                           harness.time_ms(lambda: count(False), max(5, repeat // 20)))


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--replicas", type=int, default=30000)
    p.add_argument("--anti-replicas", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=200)
    args = p.parse_args(argv)
    t = time.perf_counter()
    acc, ring, keys = cluster(args.nodes, args.replicas, args.anti_replicas, args.seed)
    print(f"{args.nodes} nodes, {args.replicas} + {args.anti_replicas} replicas counted in "
          f"{time.perf_counter() - t:.1f} s")
    rng = random.Random(args.seed)
    index = acc.constraints
    sample = [acc.nodes[name].node for name in rng.sample(ring, 20)]
    zone, host = _pod("new-zone", **_spread(ZONE)), _pod("new-host", **_spread(HOSTNAME))
    anti = _pod("new-anti", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": LABELS}, "topologyKey": HOSTNAME}]}})
    results = {
        "spread_zone": compare_checks(sample, lambda n: topology_spread_failure(index, zone, n),
                                      lambda n: walk_spread_failure(index, zone, n, {}), args.repeat),
        "spread_hostname": compare_checks(sample, lambda n: topology_spread_failure(index, host, n),
                                          lambda n: walk_spread_failure(index, host, n, {}), args.repeat),
    }
    bound = [acc.counted(k) for k in rng.sample(keys, 20)]
    by_node = {acc.nodes[p.node_name].node.name: p for p in bound}
    nodes = [acc.nodes[name].node for name in by_node]

    def alone(n):
        return {by_node[n.name].key: n.name}

    results["verify_form"] = compare_checks(
        nodes, lambda n: topology_spread_failure(index, by_node[n.name], n, alone(n)),
        lambda n: walk_spread_failure(index, by_node[n.name], n, alone(n)), args.repeat)
    results["anti_affinity_own"] = compare_checks(
        sample, lambda n: inter_pod_affinity_failure(index, anti, n, existing=False),
        lambda n: walk_anti_failure(index, anti, n), args.repeat)
    newcomer = _pod("new-db", DB)
    with_db = [acc.nodes[name].node for name in rng.sample(ring[:args.anti_replicas], 10)]
    without = [acc.nodes[name].node for name in rng.sample(ring[args.anti_replicas:], 10)] \
        if len(ring) > args.anti_replicas else []
    results["existing_anti"] = compare_checks(
        with_db + without, lambda n: inter_pod_affinity_failure(index, newcomer, n),
        lambda n: walk_existing_anti(index, newcomer, n), args.repeat)
    results["new_selector"] = bench_new_selector(acc, ring, args.repeat, args.seed)
    results["bind_update"] = bench_bind_update(acc, ring, args.repeat, args.seed)
    return harness.report(f"cross-node checks, {args.nodes} nodes, Deployments of {args.replicas} (spread) and "
                          f"{args.anti_replicas} (anti-affinity) replicas "
                          "(medians, ratio = baseline / optimised)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
