"""KubeSchedulerConfiguration files: kube's defaulting, rules and messages, the mapping onto
shardsched's sections, the extension key, and errors that name the kube file's own fields."""
from __future__ import annotations

import copy

import pytest

from common import config
from common.config.plugin_args import profile_args
from common.config.profile_plugins import resolve

KSC = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def ksc(**fields) -> dict:
    return {**copy.deepcopy(KSC), **fields}


def load(doc) -> tuple[config.Config, list[str]]:
    return config.validate_with_notes(doc)


def error_of(doc) -> str:
    with pytest.raises(config.ConfigError) as e:
        config.validate(doc)
    return str(e.value).removeprefix("config: ")


def uses(cfg, i=0) -> dict:
    """name -> (weight, sorted points) of profile i as the shard runs it."""
    return {u.name: (u.weight, sorted(u.points)) for u in resolve(cfg.profiles[i])}


def test_an_empty_file_is_kube_schedulers_default_profile():
    cfg, notes = load(ksc())
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    got = uses(cfg)
    # kube-scheduler v1.37's order (NodeName now before NodeUnschedulable; DynamicResources
    # as it treats pods without claims), less NodeDeclaredFeatures (the README says so: a note
    # only when a file names it, not on every start)
    assert list(got) == ["SchedulingGates", "PrioritySort", "NodeName", "NodeUnschedulable", "TaintToleration",
                         "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                         "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
                         "DefaultPreemption", "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder"]
    assert got["TaintToleration"] == (3, ["filter", "preScore", "score"])
    assert got["NodeResourcesFit"][0] == 1 and got["PodTopologySpread"][0] == 2
    # StorageCapacityScoring is on by default in v1.37: VolumeBinding scores (multiPoint weight 1)
    assert got["VolumeBinding"] == (1, ["filter", "preFilter", "preScore", "reserve", "score"])
    assert got["DynamicResources"] == (2, ["filter", "postFilter", "preEnqueue", "preFilter", "preScore", "reserve",
                                           "score"])
    assert notes == []
    _, notes = load(ksc(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "NodeDeclaredFeatures"}]}}}]))
    assert [n.split(":")[1].split()[0] for n in notes if "left out" in n] == ["NodeDeclaredFeatures"]
    # kube's client defaults apply to kube:// requests; backoff and leader election as kube's
    assert cfg.store.qps == 50 and cfg.store.burst == 100
    assert cfg.shards.pod_initial_backoff_seconds == 1 and cfg.shards.pod_max_backoff_seconds == 10
    assert cfg.leader_election.to_dict() == {"leaderElect": True, "leaseDurationSeconds": 15, "renewDeadlineSeconds": 10,
                                     "retryPeriodSeconds": 2, "resourceName": "shardsched-dispatcher",
                                     "identity": "{hostname}_{role}-{id}"}
    assert cfg.threshold.mode == "adaptive"


def test_top_level_fields_map_onto_shardsched_sections():
    cfg, _ = load(ksc(percentageOfNodesToScore=40, podInitialBackoffSeconds=2, podMaxBackoffSeconds=20,
                      leaderElection={"leaderElect": False, "leaseDuration": "1m30s", "renewDeadline": "60s",
                                      "retryPeriod": "500ms", "resourceName": "my-scheduler"},
                      clientConnection={"kubeconfig": "/etc/kube.conf", "qps": -1, "burst": 7}))
    assert cfg.threshold.mode == "percentage" and cfg.threshold.percentage == 40
    assert (cfg.shards.pod_initial_backoff_seconds, cfg.shards.pod_max_backoff_seconds) == (2, 20)
    assert cfg.leader_election.to_dict() == {"leaderElect": False, "leaseDurationSeconds": 90, "renewDeadlineSeconds": 60,
                                     "retryPeriodSeconds": 0.5, "resourceName": "my-scheduler",
                                     "identity": "{hostname}_{role}-{id}"}
    assert cfg.store.kubeconfig == "/etc/kube.conf"
    assert (cfg.store.qps, cfg.store.burst) == (0, 7)  # a negative qps: no limit


