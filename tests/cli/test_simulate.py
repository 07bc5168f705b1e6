"""`shardsched simulate`: scenarios through shard.simulate.simulate() on manifests written to
tmp_path, and the CLI (exit codes 0/1/2, the JSON document's shape, --seed, --config).

No preemption scenarios here: every pod that cannot fit is either the lowest priority of its
scenario or has nobody of lower priority to displace.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builders import (HOST, ZONE, anchor_bomb, claim_volume, expr, group_pod, node, node_affinity,
                      overflowing_pod, pod, pod_affinity, pod_group, pod_term, pv, pvc, spread, storage_class,
                      toleration)
from common import config as config_mod
from common.cli.errors import UsageError
from common.cli.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]

POD_FIELDS = {"status", "node", "nominatedNode", "message", "evictedBy"}
GROUP_FIELDS = {"phase", "minMember", "members", "bound", "assumed", "waiting"}
ERROR_FIELDS = {"object", "field", "message"}


def write(tmp_path: Path, name: str, docs, as_list: bool = False) -> str:
    path = tmp_path / name
    if as_list:
        text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(docs)})
    else:
        text = yaml.safe_dump_all(list(docs))
    path.write_text(text)
    return str(path)


def run(tmp_path, docs, seed: int = 0, cfg: dict | None = None):
    doc, code = simulate([write(tmp_path, "in.yaml", docs)], cfg or config_mod.load(None), seed)
    check_shape(doc)
    return doc, code


def check_shape(doc: dict) -> None:
    assert set(doc) == {"pods", "errors", "podGroups"}
    for key, entry in doc["pods"].items():
        assert "/" in key and set(entry) == POD_FIELDS, key
        assert entry["status"] in ("Bound", "Unschedulable", "Evicted", "SchedulingGated", "Pending")
        assert (entry["node"] is not None) == (entry["status"] == "Bound")
    for err in doc["errors"]:
        assert set(err) == ERROR_FIELDS
    for key, unit in doc["podGroups"].items():
        assert "/" in key and set(unit) == GROUP_FIELDS, key
        assert set(unit["members"]) <= set(doc["pods"]) and unit["bound"] <= len(unit["members"])


def filter_message(message: str) -> str:
    """The filter part of an unschedulable message (kube appends " preemption: ..." when its
    PostFilter ran; what preemption says is not these tests' business)."""
    return message.split(" preemption:", 1)[0]


def placements(doc) -> dict:
    return {k: v["node"] for k, v in doc["pods"].items()}


# --- scenarios ------------------------------------------------------------------------------

def test_message_format_like_kube_scheduler(tmp_path):
    docs = [node("small", cpu="1"), node("g1", taints=["dedicated=gpu:NoSchedule"]),
            node("g2", taints=["dedicated=gpu:NoSchedule"]), pod("p", cpu="2")]
    doc, code = run(tmp_path, docs)
    assert code == 0 and doc["errors"] == []
    entry = doc["pods"]["default/p"]
    assert entry["status"] == "Unschedulable" and entry["node"] is None and entry["evictedBy"] is None
    assert filter_message(entry["message"]) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s).")


def test_a_gated_pod_stays_scheduling_gated(tmp_path):
    docs = [node("n1"), pod("gated", cpu="100m", spec={"schedulingGates": [{"name": "example.com/wait"}]}),
            pod("free", cpu="100m")]
    doc, code = run(tmp_path, docs)
    assert code == 0
    assert doc["pods"]["default/gated"] == {
        "status": "SchedulingGated", "node": None, "nominatedNode": None, "evictedBy": None,
        "message": "Scheduling is blocked due to non-empty scheduling gates"}
    assert doc["pods"]["default/free"]["node"] == "n1"


