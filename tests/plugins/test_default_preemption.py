"""DefaultPreemption: kube-scheduler's rules, and pruning that never changes the choice.

Most rules are shown end to end through `simulate` (a pending preemptor, running pods as
potential victims); the pruning property drives the Scheduler directly on random clusters.
(The binder's checks on decisions with victims: tests/binder/test_checks.py; the shard loop's
nomination: tests/shard/test_loop.py.) Pods that state a priority get a PriorityClass granting
it (builders.with_priority_classes), as Priority admission requires.
"""
from __future__ import annotations

import random

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from common.model.objects import parse_object
from shard.cache import ShardCache
from shard.scheduler import Scheduler
from common.cli.simulate import simulate
from builders import make_config, node, pdb, pod, running, toleration, with_priority_classes


def sim(tmp_path, docs, cfg=None, seed=0) -> dict:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(with_priority_classes(docs)))
    out, code = simulate([str(path)], cfg or make_config(), seed)
    assert code == 0, out["errors"]
    return out["pods"]


def two_nodes(cpu="2"):
    return [node("n1", cpu=cpu), node("n2", cpu=cpu)]


# --- eligibility and victims ---------------------------------------------------------------------

def test_preemptor_evicts_the_lower_priority_pod_and_is_bound(tmp_path):
    out = sim(tmp_path, [node("n1", cpu="2"), running("low", "n1", "1500m", 10),
                         pod("high", "1", priority=100)])
    assert out["default/high"]["status"] == "Bound" and out["default/high"]["node"] == "n1"
    assert out["default/low"] == {"status": "Evicted", "node": None, "nominatedNode": None,
                                  "message": "", "evictedBy": "default/high"}


def test_preemption_policy_never_does_not_preempt(tmp_path):
    high = pod("high", "1", priority=100)
    high["spec"]["preemptionPolicy"] = "Never"
    out = sim(tmp_path, [node("n1", cpu="2"), running("low", "n1", "1500m", 10), high])
    assert out["default/high"]["status"] == "Unschedulable"
    assert "Insufficient cpu" in out["default/high"]["message"]
    assert out["default/low"]["status"] == "Bound"


def test_equal_priority_pods_are_never_victims(tmp_path):
    out = sim(tmp_path, [node("n1", cpu="2"), running("peer", "n1", "1500m", 100),
                         pod("high", "1", priority=100)])
    assert out["default/high"]["status"] == "Unschedulable"
    assert out["default/peer"]["status"] == "Bound"


def test_only_as_many_victims_as_needed_lowest_priority_first(tmp_path):
    """Reprieve gives back the most important pods while the preemptor still fits."""
    docs = [node("n1", cpu="4"),
            running("a", "n1", "1", 1), running("b", "n1", "1", 2), running("c", "n1", "1", 3),
            running("d", "n1", "1", 500),
            pod("high", "1500m", priority=100)]
    out = sim(tmp_path, docs)
    assert out["default/high"]["node"] == "n1"
    assert {k for k, v in out.items() if v["status"] == "Evicted"} == {"default/a", "default/b"}


def test_nodes_preemption_cannot_help_are_not_candidates(tmp_path):
    """n1 has an untolerated taint: evicting its pods would not help, so n2's higher
    victim is taken even though n1's would rank better."""
    docs = [node("n1", cpu="2", taints=["dedicated=gpu:NoSchedule"]), node("n2", cpu="2"),
            running("low-on-tainted", "n1", "2", 1, tolerations=[toleration("dedicated")]),
            running("mid", "n2", "2", 50), pod("high", "1", priority=100)]
    out = sim(tmp_path, docs)
    assert out["default/high"]["node"] == "n2"
    assert out["default/mid"]["status"] == "Evicted"
    assert out["default/low-on-tainted"]["status"] == "Bound"


def test_affinity_failure_means_no_preemption(tmp_path):
    docs = [node("n1", cpu="2", labels={"disk": "hdd"}), running("low", "n1", "2", 1),
            pod("high", "1", priority=100, node_selector={"disk": "ssd"})]
    out = sim(tmp_path, docs)
    assert out["default/high"]["status"] == "Unschedulable"
    assert out["default/low"]["status"] == "Bound"