def test_profiles_plugins_per_extension_point():
    cfg, _ = load(ksc(profiles=[{"schedulerName": "packer", "percentageOfNodesToScore": 20, "plugins": {
        "multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 4}], "disabled": [{"name": "NodePorts"}]},
        "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                  "disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
        "filter": {"disabled": [{"name": "TaintToleration"}]},
    }}]))
    got = uses(cfg)
    assert "NodePorts" not in got
    assert got["ImageLocality"] == (4, ["score"])
    assert got["NodeResourcesFit"] == (5, ["filter", "preFilter", "preScore", "score"])
    assert "NodeResourcesBalancedAllocation" not in got  # it only scores
    assert got["TaintToleration"] == (3, ["preScore", "score"])
    assert cfg.profiles[0].percentage_of_nodes_to_score == 20


def test_star_and_a_plugin_only_at_one_point():
    cfg, notes = load(ksc(profiles=[{"schedulerName": "s", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}], "enabled": [
            {"name": "PrioritySort"}, {"name": "NodeResourcesFit"}, {"name": "DefaultBinder"}]},
        "score": {"enabled": [{"name": "ImageLocality"}], "disabled": [{"name": "*"}]},
    }}]))
    got = uses(cfg)
    assert got == {"PrioritySort": (0, ["queueSort"]), "NodeResourcesFit": (0, ["filter", "preFilter"]),
                   "DefaultBinder": (0, ["bind"]), "ImageLocality": (1, ["score"])}
    assert "SchedulingGates" not in got  # '*' removed it too, as in kube