def test_volumes_are_bound_as_a_clusters_controllers_would(tmp_path):
    """A WaitForFirstConsumer claim is provisioned where its first pod goes, and the next pod
    of the claim follows it there; an Immediate claim is bound to its static volume before
    scheduling, whose node affinity then places the pod; a missing claim keeps its pod
    pending with kube's message; a ReadWriteOncePod claim takes one pod only."""
    docs = [node("a", cpu="1"), node("b", cpu="1"), node("c", cpu="1"),
            storage_class("wffc", "example.com/fake"), storage_class("manual", "kubernetes.io/no-provisioner",
                                                                   mode="Immediate"),
            pvc("data", "wffc"), pvc("static", "manual"), pv("pv-c", "manual", affinity={HOST: ["c"]}),
            pvc("solo", "wffc", modes=("ReadWriteOncePod",)),
            pod("first", cpu="600m", volumes=[claim_volume("data")]),
            pod("second", cpu="100m", volumes=[claim_volume("data")]),
            pod("pinned", volumes=[claim_volume("static")]),
            pod("orphan", volumes=[claim_volume("missing")]),
            pod("solo-1", volumes=[claim_volume("solo")]), pod("solo-2", volumes=[claim_volume("solo")])]
    doc, code = run(tmp_path, docs)
    assert code == 0 and doc["errors"] == []
    pods = doc["pods"]
    assert pods["default/first"]["status"] == "Bound"
    assert pods["default/second"]["node"] == pods["default/first"]["node"]
    assert pods["default/pinned"]["node"] == "c"
    assert pods["default/orphan"]["message"] == (
        '0/3 nodes are available: persistentvolumeclaim "missing" not found. not found')
    assert sorted(pods[f"default/solo-{i}"]["status"] for i in (1, 2)) == ["Bound", "Unschedulable"]
    loser = next(pods[f"default/solo-{i}"] for i in (1, 2) if pods[f"default/solo-{i}"]["status"] != "Bound")
    assert filter_message(loser["message"]) == (
        "0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.")


def test_taints_and_tolerations(tmp_path):
    docs = [node("plain"), node("gpu", labels={"pool": "gpu"}, taints=["dedicated=gpu:NoSchedule"]),
            pod("tolerant", node_selector={"pool": "gpu"}, tolerations=[toleration("dedicated", "gpu", "NoSchedule")]),
            pod("intolerant", node_selector={"pool": "gpu"}),
            pod("anywhere")]
    doc, _ = run(tmp_path, docs)
    assert doc["pods"]["default/tolerant"]["node"] == "gpu"
    assert doc["pods"]["default/anywhere"]["node"] == "plain"     # the only node it tolerates
    assert filter_message(doc["pods"]["default/intolerant"]["message"]) == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s).")


def test_node_affinity_operators(tmp_path):
    nodes = [node(f"g{i}", labels={"gen": str(i), **({"ssd": "yes"} if i % 2 else {})}) for i in range(1, 6)]
    want = {
        "gt4": ([expr("gen", "Gt", 4)], "g5"),
        "lt2": ([expr("gen", "Lt", 2)], "g1"),
        "in3": ([expr("gen", "In", "3")], "g3"),
        "notin": ([expr("gen", "NotIn", "1", "2", "3", "5")], "g4"),
        "exists": ([expr("ssd", "Exists"), expr("gen", "Gt", 3)], "g5"),
        "absent": ([expr("ssd", "DoesNotExist"), expr("gen", "Lt", 3)], "g2"),
    }
    pods = [pod(name, affinity=node_affinity(terms)) for name, (terms, _) in want.items()]
    pods.append(pod("none", affinity=node_affinity([expr("gen", "Gt", 5)])))
    doc, _ = run(tmp_path, nodes + pods)
    for name, (_, target) in want.items():
        assert doc["pods"][f"default/{name}"]["node"] == target, name
    assert filter_message(doc["pods"]["default/none"]["message"]) == (
        "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.")


def test_host_ports(tmp_path):
    docs = [node("n1"), node("n2")] + [pod(f"web{i}", ports=[(8080, "TCP")]) for i in range(3)] + [
        pod("udp", ports=[(8080, "UDP")])]
    doc, _ = run(tmp_path, docs)
    bound = [doc["pods"][f"default/web{i}"]["node"] for i in range(3)]
    assert sorted(n for n in bound if n) == ["n1", "n2"]
    loser = next(f"default/web{i}" for i in range(3) if not bound[i])
    assert filter_message(doc["pods"][loser]["message"]) == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports.")
    assert doc["pods"]["default/udp"]["status"] == "Bound"       # another protocol


