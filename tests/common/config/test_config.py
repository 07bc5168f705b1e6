"""ShardschedConfiguration files: every number finite and in range, every shape error and
every invalid plugin setup reported with its field path (never a traceback), and every check
a process makes run by validation, so a file that validates never stops a process."""
from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from common import config
from common.scheduling.checks import profile_checks
from builders import Cluster, make_config, node, pod

from shard.scheduler import Scheduler
from shard.cache import ShardCache


def error_of(doc) -> str:
    with pytest.raises(config.ConfigError) as e:
        config.validate(doc)
    return str(e.value)


def number_leaves():
    """(dotted path, Leaf) of every numeric field outside lists."""
    out = []

    def walk(schema, prefix):
        for key, sub in schema.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(sub, config.Leaf) and float in sub.types:
                out.append((path, sub))
            elif isinstance(sub, dict):
                walk(sub, path)
    walk(config.SCHEMA, "")
    return out


def doc_with(path: str, value) -> dict:
    doc: dict = {}
    *parents, leaf = path.split(".")
    cur = doc
    for p in parents:
        cur = cur.setdefault(p, {})
    cur[leaf] = value
    return doc


@pytest.mark.parametrize("path", [p for p, _ in number_leaves()])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e300])
def test_every_number_is_finite_and_in_range(path, bad):
    """`threshold.rejectionDecay: .nan` used to pass and then stop all scheduling silently;
    1e300 seconds overflowed timers."""
    assert error_of(doc_with(path, bad)).startswith(f"config: {path}: ")


def test_nan_written_in_yaml_is_refused():
    doc = yaml.safe_load("threshold:\n  rejectionDecay: .nan\n")
    assert error_of(doc) == "config: threshold.rejectionDecay: must be a finite number, got nan"


def test_integers_past_int32_are_refused():
    assert error_of({"dispatcher": {"batchSize": 2**40}}).startswith("config: dispatcher.batchSize: must be <= ")


def test_empty_profiles_are_refused_with_their_path():
    """It used to pass and then StopIteration in every process."""
    assert error_of({"profiles": []}) == "config: profiles: must have at least 1 item(s)"


@pytest.mark.parametrize("doc, expected", [
    ({"profiles": [1]}, "config: profiles[0]: must be a mapping, got int"),
    ({"profiles": [{"schedulerName": "a", "plugins": []}]},
     "config: profiles[0].plugins: must be a mapping, got list"),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [{"name": "NodeResourcesFit", "args": [1]}]}]},
     "config: profiles[0].pluginConfig[0].args: must be a mapping, got list [1]"),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": [1]}}]}]},
     "config: profiles[0].pluginConfig[0].args.scoringStrategy: Invalid value: [1]: must be a mapping"),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": "cpu"}}]}]},
     'config: profiles[0].pluginConfig[0].args.resources: Invalid value: "cpu": must be a list'),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": "lots"}}]}]},
     'config: profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: "lots": must be an integer'),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "PodTopologySpread", "args": {"defaultConstraints": [[]]}}]}]},
     "config: profiles[0].pluginConfig[0].args.defaultConstraints[0]: Invalid value: []: must be a mapping"),
])
def test_shape_errors_name_their_path(doc, expected):
    """Wrong shapes used to give AttributeError or `invalid literal for int()` tracebacks."""
    assert error_of(doc) == expected


def test_plugin_args_are_validated_by_config_validation():
    """`scoringStrategy.type: MostAlocated` used to pass validation and then stop the shard."""
    doc = {"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAlocated"}}}]}]}
    assert error_of(doc) == (
        'config: profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "MostAlocated": '
        'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"')


def test_duplicate_plugin_config_is_refused():
    doc = {"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "InterPodAffinity", "args": {}}, {"name": "InterPodAffinity", "args": {}}]}]}
    assert error_of(doc) == 'config: profiles[0].pluginConfig[1]: Duplicate value: "InterPodAffinity"'


@pytest.mark.parametrize("plugins, expected", [
    ({"disabled": [{"name": "PrioritySort"}, {"name": "Coscheduling"}]},
     "config: profiles[0].plugins: Required value: exactly one queueSort plugin (Coscheduling, PrioritySort) "
     "must run, got 0"),
    ({"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}]},
     "config: profiles[0].plugins: Required value: at least one bind plugin (DefaultBinder) must run, got 0"),
    ({"disabled": [{"name": "NodePorts", "extensionPoints": ["preFilter"]}]},
     'config: profiles[0].plugins.disabled[0]: Invalid value: "NodePorts": NodePorts\'s filter needs its '
     "preFilter: switch filter off too"),
    ({"disabled": [{"name": "NodePorts", "extensionPoints": ["filtre"]}]},
     'config: profiles[0].plugins.disabled[0].extensionPoints[0]: Unsupported value: "filtre": supported values: '
     '"preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve", "permit", '
     '"preBind", "bind", "postBind"'),
    ({"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality", "weight": 3}]},
     'config: profiles[0].plugins.enabled[1]: Duplicate value: "ImageLocality"'),
])
def test_profiles_no_shard_could_run_are_refused(plugins, expected):
    assert error_of({"profiles": [{"schedulerName": "a", "plugins": plugins}]}) == expected