@pytest.mark.parametrize("fields, expected", [
    (dict(apiVersion="kubescheduler.config.k8s.io/v1beta3"),
     'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: '
     '"kubescheduler.config.k8s.io/v1"'),
    (dict(percentageOfNodesToScore=101), "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
    (dict(profiles=[{"schedulerName": "a", "percentageOfNodesToScore": -1}]),
     "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"),
    (dict(podInitialBackoffSeconds=0), "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
    (dict(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
     "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds"),
    (dict(parallelism=0), "parallelism: Invalid value: 0: should be an integer value greater than zero"),
    (dict(leaderElection={"leaseDuration": "10s", "renewDeadline": "10s"}),
     "leaderElection.leaseDuration: Invalid value: 10s: LeaseDuration must be greater than RenewDeadline"),
    (dict(leaderElection={"renewDeadline": "2s"}),
     "leaderElection.renewDeadline: Invalid value: 2s: renewDeadline must be greater than retryPeriod*JitterFactor (1.2)"),
    (dict(leaderElection={"retryPeriod": "0s"}),
     "leaderElection.retryPeriod: Invalid value: 0s: must be greater than zero"),
    (dict(leaderElection={"resourceLock": "configmaps"}),
     'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"'),
    (dict(leaderElection={"leaseDuration": "15 seconds"}),
     'leaderElection.leaseDuration: Invalid value: "15 seconds": must be a duration such as "15s" or "1m30s"'),
    (dict(clientConnection={"burst": -1}), "clientConnection.burst: Invalid value: -1: must be non-negative"),
    (dict(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
     "profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName"),
    (dict(profiles=[{"schedulerName": "a"}, {}]), "profiles[1].schedulerName: Required value"),
    (dict(profiles=[{"pluginConfig": [{"name": "InterPodAffinity"}, {"name": "InterPodAffinity"}]}]),
     'profiles[0].pluginConfig[1]: Duplicate value: "InterPodAffinity"'),
    (dict(profiles=[{"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}}]),
     'profiles[0].plugins.filter.enabled[0]: Invalid value: "ImageLocality": ImageLocality does not extend the '
     "filter extension point"),
    (dict(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}}}]),
     'profiles[0].plugins.multiPoint.enabled[1]: Duplicate value: "ImageLocality"'),
    (dict(profiles=[{"plugins": {"preFilter": {"disabled": [{"name": "NodeAffinity"}]}}}]),
     'profiles[0].plugins.preFilter.disabled[0]: Invalid value: "NodeAffinity": NodeAffinity\'s filter needs '
     "its preFilter: switch filter off too, or enable preFilter"),
])
def test_kube_rules_with_kubes_messages(fields, expected):
    assert error_of(ksc(**fields)) == expected


def test_extenders_are_refused_with_kubes_messages_all_at_once():
    doc = ksc(extenders=[
        {"urlPrefix": "http://a", "prioritizeVerb": "prioritize", "bindVerb": "bind",
         "managedResources": [{"name": "cpu"}, {"name": "example.com/gpu"}, {"name": "example.com/gpu"},
                              {"name": "bad name/x"}]},
        {"urlPrefix": "http://b", "bindVerb": "bind", "httpTimeout": "soon"},
    ])
    with pytest.raises(config.ConfigError) as e:
        config.validate(doc)
    got = [f"{path}: {message}" for path, message in e.value.errors]
    assert got[0] == 'extenders[1].httpTimeout: Invalid value: "soon": must be a duration such as "30s"'
    assert got[1:4] == [
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name',
        'extenders[0].managedResources[2].name: Invalid value: "example.com/gpu": duplicate extender managed '
        "resource name",
    ]
    assert got[4].startswith('extenders[0].managedResources[3].name: Invalid value: "bad name/x": prefix part ')
    assert got[-1] == ('extenders: Invalid value: "found 2 extenders implementing bind": only one extender can '
                       "implement bind")


def test_extenders_carry_over_typed_with_kubes_defaults():
    cfg = config.validate(ksc(extenders=[
        {"urlPrefix": "https://gpu:8443/sched", "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 3,
         "nodeCacheCapable": True, "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
         "ignorable": True, "enableHTTPS": True, "tlsConfig": {"serverName": "gpu", "caData": "aGVsbG8="}},
        {"urlPrefix": "http://licences", "bindVerb": "bind", "httpTimeout": "1m30s"},
    ]))
    first, second = cfg.extenders
    assert (first.url_prefix, first.filter_verb, first.prioritize_verb, first.weight) == \
        ("https://gpu:8443/sched", "filter", "prioritize", 3)
    assert first.node_cache_capable and first.ignorable and first.enable_https
    assert first.http_timeout_seconds == 30  # kube's default
    assert first.managed_resources[0].name == "example.com/gpu" and first.managed_resources[0].ignored_by_scheduler
    assert (first.tls_config.server_name, first.tls_config.ca_data) == ("gpu", "aGVsbG8=")
    assert (second.bind_verb, second.http_timeout_seconds, second.filter_verb) == ("bind", 90, "")


def test_extenders_tls_data_must_be_base64():
    assert error_of(ksc(extenders=[{"urlPrefix": "https://x", "tlsConfig": {"certData": "not base64!"}}])) == \
        'extenders[0].tlsConfig.certData: Invalid value: "<data>": must be base64-encoded PEM, as Go\'s []byte'


@pytest.mark.parametrize("fields, expected", [
    (dict(delayCacheUntilActive=True), "delayCacheUntilActive: Invalid value: true: not supported by shardsched: "
     "only the dispatcher elects a leader, and shards and binders keep their caches warm"),
    (dict(leaderElection={"resourceNamespace": "scheduling"}),
     'leaderElection.resourceNamespace: Invalid value: "scheduling": not supported by shardsched, whose Leases '
     "live in its own namespace: leave kube's default kube-system"),
    (dict(clientConnection={"contentType": "application/cbor"}),
     'clientConnection.contentType: Invalid value: "application/cbor": not supported by shardsched, which sends JSON'),
    (dict(healthzBindAddress="0.0.0.0:10251"), "healthzBindAddress: Forbidden: unknown field (known: apiVersion, "
     "kind, parallelism, leaderElection, clientConnection, enableProfiling, enableContentionProfiling, "
     "percentageOfNodesToScore, podInitialBackoffSeconds, podMaxBackoffSeconds, profiles, extenders, "
     "delayCacheUntilActive, shardsched)"),
    (dict(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "NodeResourceTopologyMatch"}]}}}]),
     'profiles[0].plugins.multiPoint.enabled[0].name: Unsupported value: "NodeResourceTopologyMatch": supported '
     'values: "Coscheduling", "DefaultBinder", "DefaultPreemption", "DynamicResources", "GangScheduling", '
     '"ImageLocality", "InterPodAffinity", '
     '"NodeAffinity", "NodeName", "NodePorts", "NodeResourcesBalancedAllocation", "NodeResourcesFit", '
     '"NodeUnschedulable", "NodeVolumeLimits", "PodTopologySpread", "PrioritySort", "SchedulingGates", '
     '"TaintToleration", "VolumeBinding", "VolumeRestrictions", "VolumeZone"'),
    (dict(profiles=[{"plugins": {"placementScore": {"enabled": [{"name": "PodGroupPodsCount"}]}}}]),
     "profiles[0].plugins.placementScore.enabled[0]: Forbidden: shardsched has no workload scheduling cycle "
     "(kube's GenericWorkload and TopologyAwareWorkloadScheduling, off by default)"),
    (dict(profiles=[{"plugins": {"reserve": {"enabled": [{"name": "NodePorts"}]}}}]),
     'profiles[0].plugins.reserve.enabled[0]: Invalid value: "NodePorts": NodePorts does not '
     "extend the reserve extension point"),
    (dict(profiles=[{"pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": "-1s"}}]}]),
     "profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: -1s: must be zero or positive"),
])
def test_what_shardsched_cannot_honour_is_refused_by_name(fields, expected):
    assert error_of(ksc(**fields)) == expected