def test_spread_skew(tmp_path):
    """Two replicas already run in z1; six more with zone maxSkew 1 end 4/4."""
    nodes = [node(n, labels={ZONE: z}) for n, z in (("a", "z1"), ("b", "z1"), ("x", "z2"), ("y", "z2"))]
    running = [pod(f"old{i}", labels={"app": "web"}, node_name="a") for i in range(2)]
    new = [pod(f"web{i}", labels={"app": "web"}, spread=[spread(1, ZONE, {"app": "web"})]) for i in range(6)]
    doc, _ = run(tmp_path, nodes + running + new)
    assert doc["pods"]["default/old0"] == {"status": "Bound", "node": "a", "nominatedNode": None,
                                           "message": "", "evictedBy": None}
    zones = [("z1" if doc["pods"][f"default/web{i}"]["node"] in ("a", "b") else "z2") for i in range(6)]
    assert zones[:2] == ["z2", "z2"]          # the first two must even out z2
    assert zones.count("z1") == 2 and zones.count("z2") == 4


def test_anti_affinity_symmetry(tmp_path):
    guard = pod("guard", labels={"app": "guard"}, node_name="n1",
                affinity=pod_affinity(anti_required=[pod_term({"app": "db"}, HOST)]))
    docs = [node("n1", cpu="8"), node("n2", cpu="2"), guard,
            pod("db1", cpu="1", labels={"app": "db"}), pod("db2", cpu="4", labels={"app": "db"}),
            pod("web", cpu="4", labels={"app": "web"})]
    for seed in (0, 1, 2):
        doc, _ = run(tmp_path, docs, seed=seed)
        assert doc["pods"]["default/db1"]["node"] == "n2"
        assert doc["pods"]["default/web"]["node"] == "n1"
        assert filter_message(doc["pods"]["default/db2"]["message"]) == (
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't satisfy existing pods anti-affinity rules.")


def test_higher_priority_pending_pod_gets_the_last_slot(tmp_path):
    """The queue pops by priority: the later, higher-priority pod takes the only slot (and the
    lower one has nobody of lower priority to preempt)."""
    late_high = pod("late-high", cpu="1")
    late_high["spec"]["priorityClassName"] = "urgent"
    early_low = pod("early-low", cpu="1")
    early_low["spec"]["priorityClassName"] = "low"  # Priority admission refuses a bare spec.priority
    docs = [node("only", cpu="1"), early_low,
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"},
             "value": 1000},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
             "value": 1},
            late_high]
    doc, code = run(tmp_path, docs)
    assert code == 0
    assert doc["pods"]["default/late-high"]["node"] == "only"
    assert doc["pods"]["default/early-low"]["status"] == "Unschedulable"
    assert filter_message(doc["pods"]["default/early-low"]["message"]) == (
        "0/1 nodes are available: 1 Insufficient cpu.")


def test_malformed_objects_are_reported_and_the_rest_runs(tmp_path):
    bad_pod = pod("bad", cpu="lots")
    bad_node = node("broken", memory="-1Gi")
    unknown = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    dup = pod("ok")
    no_class = pod("noclass")
    no_class["spec"]["priorityClassName"] = "nope"
    docs = [node("n1"), bad_node, pod("ok"), bad_pod, unknown, dup, no_class]
    doc, code = run(tmp_path, docs)
    assert code == 1
    errors = {(e["object"], e["field"]) for e in doc["errors"]}
    assert ("Pod default/bad", "spec.containers[0].resources.requests.cpu") in errors
    assert ("Node broken", "status.allocatable.memory") in errors
    assert ("Deployment d", "kind") in errors
    assert ("Pod default/ok", "metadata.name") in errors           # the duplicate
    assert ("Pod default/noclass", "spec.priorityClassName") in errors
    assert len(doc["errors"]) == 5
    assert doc["pods"]["default/ok"]["node"] == "n1"                # the rest was simulated
    assert "default/bad" not in doc["pods"]