def test_host_port_conflict_is_resolved_by_preemption(tmp_path):
    docs = [node("n1", cpu="8"), running("low", "n1", "100m", 1, ports=[8080]),
            pod("high", "100m", priority=100, ports=[8080])]
    out = sim(tmp_path, docs)
    assert out["default/high"]["node"] == "n1"
    assert out["default/low"]["evictedBy"] == "default/high"


# --- choosing the candidate ----------------------------------------------------------------------

def chosen(tmp_path, n1_pods, n2_pods, extra=(), request="1") -> str:
    docs = two_nodes() + list(n1_pods) + list(n2_pods) + list(extra) + [pod("high", request, priority=1000)]
    out = sim(tmp_path, docs)
    assert out["default/high"]["status"] == "Bound", out["default/high"]
    return out["default/high"]["node"]


def test_fewest_pdb_violations_first(tmp_path):
    n1 = [running("guarded", "n1", "2", 1, labels={"app": "db"})]
    n2 = [running("free", "n2", "2", 900)]
    assert chosen(tmp_path, n1, n2, extra=[pdb("db", {"app": "db"}, allowed=0)]) == "n2"


def test_lowest_highest_victim_priority(tmp_path):
    n1 = [running("x", "n1", "2", 20)]
    n2 = [running("y", "n2", "2", 10)]
    assert chosen(tmp_path, n1, n2) == "n2"


def test_smallest_priority_sum(tmp_path):
    n1 = [running("a1", "n1", "1", 10), running("a2", "n1", "1", 10)]
    n2 = [running("b1", "n2", "1", 10), running("b2", "n2", "1", 5)]
    assert chosen(tmp_path, n1, n2, request="2") == "n2"


def test_fewest_victims(tmp_path):
    """Equal highest priority; n1 needs two victims, n2 one (priority sums shifted as
    kube-scheduler does, so fewer victims also means a smaller sum)."""
    n1 = [running("a1", "n1", "1", 10), running("a2", "n1", "1", 10)]
    n2 = [running("b1", "n2", "2", 10)]
    assert chosen(tmp_path, n1, n2, request="2") == "n2"


def test_latest_start_time_of_the_highest_priority_victims(tmp_path):
    n1 = [running("old", "n1", "2", 10, start="2026-01-01T00:00:00Z")]
    n2 = [running("new", "n2", "2", 10, start="2026-06-01T00:00:00Z")]
    assert chosen(tmp_path, n1, n2) == "n2"


def test_pdb_protected_pod_is_reprieved_first(tmp_path):
    """Either pod's eviction frees enough; the one a budget protects stays."""
    docs = [node("n1", cpu="3"), running("guarded", "n1", "1", 5, labels={"app": "db"}),
            running("plain", "n1", "1", 10), running("big", "n1", "1", 900),
            pdb("db", {"app": "db"}, min_available=1), pod("high", "1", priority=100)]
    out = sim(tmp_path, docs)
    assert out["default/plain"]["status"] == "Evicted"
    assert out["default/guarded"]["status"] == "Bound"


def test_budget_without_status_is_worked_out_from_its_spec(tmp_path):
    """minAvailable 2 of 2 healthy pods allows no disruption: the only candidate breaks it.
    Budgets are best effort in preemption, as in kube-scheduler: the victims are deleted
    outright (not refused, as the binder does it too) and the preemptor is bound."""
    docs = [node("n1", cpu="2"), running("db1", "n1", "1", 1, labels={"app": "db"}),
            running("db2", "n1", "1", 1, labels={"app": "db"}),
            pdb("db", {"app": "db"}, min_available=2), pod("high", "2", priority=100)]
    out = sim(tmp_path, docs)
    assert (out["default/high"]["status"], out["default/high"]["node"]) == ("Bound", "n1"), out["default/high"]
    assert out["default/db1"]["status"] == out["default/db2"]["status"] == "Evicted"
    assert out["default/db1"]["evictedBy"] == "default/high"


