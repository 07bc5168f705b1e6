"""Shard data structures against their unoptimised variants, in one run on one cache.

    python -m benchmarks.datastructures --nodes 20000 --pods-per-node 30 --json FILE

- snapshot_update: 100 nodes changed since the last cycle; the incremental snapshot update
  (GenerationStore walk + the changed node-table rows) against rebuilding the snapshot from a
  full copy of the cache (every NodeInfo cloned, every row written).
- node_list_churn: 1% of the nodes added and 1% removed; swap-delete rows against keeping
  kube-scheduler's zone-interleaved order (per-zone lists, then every row moved into the
  round-robin order).
- releasable_resources: for one preemptor priority, the resources the lower-priority pods
  of every node could free; a prefix query on each node's splay tree against summing each
  node's pods.
- bound_copy: 1,000 pending pods turned into their bound versions as the binding's watch
  event shows them (Pod.bound_copy: what a binder or shard does with each of its own
  decisions) against the same with the pod copied by copy.copy (the form before issue 31's
  per-pod costs); the copies must be equal.
- status_hint: 1,000 bound pods taking their Running write from the store's status hint
  (common.runtime.intake.status_hinted, every pod's third event with --churn, in every
  process) against the form before: the hint made a status document again, read by
  Pod.with_status (its start time parsed with a Field) and copied slot by slot with
  getattr/setattr; the pods must be equal.
- status_update: the same writes as whole documents (kube://'s watch, or a write without
  a hint: common.runtime.intake.status_update, Pod.with_status) against with_status as it
  was (the start time parsed with a Field, the copy by getattr/setattr).

Each item is {"optimised_ms", "baseline_ms", "ratio"} with medians over the repeats.
"""
from __future__ import annotations

import copy
import random
import time

from common.tools.fleet import generate
from common.model.objects import Pod, parse_node
from common.model.parsing import cached_time, parse_time
from common.model.selectors import Field
from common.runtime.intake import status_hinted, status_update
from common.model.resources import ZERO, vadd
from shard.node_info import NodeInfo
from shard.snapshot import Snapshot
from shard.zone_tree import ZoneTree, zone_of

from . import harness
from .fill import fleet_cache, instance, template_pod