def test_list_and_multi_document_files(tmp_path):
    nodes = write(tmp_path, "nodes.yaml", [node("n1"), node("n2")], as_list=True)
    pods = write(tmp_path, "pods.yaml", [pod("a"), pod("b")])
    more = tmp_path / "more.yaml"
    more.write_text("---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                               "items": [pod("c")]}) + "---\n---\n" + yaml.safe_dump(pod("d")))
    doc, code = simulate([nodes, pods, str(more)], config_mod.load(None), 0)
    assert code == 0
    assert sorted(doc["pods"]) == ["default/a", "default/b", "default/c", "default/d"]
    assert all(v["status"] == "Bound" for v in doc["pods"].values())


def test_default_scheduler_pods_are_simulated_and_other_schedulers_left(tmp_path):
    docs = [node("n1"), pod("dflt", scheduler="default-scheduler"), pod("foreign", scheduler="someone-else")]
    doc, _ = run(tmp_path, docs)
    assert doc["pods"]["default/dflt"]["node"] == "n1"
    foreign = doc["pods"]["default/foreign"]
    assert foreign["status"] == "Pending" and foreign["node"] is None
    assert foreign["message"] == ('schedulerName "someone-else" is not this scheduler\'s (profiles: '
                                  'default-scheduler, shardsched): left pending for it')


def test_a_member_of_a_group_names_its_group_when_it_waits_for_it(tmp_path):
    """A member that could be placed waits at Permit for the rest of its group (here a member
    another scheduler runs); the group never gets its quorum, so kube's Permit timeout turns it
    away, and the message says which group it waited for."""
    docs = [node("n1"), pod_group("v", 2), group_pod("v1", "v"), group_pod("v2", "v", scheduler="volcano")]
    doc, _ = run(tmp_path, docs)
    v1, v2 = doc["pods"]["default/v1"], doc["pods"]["default/v2"]
    assert v1["status"] == "Unschedulable"
    assert v1["message"].endswith("waiting for its PodGroup default/v: 0 of minMember 2 members placed")
    assert v2["status"] == "Pending" and "volcano" in v2["message"]


def test_same_seed_same_result_and_seed_matters(tmp_path):
    docs = [node(f"n{i:02d}") for i in range(20)] + [pod(f"p{i}") for i in range(10)]
    first, _ = run(tmp_path, docs, seed=7)
    again, _ = run(tmp_path, docs, seed=7)
    other, _ = run(tmp_path, docs, seed=8)
    assert first == again
    assert placements(first) != placements(other)  # ties are broken by the seed


def test_unreadable_input_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        simulate([str(tmp_path / "missing.yaml")], config_mod.load(None), 0)
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\n  metadata: [unclosed\n")
    with pytest.raises(UsageError):
        simulate([str(broken)], config_mod.load(None), 0)


# --- the CLI --------------------------------------------------------------------------------

def cli(*args, console_script: bool = False):
    cmd = ([str(Path(sys.executable).parent / "shardsched")] if console_script
           else [sys.executable, "-m", "common.cli"])
    proc = subprocess.run(cmd + ["simulate", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_exit_0_and_json(tmp_path):
    path = write(tmp_path, "ok.yaml", [node("n1"), pod("a"), pod("b", cpu="64")])
    code, out, _ = cli(path)
    assert code == 0
    doc = json.loads(out)
    check_shape(doc)
    assert doc["pods"]["default/a"] == {"status": "Bound", "node": "n1", "nominatedNode": None,
                                        "message": "", "evictedBy": None}
    assert doc["pods"]["default/b"]["status"] == "Unschedulable"
    assert filter_message(doc["pods"]["default/b"]["message"]) == "0/1 nodes are available: 1 Insufficient cpu."


def test_cli_exit_1_on_rejected_objects(tmp_path):
    path = write(tmp_path, "bad.yaml", [node("n1"), pod("bad", cpu="lots"), pod("good")])
    code, out, _ = cli(path, console_script=True)
    assert code == 1
    doc = json.loads(out)
    check_shape(doc)
    assert doc["errors"] == [{"object": "Pod default/bad", "field": "spec.containers[0].resources.requests.cpu",
                              "message": "invalid quantity 'lots'"}]
    assert doc["pods"]["default/good"]["node"] == "n1"


def test_cli_exit_2_on_unreadable_files_and_bad_flags(tmp_path):
    code, out, err = cli(str(tmp_path / "missing.yaml"))
    assert code == 2 and out == "" and "missing.yaml" in err
    code, _, _ = cli(write(tmp_path, "ok.yaml", [node("n1")]), "--seed", "notanumber")
    assert code == 2


def test_cli_seed_and_config(tmp_path):
    """Same --seed, same output; --config reaches the scheduler (MostAllocated packs pods)."""
    docs = [node(f"n{i}", cpu="4", memory="4Gi") for i in range(4)] + [pod(f"p{i}", cpu="1", memory="1Gi")
                                                                       for i in range(3)]
    path = write(tmp_path, "in.yaml", docs)
    a = cli(path, "--seed", "3")
    b = cli(path, "--seed", "3")
    assert a[0] == 0 and a[1] == b[1]
    spread_out = {v["node"] for v in json.loads(a[1])["pods"].values()}
    assert len(spread_out) == 3                              # LeastAllocated spreads them
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"profiles": [{"schedulerName": "shardsched", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}))
    code, out, _ = cli(path, "--seed", "3", "--config", str(cfg))
    assert code == 0
    assert len({v["node"] for v in json.loads(out)["pods"].values()}) == 1   # packed on one node


def test_daemonset_style_pods_go_to_their_node(tmp_path):
    """Pods pinned with matchFields metadata.name (what the DaemonSet controller writes) land
    on their node; one whose node is full gets kube's message for the nodes left out."""
    docs = [node("n1"), node("n2", cpu="1"), node("n3")]
    for target, cpu in (("n1", "1"), ("n2", "2"), ("n3", "1")):
        docs.append(pod(f"ds-{target}", cpu=cpu, owner="DaemonSet/ds", affinity=node_affinity(
            {"matchFields": [expr("metadata.name", "In", target)]})))
    doc, code = run(tmp_path, docs)
    assert code == 0
    assert doc["pods"]["default/ds-n1"]["node"] == "n1" and doc["pods"]["default/ds-n3"]["node"] == "n3"
    assert filter_message(doc["pods"]["default/ds-n2"]["message"]) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].")


def test_cli_invalid_config_is_rejected_and_unreadable_config_is_usage(tmp_path):
    """A readable config with a wrong field exits 1 naming the field (as `config validate`);
    a config file that cannot be read or parsed is a usage error (2)."""
    path = write(tmp_path, "in.yaml", [node("n1")])
    bad = tmp_path / "bad.yaml"
    bad.write_text("threshold:\n  mode: sometimes\n")
    code, _, err = cli(path, "--config", str(bad))
    assert code == 1 and "threshold.mode" in err
    code, _, err = cli(path, "--config", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read" in err


# --- input that would exhaust resources -------------------------------------------------------

def test_thirty_distinct_extended_resources_are_scheduled(tmp_path):
    """Each node offers its own extended resource and one pod asks for each: the slot table
    grows (it held 12 extended resources for good: "too many distinct resources")."""
    names = [f"example.com/sim-widget-{i}" for i in range(30)]
    docs = [node(f"n{i}", extra={name: "1"}) for i, name in enumerate(names)]
    docs += [pod(f"p{i}", extra={name: "1"}) for i, name in enumerate(names)]
    docs.append(pod("greedy", extra={names[0]: "1"}))  # n0's one widget is taken by p0
    doc, code = run(tmp_path, docs)
    assert code == 0 and doc["errors"] == []
    assert {f"default/p{i}": f"n{i}" for i in range(30)}.items() <= placements(doc).items()
    assert filter_message(doc["pods"]["default/greedy"]["message"]) == (
        f"0/30 nodes are available: 30 Insufficient {names[0]}.")


def test_requests_summing_past_int64_are_reported_and_the_rest_is_simulated(tmp_path):
    """The pod used to be accepted and then raise OverflowError in every cycle, which ended
    the simulation."""
    doc, code = run(tmp_path, [node("n1"), overflowing_pod(), pod("fine", cpu="1")])
    assert code == 1
    assert doc["errors"] == [{"object": "Pod default/huge", "field": "spec.containers[1].resources.requests.memory",
                              "message": f"the pod's total memory request would be more than {(1 << 63) - 1}, "
                                         "the most a resource amount can be"}]
    assert placements(doc) == {"default/fine": "n1"}


def test_an_anchor_bomb_is_reported_and_the_rest_is_simulated(tmp_path):
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), pod("a")]) + "---\n" + anchor_bomb())
    doc, code = simulate([str(path)], config_mod.load(None), 0)
    check_shape(doc)
    assert code == 1
    (err,) = doc["errors"]
    assert err["object"] == f"{path}: document 3" and "excessive aliasing" in err["message"]
    assert placements(doc) == {"default/a": "n1"}