def test_errors_found_after_mapping_name_the_kube_files_fields():
    """Plugin args, weights and extension sections are checked in shardsched's terms; the
    error still names the field of the file the user wrote."""
    doc = ksc(profiles=[{"pluginConfig": [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 600}},
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAlocated"}}}]}])
    assert error_of(doc).startswith("profiles[0].pluginConfig[1].args.scoringStrategy.type: Unsupported value: ")
    doc = ksc(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 200}]}}}])
    assert error_of(doc) == "profiles[0].plugins.multiPoint.enabled[0].weight: must be <= 100, got 200"
    doc = ksc(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 200}]}}}])
    assert error_of(doc) == "profiles[0].plugins.score.enabled[0].weight: must be <= 100, got 200"
    assert error_of(ksc(shardsched={"threshold": {"rejectionDecay": float("nan")}})) == \
        "shardsched.threshold.rejectionDecay: must be a finite number, got nan"
    assert error_of(ksc(shardsched={"thresholds": {}})).startswith("shardsched.thresholds: unknown field (known: ")


def test_the_extension_refines_kube_defaults_but_never_overrides_explicit_fields():
    cfg, _ = load(ksc(shardsched={"shards": {"podInitialBackoffSeconds": 3, "count": 4},
                                  "store": {"qps": 0}, "threshold": {"mode": "kube"}}))
    assert cfg.shards.pod_initial_backoff_seconds == 3 and cfg.shards.count == 4
    assert cfg.store.qps == 0 and cfg.threshold.mode == "kube"
    assert error_of(ksc(podInitialBackoffSeconds=1, shardsched={"shards": {"podInitialBackoffSeconds": 2}})) == (
        "shardsched.shards.podInitialBackoffSeconds: Invalid value: 2: also set by podInitialBackoffSeconds: "
        "set it in one place")
    assert error_of(ksc(shardsched={"profiles": []})) == \
        "shardsched.profiles: Forbidden: comes from the KubeSchedulerConfiguration itself"


def test_kube_scheduler_lease_name_is_never_taken_over():
    """kube's default resourceName is kube-scheduler's own Lease: shardsched keeps its own."""
    cfg, _ = load(ksc(leaderElection={"resourceName": "kube-scheduler"}))
    assert cfg.leader_election.resource_name == "shardsched-dispatcher"


def test_plugin_args_in_kube_form_are_taken_as_they_are():
    cfg, notes = load(ksc(profiles=[{"schedulerName": "s", "pluginConfig": [
        {"name": "VolumeBinding", "args": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                           "kind": "VolumeBindingArgs", "bindTimeoutSeconds": 600}},
        {"name": "InterPodAffinity", "args": {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                              "kind": "InterPodAffinityArgs", "hardPodAffinityWeight": 7}}]}]))
    assert [e.name for e in cfg.profiles[0].plugin_config] == ["VolumeBinding", "InterPodAffinity"]
    args = profile_args(cfg, 0)
    assert args["VolumeBinding"]["bindTimeoutSeconds"] == 600 and args["InterPodAffinity"]["hardPodAffinityWeight"] == 7
    assert not any("pluginConfig" in n for n in notes)