def bench_snapshot_update(cache, rng, repeat: int) -> dict:
    names = [name for name, _ in cache.nodes.items()]
    snapshot = Snapshot()
    snapshot.update(cache)
    pod = template_pod(200, 256)
    serial = [0]

    def change_100_nodes():
        for name in rng.sample(names, 100):
            serial[0] += 1
            cache.assume(instance(pod, f"churn-{serial[0]}"), name)

    incremental = harness.time_ms(lambda: snapshot.update(cache), repeat, change_100_nodes)
    assert snapshot.last_cloned == 100
    full = Snapshot(full=True)
    baseline = harness.time_ms(lambda: full.update(cache), max(3, repeat // 4), change_100_nodes)
    return harness.compare(incremental, baseline)


def bench_node_list_churn(cache, seed: int, nodes: int, repeat: int) -> dict:
    """Both variants apply the same row writes; the baseline also keeps kube's order."""
    snapshot = Snapshot()
    snapshot.update(cache)
    infos = {info.name: info for info in snapshot.table.infos}
    count = max(1, nodes // 100)
    extra = [NodeInfo(n.name, n) for n in
             (parse_node(d) for d in generate(count, "mixed", seed + 1, prefix="churn-node"))]
    tree = ZoneTree()
    for info in snapshot.table.infos:
        tree.add(info.name, zone_of(info.node))
    rng = random.Random(seed)

    def churn(table, keep_order: bool):
        removed = rng.sample(list(infos), count)
        t = time.perf_counter()
        for info in extra:
            table.upsert(info)
            if keep_order:
                tree.add(info.name, zone_of(info.node))
        for name in removed:
            table.remove(name)
            if keep_order:
                tree.remove(name)
        if keep_order:
            table.reorder(tree.interleaved())
        elapsed = (time.perf_counter() - t) * 1000
        # Put the fleet back (untimed) so every repeat starts from the same nodes.
        for info in extra:
            table.remove(info.name)
            if keep_order:
                tree.remove(info.name)
        for name in removed:
            table.upsert(infos[name])
            if keep_order:
                tree.add(name, zone_of(infos[name].node))
        return elapsed

    swap = [churn(snapshot.table, False) for _ in range(repeat)]
    snapshot.table.reorder(tree.interleaved())
    kube = [churn(snapshot.table, True) for _ in range(repeat)]
    return harness.compare(swap, kube)


def bench_releasable(cache, repeat: int, priority: int = 1000) -> dict:
    infos = [info for _, info in cache.nodes.items()]

    def splay():
        return [info.tree.sum_below(priority) for info in infos]

    def linear():
        out = []
        for info in infos:
            total = ZERO
            for pod in info.pods.values():
                if pod.priority < priority:
                    total = vadd(total, pod.requests)
            out.append(total)
        return out

    assert splay() == linear()
    return harness.compare(harness.time_ms(splay, repeat), harness.time_ms(linear, repeat))


def bench_bound_copy(repeat: int) -> dict:
    pods = [instance(template_pod(100, 128, labels={"app": f"a{i % 50}"}), f"p{i}") for i in range(1000)]
    event = {"spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}}

    def copied(pod):
        """bound_copy with copy.copy, as it was."""
        p = copy.copy(pod)
        p.node_name, p.phase, p.nominated_node, p.raw, p.resource_version = "node-1", "Running", None, None, ""
        return p

    slots = type(pods[0]).__slots__
    for pod in pods[:10]:
        a, b = pod.bound_copy(event), copied(pod)
        assert all(getattr(a, n) == getattr(b, n) for n in slots)
    return harness.compare(harness.time_ms(lambda: [p.bound_copy(event) for p in pods], repeat),
                           harness.time_ms(lambda: [copied(p) for p in pods], repeat))


def bench_status_hint(repeat: int) -> dict:
    pods = [instance(template_pod(100, 128, labels={"app": f"a{i % 50}"}), f"p{i}", node="node-1")
            for i in range(1000)]
    for p in pods:
        p.phase, p.raw = "Pending", None  # bound, not started yet: the Running write to come
    hint = b'["Running","2026-01-01T00:00:10Z",""]'

    def before(known):
        """status_hinted as it was: a document made of the hint, read by with_status."""
        phase, started, nominated = ("Running", "2026-01-01T00:00:10Z", "")
        if ((cached_time(started) if started else known.start_time) == known.start_time
                and phase == known.phase and (nominated or None) == (known.nominated_node or None)):
            return known
        d = {"spec": {"nodeName": known.node_name},
             "status": {"phase": phase, "startTime": started, "nominatedNodeName": nominated}}
        start_time = parse_time(started, Field(f"Pod {known.key}").at("status").at("startTime"))
        p = object.__new__(Pod)
        for name in Pod.__slots__:
            setattr(p, name, getattr(known, name))
        p.node_name, p.phase = d["spec"]["nodeName"], d["status"]["phase"]
        p.nominated_node, p.raw, p.resource_version, p.start_time = None, None, "", start_time
        return p

    for pod in pods[:10]:
        a, b = status_hinted(pod, hint), before(pod)
        assert a is not pod and all(getattr(a, n) == getattr(b, n) for n in Pod.__slots__)
    return harness.compare(harness.time_ms(lambda: [status_hinted(p, hint) for p in pods], repeat),
                           harness.time_ms(lambda: [before(p) for p in pods], repeat))


def bench_status_update(repeat: int) -> dict:
    pods = [instance(template_pod(100, 128, labels={"app": f"a{i % 50}"}), f"p{i}", node="node-1")
            for i in range(1000)]
    for p in pods:
        p.phase = "Pending"
    docs = [{**p.raw, "metadata": {**p.raw["metadata"], "name": p.name, "uid": p.uid},
             "spec": {**p.raw["spec"], "nodeName": "node-1"},
             "status": {"phase": "Running", "startTime": "2026-01-01T00:00:10Z"}} for p in pods]
    for p in pods:
        p.raw = None  # a bound pod read lean keeps none

    def before(known, d):
        """status_update as it was: with_status parsing the start time with a Field, the
        copy by getattr/setattr."""
        if not known.status_only(d):
            return None
        status = d["status"]
        start_time = parse_time(status["startTime"], Field(f"Pod {known.key}").at("status").at("startTime"))
        p = object.__new__(Pod)
        for name in Pod.__slots__:
            setattr(p, name, getattr(known, name))
        p.node_name, p.phase = d["spec"]["nodeName"], status["phase"]
        p.nominated_node, p.raw, p.resource_version, p.start_time = None, None, "", start_time
        return p

    pairs = list(zip(pods, docs))
    for pod, d in pairs[:10]:
        a, b = status_update(pod, d), before(pod, d)
        assert a is not None and all(getattr(a, n) == getattr(b, n) for n in Pod.__slots__)
    return harness.compare(harness.time_ms(lambda: [status_update(p, d) for p, d in pairs], repeat),
                           harness.time_ms(lambda: [before(p, d) for p, d in pairs], repeat))


def main(argv=None) -> int:
    p = harness.parser(__doc__.split("\n\n")[0])
    p.add_argument("--pods-per-node", type=int, default=30)
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    t = time.perf_counter()
    cache = fleet_cache(args.nodes, args.pods_per_node, args.seed)
    print(f"filled {args.nodes} nodes x {args.pods_per_node} pods in {time.perf_counter() - t:.1f} s")
    rng = random.Random(args.seed)
    results = {
        "snapshot_update": bench_snapshot_update(cache, rng, args.repeat),
        "node_list_churn": bench_node_list_churn(cache, args.seed, args.nodes, args.repeat),
        "releasable_resources": bench_releasable(cache, max(3, args.repeat // 4)),
        "bound_copy": bench_bound_copy(args.repeat * 5),
        "status_hint": bench_status_hint(args.repeat * 5),
        "status_update": bench_status_update(args.repeat * 5),
    }
    return harness.report(f"data structures, {args.nodes} nodes x {args.pods_per_node} pods "
                        "(medians, ratio = baseline / optimised)", results, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
