"""Queueing hints (shard/queueing_hints.py): an event a hint leaves out never leaves a pod
pending that a full retry would have placed; and the events that matter do wake pods.

The property test builds random small clusters (labels, taints, cordoned nodes, sizes, pods
with host ports and labels), a pending pod that fits nowhere (node selectors, tolerations,
host ports, anti-affinity, spread, priorities that may preempt), applies one random cluster
event to the cache, and whenever the hint says "stay parked", schedules the pod again from
scratch on the new state: it must still fail."""
from __future__ import annotations

import copy

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from builders import make_config, node, pod, pod_affinity, pod_term, spread, toleration
from common.model.objects import parse_object
from shard import queueing_hints as hints
from shard.cache import ShardCache
from shard.queue import SchedulingQueue
from shard.scheduler import Scheduler

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"

NODES = st.lists(st.fixed_dictionaries({
    "cpu": st.integers(1, 4), "zone": st.sampled_from(["a", "b"]), "disk": st.sampled_from(["ssd", "hdd"]),
    "tainted": st.booleans(), "cordoned": st.booleans(),
    "pods": st.lists(st.tuples(st.integers(1, 2), st.sampled_from(["web", "db"]), st.booleans(),
                               st.integers(0, 2)), max_size=3)}), min_size=1, max_size=5)
PENDING = st.fixed_dictionaries({
    "cpu": st.integers(1, 5), "selector": st.sampled_from([None, "ssd"]), "tolerates": st.booleans(),
    "port": st.booleans(), "anti": st.booleans(), "spread": st.booleans(), "priority": st.integers(0, 3)})
EVENTS = st.sampled_from(["node added", "labels", "taints removed", "uncordoned", "grown", "shrunk",
                          "heartbeat", "node deleted", "pod deleted", "pod arrived", "pod relabelled"])


def node_dict(i: int, spec: dict) -> dict:
    return node(f"n{i}", cpu=str(spec["cpu"]), labels={ZONE: spec["zone"], "disk": spec["disk"]},
                taints=["dedicated=x:NoSchedule"] if spec["tainted"] else (), unschedulable=spec["cordoned"])


def bound(name: str, node_name: str, cpu: int, app: str, port: bool, priority: int) -> dict:
    return pod(name, str(cpu), node_name=node_name, labels={"app": app}, priority=priority,
               ports=[(8080,)] if port else (), tolerations=[toleration(operator="Exists")])


def pending(spec: dict) -> dict:
    extra = {}
    if spec["anti"]:
        extra["affinity"] = pod_affinity(anti_required=[pod_term({"app": "web"}, HOST)])
    return pod("p", str(spec["cpu"]), labels={"app": "web"}, priority=spec["priority"],
               node_selector={"disk": spec["selector"]} if spec["selector"] else None,
               tolerations=[toleration("dedicated", "x", "NoSchedule")] if spec["tolerates"] else (),
               ports=[(8080,)] if spec["port"] else (),
               spread=[spread(1, ZONE, {"app": "web"})] if spec["spread"] else (), **extra)