def test_a_converted_file_validates_as_shardsched_configuration_unchanged():
    """What `config convert` prints is itself a valid configuration meaning the same."""
    cfg, _ = load(ksc(percentageOfNodesToScore=30, profiles=[{"schedulerName": "a", "plugins": {
        "score": {"disabled": [{"name": "ImageLocality"}]}, "filter": {"disabled": [{"name": "NodePorts"}]}}}]))
    again = config.validate(cfg.to_dict())
    assert again == cfg


def test_lease_durations_are_not_checked_without_leader_election():
    """As kube: with leaderElect false, the durations are never used, so never refused."""
    cfg, _ = load(ksc(leaderElection={"leaderElect": False, "leaseDuration": "5s", "renewDeadline": "10s"}))
    assert cfg.leader_election.leader_elect is False


def test_notes_only_for_fields_the_file_sets():
    """kube's defaults a file leaves out are no news: `config validate` printed notes on
    enableProfiling, enableContentionProfiling and clientConnection.contentType for files that
    set none of them, and every process logged them as warnings at start."""
    _, notes = load(ksc(profiles=[{"schedulerName": "s"}], clientConnection={"kubeconfig": "/k"}))
    assert notes == []
    _, notes = load(ksc(enableProfiling=True, enableContentionProfiling=False,
                        clientConnection={"contentType": "application/vnd.kubernetes.protobuf"}))
    assert sorted(notes) == ["clientConnection.contentType: shardsched talks JSON to the API server",
                             "enableProfiling: shardsched serves no profiling endpoints"]


def test_kube_v137_runs_parallelism_32_and_so_does_shardsched():
    """kube-scheduler runs any parallelism > 0 (its filter/score goroutines); shardsched's
    filters and scores are vectorised per shard, so it accepts the field and notes so."""
    cfg, notes = load(ksc(parallelism=32))
    assert cfg.shards.count >= 1
    assert any(n.startswith("parallelism: ") for n in notes)


def test_do_not_schedule_default_constraints_are_accepted():
    """kube-scheduler v1.37 runs List defaulting with DoNotSchedule constraints: so does shardsched."""
    doc = ksc(profiles=[{"pluginConfig": [{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]}}]}])
    cfg, _ = load(doc)
    args = profile_args(cfg, 0)["PodTopologySpread"]
    assert args["defaultConstraints"][0]["whenUnsatisfiable"] == "DoNotSchedule"


def test_every_error_of_a_file_is_reported_at_once():
    """kube-scheduler reports all of a file's errors together (an aggregate); so does shardsched,
    each naming its own field."""
    doc = ksc(parallelism=0, percentageOfNodesToScore=101, podInitialBackoffSeconds=0,
              leaderElection={"resourceLock": "configmaps"}, clientConnection={"burst": -1},
              profiles=[{"schedulerName": "a", "percentageOfNodesToScore": -1,
                         "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}},
                                          {"name": "NodeResourcesFit",
                                           "args": {"scoringStrategy": {"type": "MostAlocated"}}}]},
                        {"schedulerName": "a"}])
    with pytest.raises(config.ConfigError) as e:
        config.validate(doc)
    paths = [path for path, _ in e.value.errors]
    assert paths == ["clientConnection.burst", "leaderElection.resourceLock", "parallelism",
                     "profiles[0].percentageOfNodesToScore",
                     "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
                     "profiles[0].pluginConfig[1].args.scoringStrategy.type",
                     "profiles[1].schedulerName", "percentageOfNodesToScore", "podInitialBackoffSeconds"]
    text = str(e.value)
    assert text.count("\n") == len(paths) - 1
    assert "config: parallelism: Invalid value: 0: should be an integer value greater than zero" in text.splitlines()


def test_unknown_fields_are_all_named():
    with pytest.raises(config.ConfigError) as e:
        config.validate(ksc(healthzBindAddress="0.0.0.0:10251", metricsBindAddress="0.0.0.0:10251"))
    assert [p for p, _ in e.value.errors] == ["healthzBindAddress", "metricsBindAddress"]