def test_every_candidate_breaks_a_budget_the_one_breaking_fewest_is_taken(tmp_path):
    """Two violations on n1, one on n2: kube-scheduler preempts on n2, and so does simulate."""
    guarded = {"app": "db"}
    n1 = [running("a1", "n1", "1", 1, labels=guarded), running("a2", "n1", "1", 1, labels=guarded)]
    n2 = [running("b1", "n2", "2", 1, labels=guarded)]
    out = sim(tmp_path, two_nodes() + n1 + n2 + [pdb("db", guarded, allowed=0), pod("high", "2", priority=100)])
    assert (out["default/high"]["status"], out["default/high"]["node"]) == ("Bound", "n2"), out["default/high"]
    assert out["default/b1"]["status"] == "Evicted"
    assert out["default/a1"]["status"] == out["default/a2"]["status"] == "Bound"


# --- nominated pods ------------------------------------------------------------------------------

def test_nominated_higher_priority_pod_keeps_its_room(tmp_path):
    """n1 has room for one pod and a priority-500 pod is nominated there: a lower-priority
    pod must not take it, an equal-or-higher one is unaffected by lower nominations."""
    waiting = pod("waiting", "2", priority=500, node_selector={"kubernetes.io/hostname": "nowhere"})
    waiting["status"]["nominatedNodeName"] = "n1"
    docs = [node("n1", cpu="2"), waiting, pod("small", "1", priority=10)]
    out = sim(tmp_path, docs)
    assert out["default/small"]["status"] == "Unschedulable"
    assert out["default/waiting"]["nominatedNode"] == "n1"
    docs[-1] = pod("small", "1", priority=900)
    out = sim(tmp_path, docs)
    assert out["default/small"]["node"] == "n1"


def test_preemption_clears_lower_nominations_on_the_node(tmp_path):
    lower = pod("lower", "2", priority=50, node_selector={"kubernetes.io/hostname": "nowhere"})
    lower["status"]["nominatedNodeName"] = "n1"
    docs = [node("n1", cpu="2"), running("victim", "n1", "2", 1), lower, pod("high", "2", priority=100)]
    out = sim(tmp_path, docs)
    assert out["default/high"]["node"] == "n1"
    assert out["default/lower"]["nominatedNode"] is None


def test_no_preemption_while_earlier_victims_terminate(tmp_path):
    high = pod("high", "2", priority=100)
    high["status"]["nominatedNodeName"] = "n1"
    going = running("going", "n1", "2", 1)
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    docs = [node("n1", cpu="2"), node("n2", cpu="2"), going, running("other", "n2", "2", 1), high]
    out = sim(tmp_path, docs)
    assert out["default/high"]["status"] == "Unschedulable"
    assert out["default/other"]["status"] == "Bound"


# --- kube's message when preemption finds nothing -------------------------------------------

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def _message(nodes, pods, preemptor, pruning=True, **cfg):
    cache = ShardCache()
    for n in nodes:
        cache.set_node(parse_object(n))
    for p in pods:
        cache.set_pod(parse_object(p))
    sched = Scheduler(make_config(**cfg), cache, seed=1, preemption_pruning=pruning)
    sched.refresh()
    result = sched.schedule(parse_object(preemptor))
    assert not result.scheduled
    return sched.explain(result)


def _never(p):
    p["spec"]["preemptionPolicy"] = "Never"
    return p


