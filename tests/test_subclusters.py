"""Sub-clusters (config `subClusters`): a pod's pool, the shards a pool goes to, one active
queue per pool served in turn, and a pool's pod filtered against its pool's nodes only
(common/scheduling/pools.py, shard/queue.py, shard/scheduler.py; the dispatcher's part is in
tests/dispatcher/test_dispatcher.py)."""
from __future__ import annotations

import pytest

from builders import Clock, Cluster, expr, make_config, node, node_affinity, pod, running, toleration
from common.model.objects import parse_pod
from common.scheduling.pools import CLUSTER_WIDE, pool_of, raw_pool_of, shards_for
from shard.queue import SchedulingQueue

POOL = "shardsched.io/pool"


@pytest.mark.parametrize("doc,want", [
    (pod("a", node_selector={POOL: "gpu"}), "gpu"),
    (pod("b", affinity=node_affinity([expr(POOL, "In", "gpu")], [expr(POOL, "In", "gpu"), expr("x", "Exists")])),
     "gpu"),
    (pod("c", affinity=node_affinity([expr(POOL, "In", "gpu")], [expr(POOL, "In", "cpu")])), CLUSTER_WIDE),
    (pod("d", affinity=node_affinity([expr(POOL, "In", "gpu", "cpu")])), CLUSTER_WIDE),
    (pod("e", affinity=node_affinity([expr(POOL, "In", "gpu")], [expr("x", "Exists")])), CLUSTER_WIDE),
    (pod("f", affinity=node_affinity([expr(POOL, "NotIn", "gpu")])), CLUSTER_WIDE),
    (pod("g"), CLUSTER_WIDE),
])
def test_a_pod_belongs_to_the_pool_its_own_requirements_pin(doc, want):
    assert pool_of(parse_pod(doc), POOL) == want
    assert raw_pool_of(doc, POOL) == want  # the dispatcher's reading of the raw document agrees
    assert pool_of(parse_pod(doc), "") == raw_pool_of(doc, "") == CLUSTER_WIDE  # off


def test_a_malformed_document_is_cluster_wide_for_the_dispatcher():
    assert raw_pool_of({"spec": {"affinity": {"nodeAffinity": 3}}}, POOL) == CLUSTER_WIDE
    assert raw_pool_of({"spec": "nonsense"}, POOL) == CLUSTER_WIDE


def test_a_pool_goes_to_its_shards_and_moves_when_one_dies():
    live = ["0", "1", "2", "3"]
    mine = shards_for("gpu", live, 2)
    assert len(mine) == 2 and set(mine) <= set(live)
    assert shards_for("gpu", live, 2) == mine  # the same in every replica
    assert shards_for(CLUSTER_WIDE, live, 2) == live and shards_for("gpu", live, 0) == live
    after = shards_for("gpu", [s for s in live if s != mine[0]], 2)
    assert mine[0] not in after and len(after) == 2


def test_each_pool_takes_its_turn_however_long_another_pools_queue():
    clock = Clock(0.0)
    q = SchedulingQueue(lambda a, b: a.pod.priority > b.pod.priority, clock=clock,
                        pool_of=lambda p: pool_of(p, POOL))
    for i in range(50):
        q.add(parse_pod(pod(f"gpu{i}", node_selector={POOL: "gpu"})))
    for i in range(3):
        q.add(parse_pod(pod(f"cpu{i}", priority=i)))
    order = [q.pop().pod.name for _ in range(8)]
    # round robin between the two pools; QueueSort (priority) within the cluster-wide one
    assert [n for n in order if n.startswith("cpu")] == ["cpu2", "cpu1", "cpu0"]
    assert order[:6:2] == ["gpu0", "gpu1", "gpu2"] or order[1:6:2] == ["gpu0", "gpu1", "gpu2"]
    assert order[6:] == ["gpu3", "gpu4"]  # the other pool is empty: no turn is wasted on it
    assert q.lengths()["pool:gpu"] == 50 - 5 + 5  # popped pods still count until done
    for n in order:
        q.done(f"default/{n}")
    assert q.lengths()["pool:gpu"] == 45 and "pool:*" not in q.lengths()


def _pools_cluster(label=POOL, pods=()):
    nodes = [node(f"gpu{i}", cpu="8", labels={POOL: "gpu"}, taints=["nvidia.com/gpu=present:NoSchedule"])
             for i in range(3)]
    nodes += [node(f"cpu{i}", cpu="8", labels={POOL: "cpu"}) for i in range(30)]
    return Cluster(nodes, pods, cfg=make_config("all", subClusters={"label": label}))