def apply(event: str, cache: ShardCache, nodes: list[dict], choice: int):
    """Change the cluster; returns (hint, its event arguments)."""
    target = nodes[choice % len(nodes)]
    old = parse_object(target)
    if event == "node added":
        new = parse_object(node(f"n{len(nodes)}", cpu="4", labels={ZONE: "c", "disk": "ssd"}))
        cache.set_node(new)
        return hints.node_added, (new,)
    if event == "node deleted":
        cache.remove_node(old.name)
        return hints.node_deleted, ()
    if event in ("pod deleted", "pod relabelled"):
        counted = [p for p in cache.counted_pods()]
        assume(counted)
        gone = counted[choice % len(counted)]
        if event == "pod deleted":
            cache.remove_pod(gone.key)
            return hints.pod_left, (gone,)
        raw = copy.deepcopy(gone.raw)
        raw["metadata"]["labels"] = {"app": "other"}
        relabelled = parse_object(raw)
        cache.set_pod(relabelled)
        return hints.pod_arrived, (relabelled,)
    if event == "pod arrived":
        new_pod = parse_object(bound("arrived", old.name, 1, "db", False, 0))
        cache.set_pod(new_pod)
        return hints.pod_arrived, (new_pod,)
    changed = copy.deepcopy(target)
    if event == "labels":
        changed["metadata"]["labels"]["disk"] = "ssd" if old.labels["disk"] == "hdd" else "hdd"
        changed["metadata"]["labels"][ZONE] = "b" if old.labels[ZONE] == "a" else "a"
    elif event == "taints removed":
        changed["spec"].pop("taints", None)
    elif event == "uncordoned":
        changed["spec"].pop("unschedulable", None)
    elif event in ("grown", "shrunk"):
        cpu = int(changed["status"]["allocatable"]["cpu"]) + (2 if event == "grown" else -1)
        changed["status"]["allocatable"]["cpu"] = changed["status"]["capacity"]["cpu"] = str(max(cpu, 0))
    else:  # heartbeat
        changed["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    new = parse_object(changed)
    cache.set_node(new)
    return hints.node_updated, (old, new)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(NODES, PENDING, EVENTS, st.integers(0, 100))
def test_a_pod_a_hint_leaves_parked_would_not_have_fit(cluster, spec, event, choice):
    cache = ShardCache()
    nodes = []
    for i, n in enumerate(cluster):
        nodes.append(node_dict(i, n))
        cache.set_node(parse_object(nodes[-1]))
        for j, args in enumerate(n["pods"]):
            cache.set_pod(parse_object(bound(f"b{i}-{j}", f"n{i}", *args)))
    sched = Scheduler(make_config("all"), cache, seed=choice)
    sched.refresh()
    p = parse_object(pending(spec))
    first = sched.schedule(p)
    assume(not first.scheduled)
    hint, args = apply(event, cache, nodes, choice)
    woken = hint(p, first.rejectors, *args)
    sched.refresh()
    retry = sched.schedule(p)
    if not woken:
        assert not retry.scheduled, (event, sorted(first.rejectors), retry.node)


def test_hints_wake_only_the_pods_an_event_can_help():
    """Three parked pods: one too big, one whose selector no node matches, one kept off by a
    taint. Relabelling a node wakes only the second, growing one only the first; a
    heartbeat wakes none."""
    cache = ShardCache()
    n1 = parse_object(node("n1", cpu="1", labels={"disk": "hdd"}, taints=["dedicated=x:NoSchedule"]))
    cache.set_node(n1)
    sched = Scheduler(make_config("all"), cache)
    sched.refresh()
    queue = SchedulingQueue(lambda a, b: False)
    parked = {}
    for name, p in (("big", pod("big", "4", tolerations=[toleration("dedicated", "x", "NoSchedule")])),
                    ("ssd", pod("ssd", "1", node_selector={"disk": "ssd"},
                                tolerations=[toleration("dedicated", "x", "NoSchedule")])),
                    ("tainted", pod("tainted", "1"))):
        queue.add(parse_object(p))
        entry = queue.pop()
        result = sched.schedule(entry.pod)
        assert not result.scheduled
        queue.requeue_unschedulable(entry, 0, result.rejectors)
        parked[name] = result.rejectors
    assert parked == {"big": {"NodeResourcesFit"}, "ssd": {"NodeAffinity"}, "tainted": {"TaintToleration"}}

    def woken_by(hint, *event) -> set[str]:
        before = set(queue._unschedulable)
        queue.wake(hint, *event)
        return {k.split("/")[1] for k in before - set(queue._unschedulable)}

    heartbeat = copy.deepcopy(n1.raw)
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert woken_by(hints.node_updated, n1, parse_object(heartbeat)) == set()
    relabelled = copy.deepcopy(n1.raw)
    relabelled["metadata"]["labels"]["disk"] = "ssd"
    assert woken_by(hints.node_updated, n1, parse_object(relabelled)) == {"ssd"}
    grown = copy.deepcopy(n1.raw)
    grown["status"]["allocatable"]["cpu"] = "8"
    assert woken_by(hints.node_updated, n1, parse_object(grown)) == {"big"}