# Each expected message follows kube-scheduler v1.37's code paths: FitError.Error() of the
# filters, then DefaultPreemption.PostFilter's "preemption: " + either the eligibility reason
# (PodEligibleToPreemptOthers) or the FitError of DryRunPreemption's node statuses, with
# "Preemption is not helpful for scheduling" for the nodes FindCandidates did not try.
MESSAGE_CASES = {
    # the example: six nodes, nothing of lower priority anywhere; v1.37: the request is
    # beyond every node's allocatable, so NodeResourcesFit says UnschedulableAndUnresolvable
    # and no node is tried (v1.33: "6 No preemption victims found for incoming pod")
    "beyond-allocatable": ([node(f"n{i}", cpu="1") for i in range(6)], [], pod("p", "2"),
                           "0/6 nodes are available: 6 Insufficient cpu. "
                           f"preemption: 0/6 nodes are available: 6 {NOT_HELPFUL}."),
    # within every node's allocatable, but only pods of higher priority hold it
    "no-victims": ([node(f"n{i}", cpu="2") for i in range(6)], [running(f"a{i}", f"n{i}", "1", 50) for i in range(6)],
                   pod("p", "2"),
                   "0/6 nodes are available: 6 Insufficient cpu. "
                   f"preemption: 0/6 nodes are available: 6 {NO_VICTIMS}."),
    "never": ([node("n1", cpu="2")], [running("low", "n1", "2", 1)], _never(pod("p", "1", priority=10)),
              "0/1 nodes are available: 1 Insufficient cpu. "
              "preemption: not eligible due to preemptionPolicy=Never."),
    "mixed": ([node("small", cpu="2"), node("g1", taints=["dedicated=gpu:NoSchedule"]),
               node("g2", taints=["dedicated=gpu:NoSchedule"])], [running("keeper", "small", "1", 50)], pod("p", "2"),
              "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). "
              f"preemption: 0/3 nodes are available: 1 {NO_VICTIMS}, 2 {NOT_HELPFUL}."),
    # evicting the lower pod frees 1 of the 4 cpu asked: the dry run fails on resources
    "evicting-is-not-enough": ([node("n1", cpu="3")], [running("low", "n1", "1", 1), running("high", "n1", "2", 50)],
                               pod("p", "3", priority=10),
                               "0/1 nodes are available: 1 Insufficient cpu. "
                               "preemption: 0/1 nodes are available: 1 Insufficient cpu."),
    # a higher-priority pod holds the port: NodePorts fails before NodeResourcesFit
    "port-held-above": ([node("n1", cpu="2")],
                        [running("low", "n1", "1", 1), running("keeper", "n1", "1", 50, ports=[80])],
                        pod("p", "4", priority=10, ports=[80]),
                        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
                        "preemption: 0/1 nodes are available: 1 node(s) didn't have free ports for the "
                        "requested pod ports."),
    "only-higher-pods": ([node("n1", cpu="3"), node("n2", cpu="3")],
                         [running("a", "n1", "2", 50), running("b", "n2", "2", 1), running("c", "n2", "1", 50)],
                         pod("p", "3", priority=10),
                         "0/2 nodes are available: 2 Insufficient cpu. "
                         f"preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 {NO_VICTIMS}."),
    "selector-everywhere": ([node("n1"), node("n2")], [running("low", "n1", "1", 1)],
                            pod("p", "1", priority=10, node_selector={"disk": "ssd"}),
                            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
                            f"preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."),
}


@pytest.mark.parametrize("pruning", [True, False])
@pytest.mark.parametrize("case", sorted(MESSAGE_CASES))
def test_unschedulable_message_includes_kubes_preemption_part(case, pruning):
    nodes, pods, preemptor, want = MESSAGE_CASES[case]
    assert _message(nodes, pods, preemptor, pruning) == want


def test_no_preemption_message_while_earlier_victims_terminate():
    high = pod("high", "2", priority=100)
    high["status"]["nominatedNodeName"] = "n1"
    going = running("going", "n1", "2", 1)
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert _message([node("n1", cpu="2")], [going], high) == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to a terminating pod on the nominated node.")


# --- pruning never changes the result ------------------------------------------------------------

CLUSTERS = st.lists(st.tuples(st.integers(1, 8), st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6)),
                                                          max_size=5)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CLUSTERS, st.integers(1, 8), st.integers(1, 7), st.integers(0, 1000))