@pytest.mark.parametrize("section, expected", [
    ({"preemption": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}},
     "config: preemption.minCandidateNodesAbsolute: must not be 0 when minCandidateNodesPercentage is"),
    ({"leaderElection": {"leaseDurationSeconds": 10, "renewDeadlineSeconds": 10}},
     "config: leaderElection.renewDeadlineSeconds: must be less than leaseDurationSeconds (10), got 10"),
    ({"leaderElection": {"renewDeadlineSeconds": 2, "retryPeriodSeconds": 2}},
     "config: leaderElection.retryPeriodSeconds: must be less than renewDeadlineSeconds / 1.2 (1.66667), got 2"),
    ({"store": {"qps": -1}}, "config: store.qps: must be >= 0.0, got -1"),
    ({"store": {"url": "http://localhost:6379"}}, "config: store.url: must be memory://..., redis://..., "
     "rediss://..., unix://..., kube://..., got 'http://localhost:6379'"),
    ({"shards": {"count": 3, "basePort": 65534}},
     "config: shards.basePort: the last of 3 shards would listen on port 65536, past 65535"),
])
def test_cross_field_rules(section, expected):
    assert error_of(section) == expected


VALID_UNUSUAL = [
    {"disabled": [{"name": "TaintToleration", "extensionPoints": ["filter"]}]},
    {"disabled": [{"name": "*", "extensionPoints": ["preScore", "score"]}]},
    {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"},
                                             {"name": "ImageLocality", "weight": 5}]},
    {"disabled": [{"name": "NodeResourcesFit", "extensionPoints": ["preFilter", "filter"]}]},
    {"disabled": [{"name": "InterPodAffinity", "extensionPoints": ["score"]}]},
]


@pytest.mark.parametrize("plugins", VALID_UNUSUAL)
def test_a_valid_profile_builds_in_the_shard_and_the_binder(plugins):
    """What validation passes, every role can build: the shard's plugins and the binder's checks."""
    cfg = config.validate({"profiles": [{"schedulerName": "a", "plugins": plugins, "percentageOfNodesToScore": 30}]})
    sched = Scheduler(cfg, ShardCache())
    assert sched.profiles["a"].queue_sort is not None and sched.profiles["a"].bind
    assert profile_checks(cfg)["a"]


def test_per_profile_percentage_of_nodes_to_score():
    cfg = make_config(mode="adaptive", extra_profiles=[{"schedulerName": "quality", "percentageOfNodesToScore": 50}])
    sched = Scheduler(cfg, ShardCache())
    assert sched.profiles["quality"].threshold.target(1000) == 500
    assert sched.profiles["shardsched"].threshold is sched.threshold


_NAMES = ["*", "PrioritySort", "TaintToleration", "NodeResourcesFit", "InterPodAffinity", "ImageLocality",
          "DefaultBinder", "NodePorts", "PodTopologySpread", "NodeResourcesBalancedAllocation"]
_POINTS = ["preFilter", "filter", "preScore", "score", "queueSort", "bind", "postFilter"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_NAMES), st.lists(st.sampled_from(_POINTS), max_size=3, unique=True)),
                max_size=4),
       st.lists(st.tuples(st.sampled_from(_NAMES[1:]), st.integers(0, 100)), max_size=3, unique_by=lambda e: e[0]))
def test_whatever_validates_builds_in_every_role(disabled, enabled):
    """Random plugin sets: validation refuses them with a ConfigError, or the shard's profile
    and the binder's checks build from them (a file that validates never stops a process)."""
    doc = {"profiles": [{"schedulerName": "a", "plugins": {
        "disabled": [{"name": n, "extensionPoints": p} for n, p in disabled],
        "enabled": [{"name": n, "weight": w} for n, w in enabled]}}]}
    try:
        cfg = config.validate(doc)
    except config.ConfigError:
        return
    profile = Scheduler(cfg, ShardCache()).profiles["a"]
    assert profile.queue_sort is not None and profile.bind
    assert profile_checks(cfg)["a"]
    cluster = Cluster([node("n1", cpu="1"), node("n2", taints=["t=x:NoSchedule"])], [pod("old", node_name="n1")], cfg=cfg)
    assert cluster.schedule(pod("p", cpu="2", scheduler="a", priority=10)).status is not None


def test_native_extenders_follow_kubes_rules():
    with pytest.raises(config.ConfigError) as e:
        config.validate({"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize"},
                                       {"urlPrefix": "http://b", "httpTimeoutSeconds": 0}]})
    assert str(e.value).splitlines() == ["config: extenders[1].httpTimeoutSeconds: must be >= 0.001, got 0"]
    with pytest.raises(config.ConfigError) as e:
        config.validate({"extenders": [{"urlPrefix": "http://a", "prioritizeVerb": "prioritize"}]})
    assert str(e.value) == "config: extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"
    with pytest.raises(config.ConfigError) as e:
        config.validate({"extenders": [{"filterVerb": "filter"}]})
    assert str(e.value) == "config: extenders[0].urlPrefix: is required"
    assert config.validate({}).extenders == ()
