"""The shard's cycle with scheduler extenders (shard/extenders.py): filter after the Filter
plugins, prioritize added to the total, preempt on DefaultPreemption's candidates, as
kube-scheduler's schedule_one.go and preemption.go call them."""
from __future__ import annotations

import pytest

from builders import SCHEDULER, Cluster, TestExtender, node, pod, running
from common import config
from shard.framework import ERROR

NODES = [node("n-a", cpu="2"), node("n-bad", cpu="2"), node("n-c", cpu="2")]


@pytest.fixture
def ext():
    server = TestExtender(reject="bad", favour="n-c")
    yield server
    server.close()


def cfg_with(*extenders) -> config.Config:
    return config.validate({"threshold": {"mode": "all"}, "profiles": [{"schedulerName": SCHEDULER}],
                            "extenders": list(extenders)})


def extender(server, **fields) -> dict:
    return {"urlPrefix": server.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1, **fields}


@pytest.mark.parametrize("cache_capable", [False, True])
def test_the_extender_filters_and_its_scores_decide(ext, cache_capable):
    c = Cluster(NODES, cfg=cfg_with(extender(ext, nodeCacheCapable=cache_capable)))
    for i in range(5):
        result = c.schedule(pod(f"web-{i}", cpu="100m"))
        assert result.node == "n-c"
    calls = len(ext.calls)
    assert c.sched.grade(result) is None and len(ext.calls) == calls  # not graded: no second call
    filters = [args for verb, args in ext.calls if verb == "filter"]
    sent = filters[0]["NodeNames"] if cache_capable else [n["metadata"]["name"] for n in filters[0]["Nodes"]["items"]]
    assert sorted(sent) == ["n-a", "n-bad", "n-c"]
    prioritized = [args for verb, args in ext.calls if verb == "prioritize"][0]
    got = prioritized["NodeNames"] if cache_capable else [n["metadata"]["name"] for n in prioritized["Nodes"]["items"]]
    assert sorted(got) == ["n-a", "n-c"]  # only what passed its filter


def test_only_nodes_the_plugins_kept_reach_the_extender(ext):
    c = Cluster(NODES, cfg=cfg_with(extender(ext, nodeCacheCapable=True)))
    assert c.schedule(pod("big", cpu="3")).scheduled is False
    assert ext.calls == []  # no feasible node: the extender is not asked
    assert c.explain(pod("big", cpu="3")).startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_rejected_everywhere_gives_kubes_message_with_the_extenders_reasons():
    server = TestExtender(reject="n-", message="licence exhausted")
    try:
        c = Cluster(NODES, cfg=cfg_with(extender(server, prioritizeVerb="", weight=0)))
        assert c.explain(pod("web", cpu="1")) == (
            "0/3 nodes are available: 3 licence exhausted. preemption: 0/3 nodes are available: "
            "3 No preemption victims found for incoming pod.")
        server.reject, server.unresolvable = "bad", "n-"  # FailedAndUnresolvable: preemption cannot help
        assert c.explain(pod("web", cpu="1")) == (
            "0/3 nodes are available: 3 licence exhausted. preemption: 0/3 nodes are available: "
            "3 Preemption is not helpful for scheduling.")
    finally:
        server.close()


def test_a_failing_extender_fails_the_cycle_unless_ignorable(ext):
    ext.status = 500
    c = Cluster(NODES, cfg=cfg_with(extender(ext)))
    result = c.schedule(pod("web", cpu="1"))
    assert result.status.code == ERROR and not result.scheduled
    assert "failed filter with extender at URL" in c.sched.explain(result) and "code 500" in c.sched.explain(result)
    ignorable = Cluster(NODES, cfg=cfg_with(extender(ext, ignorable=True)))
    assert ignorable.schedule(pod("web", cpu="1")).scheduled  # skipped; its scores failed too: left out


def test_managed_resources_limit_the_pods_it_is_called_for(ext):
    c = Cluster(NODES, cfg=cfg_with(extender(ext, managedResources=[{"name": "example.com/gpu"}])))
    assert c.schedule(pod("plain", cpu="1")).scheduled
    assert ext.calls == []
    gpu = pod("gpu", cpu="1")
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "0"}
    assert c.schedule(gpu).node == "n-c" and ext.verbs() == ["filter", "prioritize"]


def test_preempt_keeps_the_candidates_the_extender_chooses():
    server = TestExtender(preempt_keep=("n-a",))
    try:
        low = [running(f"low-{n}", n, "2", 0, uid=f"u-{n}") for n in ("n-a", "n-bad", "n-c")]
        c = Cluster(NODES, low, cfg=cfg_with({"urlPrefix": server.url, "preemptVerb": "preempt"}))
        high = pod("high", cpu="2", priority=100)
        result = c.schedule(high)
        assert result.node == "n-a" and [v.key for v in result.victims] == ["default/low-n-a"]
        args = [a for verb, a in server.calls if verb == "preempt"][0]
        assert sorted(args["NodeNameToVictims"]) == ["n-a", "n-bad", "n-c"]
        assert args["NodeNameToVictims"]["n-c"]["Pods"][0]["metadata"]["uid"] == "u-n-c"
        server.preempt_keep = ()
        assert c.explain(high).endswith("preemption: no candidate node for preemption")
    finally:
        server.close()


def test_resources_ignored_by_the_scheduler_are_left_to_the_extender(ext):
    gpu = pod("gpu", cpu="1", extra={"example.com/gpu": "1"})
    managed = {"managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}]}
    c = Cluster(NODES, cfg=cfg_with(extender(ext, **managed)))
    assert c.schedule(gpu).node == "n-c"  # NodeResourcesFit does not count it; the extender decides
    counted = Cluster(NODES, cfg=cfg_with(extender(ext, managedResources=[{"name": "example.com/gpu"}])))
    assert counted.explain(gpu).startswith("0/3 nodes are available: 3 Insufficient example.com/gpu.")