def test_pruning_picks_the_same_node_and_victims(cluster, cpu, priority, seed):
    """Nodes of 1-8 cpu holding pods of 1-4 cpu at priorities 0-6; a preemptor of random size
    and priority. With and without pruning: the same decision, same seed, and when there is
    none the same message (a pruned node reports what its dry run would have said)."""
    cfg = make_config(preemption={"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 3})
    decisions = []
    for pruning in (True, False):
        cache = ShardCache()
        for i, (node_cpu, pods) in enumerate(cluster):
            cache.set_node(parse_object(node(f"n{i}", cpu=str(node_cpu))))
            for j, (pod_cpu, prio) in enumerate(pods):
                cache.set_pod(parse_object(running(f"p{i}-{j}", f"n{i}", str(pod_cpu), prio)))
        sched = Scheduler(cfg, cache, seed=seed, preemption_pruning=pruning)
        sched.refresh()
        result = sched.schedule(parse_object(pod("high", str(cpu), priority=priority)))
        message = None if result.scheduled else sched.explain(result)
        decisions.append((result.node, [v.key for v in result.victims], message))
        if pruning:
            pruned = result.pruned
    assert decisions[0] == decisions[1]
    if decisions[0][0] is None and cpu > 8:
        assert pruned == len(cluster)  # nothing is big enough: every node pruned


def test_pruning_skips_nodes_without_enough_lower_priority_pods():
    cfg = make_config()
    cache = ShardCache()
    rng = random.Random(1)
    for i in range(200):
        cache.set_node(parse_object(node(f"n{i}", cpu="4")))
        prio = 1 if i % 50 == 0 else 1000  # only every 50th node holds preemptible pods
        cache.set_pod(parse_object(running(f"p{i}", f"n{i}", "4", prio, start=f"2026-01-01T00:00:{rng.randrange(60):02d}Z")))
    sched = Scheduler(cfg, cache, seed=3)
    sched.refresh()
    result = sched.schedule(parse_object(pod("high", "2", priority=100)))
    assert result.node is not None and result.node in {f"n{i}" for i in range(0, 200, 50)}
    assert result.pruned == 196


GROUPED = st.lists(st.tuples(st.integers(1, 8), st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6),
                                                                   st.sampled_from([None, "a", "b"])),
                                                         max_size=5)), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GROUPED, st.integers(1, 3), st.integers(1, 8), st.integers(1, 7), st.integers(0, 1000))
def test_pruning_stays_lossless_with_pod_groups_and_never_breaks_one(cluster, quorum_a, cpu, priority, seed):
    """As above, with running pods in two pod groups (group "a" of minMember `quorum_a`,
    group "b" of minMember 1): the same decision with and without pruning, and its victims
    never take a group below its minMember nor come from a group of priority not below the
    preemptor's."""
    from builders import pod_group
    from common.model.podgroup import victims_break_group

    cfg = make_config(preemption={"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 3})
    decisions = []
    for pruning in (True, False):
        cache = ShardCache()
        sched = Scheduler(cfg, cache, seed=seed, preemption_pruning=pruning)
        sched.groups.apply_group("ADDED", pod_group("a", quorum_a))
        sched.groups.apply_group("ADDED", pod_group("b", 1))
        for i, (node_cpu, pods) in enumerate(cluster):
            cache.set_node(parse_object(node(f"n{i}", cpu=str(node_cpu))))
            for j, (pod_cpu, prio, group) in enumerate(pods):
                d = running(f"p{i}-{j}", f"n{i}", str(pod_cpu), prio,
                            labels={"scheduling.x-k8s.io/pod-group": group} if group else None)
                cache.set_pod(parse_object(d))
                sched.groups.apply_pod("ADDED", f"default/p{i}-{j}", d)
        sched.refresh()
        result = sched.schedule(parse_object(pod("high", str(cpu), priority=priority)))
        decisions.append((result.node, [v.key for v in result.victims]))
        if result.victims:
            priority_of = lambda k: cache.counted(k).priority if cache.counted(k) else None  # noqa: E731
            assert victims_break_group(result.victims, sched.groups, priority, priority_of) is None
    assert decisions[0] == decisions[1]