def test_values_json_cannot_hold_are_reported_per_object(tmp_path):
    """A label key that is a number, an integer past 2^64 and !!binary data used to end the
    simulation with an orjson traceback."""
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), pod("a")]) + "\n".join([
        "---", "kind: Pod", "metadata: {name: keyed, labels: {1: one}}", "spec: {containers: [{name: c}]}",
        "---", "kind: Pod", "metadata: {name: big}", "spec: {containers: [{name: c}], x: 36893488147419103232}",
        "---", "kind: Pod", "metadata: {name: bin, annotations: {a: !!binary aGVsbG8=}}",
        "spec: {containers: [{name: c}]}", "---", yaml.safe_dump(pod("b"))]))
    doc, code = simulate([str(path)], config_mod.load(None), 0)
    check_shape(doc)
    assert code == 1
    assert sorted((e["object"], e["field"]) for e in doc["errors"]) == [
        ("Pod default/big", "spec.x"), ("Pod default/bin", "metadata.annotations.a"),
        ("Pod default/keyed", "metadata.labels")]
    assert placements(doc) == {"default/a": "n1", "default/b": "n1"}


def test_kubes_gang_is_placed_whole_or_not_at_all(tmp_path):
    """A kube PodGroup (scheduling.k8s.io) of minCount 3 whose members fit is bound whole and
    shown as a unit; one that cannot make its quorum leaves every member pending, with
    kube's messages; one still short of pods waits out of the queue."""
    from builders import native_group_pod, native_pod_group

    docs = [node("n1", cpu="4"), native_pod_group("fits", 3), *[native_group_pod(f"a{i}", "fits") for i in range(3)],
            native_pod_group("big", 2), *[native_group_pod(f"b{i}", "big", cpu="3") for i in range(2)],
            native_pod_group("short", 3), native_group_pod("c0", "short")]
    doc, code = run(tmp_path, docs)
    pods = doc["pods"]
    assert [pods[f"default/a{i}"]["status"] for i in range(3)] == ["Bound"] * 3
    assert {pods[f"default/b{i}"]["status"] for i in range(2)} == {"Unschedulable"}
    # (a* took 3 of 4 cpu: the first b* tried fits nowhere, the other is not tried)
    # (kube v1.37's pod-group cycle: the failed member's filters, the untried one the group's status)
    assert {pods[f"default/b{i}"]["message"] for i in range(2)} == {
        "0/1 nodes are available: 1 Insufficient cpu.",
        "pod group is unschedulable, minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"}
    assert pods["default/c0"]["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    unit = doc["podGroups"]["scheduling.k8s.io/default/fits"]
    assert unit["minMember"] == 3 and unit["bound"] == 3


# --- default spreading over the workload's Services and controllers --------------------------

def _zoned_nodes(big_cpu: str = "16"):
    """One node per zone z1..z5, z1's twice as large: resource scores alone would pile pods there."""
    return [node(f"n{i}", cpu=big_cpu if i == 1 else "8", memory="32Gi" if i == 1 else "16Gi",
                 labels={ZONE: f"z{i}"}) for i in range(1, 6)]


def _zones_used(doc: dict, prefix: str) -> dict:
    out: dict = {}
    for key, entry in doc["pods"].items():
        if key.startswith(f"default/{prefix}"):
            assert entry["status"] == "Bound", (key, entry)
            out[entry["node"]] = out.get(entry["node"], 0) + 1
    return out


def test_statefulset_pods_are_spread_by_its_selector_and_its_services(tmp_path):
    """Each pod of a StatefulSet carries its own name as a label: default spreading selects by
    the StatefulSet's and the Service's selectors (kube's helper.DefaultSelector), so the
    replicas spread over the zones; by the pods' own labels they would not see each other."""
    from builders import controller, namespace, service
    labels = {"app": "db"}
    docs = _zoned_nodes() + [namespace("default"), service("db", labels), controller("StatefulSet", "db", labels)]
    docs += [pod(f"db-{i}", "500m", owner="StatefulSet/db",
                 labels={**labels, "statefulset.kubernetes.io/pod-name": f"db-{i}"}) for i in range(10)]
    doc, code = run(tmp_path, docs)
    assert code == 0, doc["errors"]
    used = _zones_used(doc, "db-")
    assert sorted(used) == [f"n{i}" for i in range(1, 6)] and max(used.values()) <= 3, used


def test_pods_of_a_service_without_a_known_controller_are_spread_by_the_service(tmp_path):
    """No controller reference, but a Service selects them: spread (kube does; the pods' own
    controller reference is what gave them default spreading before)."""
    from builders import service
    docs = _zoned_nodes() + [service("web", {"app": "web"})]
    docs += [pod(f"web-{i}", "500m", labels={"app": "web"}) for i in range(10)]
    doc, code = run(tmp_path, docs)
    assert code == 0, doc["errors"]
    used = _zones_used(doc, "web-")
    assert sorted(used) == [f"n{i}" for i in range(1, 6)] and max(used.values()) <= 3, used