def test_a_pool_pod_is_filtered_against_its_pool_only():
    c = _pools_cluster()
    gpu = pod("g", cpu="1", node_selector={POOL: "gpu"}, tolerations=[toleration("nvidia.com/gpu")])
    result = c.schedule(gpu)
    assert result.node.startswith("gpu") and result.evaluated == 3
    wide = c.schedule(pod("w", cpu="1"))
    assert wide.node.startswith("cpu") and wide.evaluated == 33


def test_a_pool_pod_that_fits_nowhere_is_explained_over_every_node():
    pools, off = _pools_cluster(), _pools_cluster(label="")
    huge = pod("h", cpu="16", node_selector={POOL: "gpu"}, tolerations=[toleration("nvidia.com/gpu")])
    # (16 cpu is more than a gpu node's whole 8: kube v1.37 makes that unresolvable, so
    # preemption is not helpful there either)
    assert pools.explain(huge) == off.explain(huge) == (
        "0/33 nodes are available: 3 Insufficient cpu, 30 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/33 nodes are available: 33 Preemption is not helpful for scheduling.")
    # a pod that would fit an empty gpu node: preemption might help there, not elsewhere
    busy = _pools_cluster(pods=[running(f"r{i}", f"gpu{i}", "6", 0) for i in range(3)])
    busy_off = _pools_cluster(label="", pods=[running(f"r{i}", f"gpu{i}", "6", 0) for i in range(3)])
    big = pod("b", cpu="4", node_selector={POOL: "gpu"}, tolerations=[toleration("nvidia.com/gpu")])
    assert busy.explain(big) == busy_off.explain(big) == (
        "0/33 nodes are available: 3 Insufficient cpu, 30 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/33 nodes are available: 3 No preemption victims found for incoming pod, "
        "30 Preemption is not helpful for scheduling.")



def test_an_event_in_one_pool_never_walks_another_pools_backlog():
    """A binding on a CPU node asks the parked pods it may help: not the thousands of a
    saturated GPU pool turned down for their own nodes' resources (it used to ask every
    parked pod's hints on every event); a parked pod whose fate depends on other nodes
    (pod affinity) or that nothing explains is still asked."""
    clock = Clock(0.0)
    q = SchedulingQueue(lambda a, b: False, clock=clock, pool_of=lambda p: pool_of(p, POOL))
    docs = [pod(f"gpu{i}", node_selector={POOL: "gpu"}) for i in range(100)]
    docs += [pod("affine", node_selector={POOL: "gpu"}, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]}}),
             pod("unexplained", node_selector={POOL: "gpu"}), pod("wide")]
    for d in docs:
        q.add(parse_pod(d))
    while (entry := q.pop()) is not None:
        rejectors = frozenset() if entry.pod.name == "unexplained" else frozenset({"NodeResourcesFit"})
        q.requeue_unschedulable(entry, rejectors=rejectors)
    asked = []
    q.wake(lambda p, rejectors, *event: asked.append(p.name) or False, "event", pools={"cpu"})
    assert sorted(asked) == ["affine", "unexplained", "wide"]
    q.delete("default/wide")  # the backlog's pool alone is parked: still not asked
    asked.clear()
    q.wake(lambda p, rejectors, *event: asked.append(p.name) or False, "event", pools={"cpu"})
    assert sorted(asked) == ["affine", "unexplained"]
    q.add(parse_pod(pod("wide")))
    q.requeue_unschedulable(q.pop(), rejectors=frozenset({"NodeResourcesFit"}))
    asked.clear()
    asked.clear()
    q.wake(lambda p, rejectors, *event: asked.append(p.name) or False, "event", pools={"gpu"})
    assert len(asked) == 103
    asked.clear()
    assert q.wake(lambda p, rejectors, *event: asked.append(p.name) or p.name == "gpu7", "event") == 1
    assert len(asked) == 103 and q.lengths()["unschedulable"] == 102


def test_an_event_on_a_node_without_the_label_wakes_each_pod_once():
    clock = Clock(0.0)
    q = SchedulingQueue(lambda a, b: False, clock=clock, pool_of=lambda p: pool_of(p, POOL))
    q.add(parse_pod(pod("wide")))
    q.requeue_unschedulable(q.pop(), rejectors=frozenset({"NodeResourcesFit"}))
    assert q.wake(lambda p, rejectors, *event: True, "event", pools={""}) == 1
    clock.now += 60  # its backoff over
    assert q.pop().pod.name == "wide" and q.pop() is None
