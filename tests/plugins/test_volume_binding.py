"""VolumeBinding, after kube-scheduler v1.37's volumebinding/volume_binding_test.go
(TestVolumeBinding) and binder.go: PreFilter sorts the pod's claims, Filter checks each node,
Reserve assumes the chosen volumes. Each case names kube's test or the code path it follows.
(The binder's PreBind is tests/binder/test_volume_waits.py's.)"""
from __future__ import annotations

import pytest

from builders import (UNRESOLVABLE, WFFC, Cluster, claim_volume, node, pod, pv, pvc, storage_class)
from shard.framework import SKIP
from shard.plugins.volume_binding import planned_volumes

NO_PROV = "kubernetes.io/no-provisioner"
# kube's test classes: wait-sc (WaitForFirstConsumer, no provisioner), immediate-sc
WAIT_SC = storage_class("wait-sc", NO_PROV)
IMMEDIATE_SC = storage_class("immediate-sc", NO_PROV, mode="Immediate")
CLASSES = [WAIT_SC, IMMEDIATE_SC, storage_class("fast", "example.com/fake")]

BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


def _pod(*claims, **kw):
    return pod("pod-a", volumes=[claim_volume(c) for c in claims], **kw)


def _pre_filter(p, storage, nodes=(node("node-a"),)):
    out = Cluster(list(nodes), storage=CLASSES + list(storage)).pre_filter("VolumeBinding", p)
    return None if out is None else (out.code, out.message())


def _filter(p, storage, nodes=(node("node-a"),)):
    return Cluster(list(nodes), storage=CLASSES + list(storage)).filter("VolumeBinding", p)


@pytest.mark.parametrize("p, storage, want", [
    # "pod has not pvcs"
    (pod("pod-a"), [], (SKIP, "")),
    # "PVC does not exist"
    (_pod("pvc-a"), [], (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found')),
    # "Part of PVCs do not exist"
    (_pod("pvc-a", "pvc-b"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True)],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found')),
    # "immediate claims not bound"
    (_pod("pvc-a"), [pvc("pvc-a", "immediate-sc")], (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")),
    # a claim naming a class that does not exist is not delayed: it is an immediate one
    (_pod("pvc-a"), [pvc("pvc-a", "gone-sc")], (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")),
    # a claim with a volume name but no bind-completed annotation is not bound yet
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a")],
     (UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")),
    # "pv not found claim lost"
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True, phase="Lost")],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"')),
    # podHasPVCs: a claim being deleted
    (_pod("pvc-a"), [dict(pvc("pvc-a", "wait-sc"), metadata={**pvc("pvc-a", "wait-sc")["metadata"],
                                                             "deletionTimestamp": "2026-01-01T00:00:00Z"})],
     (UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" is being deleted')),
    # podHasPVCs: an ephemeral volume whose claim the ephemeral controller has not made yet
    (pod("pod-a", volumes=[claim_volume("scratch", ephemeral=True)]), [],
     (UNRESOLVABLE, 'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"')),
    # ... or a claim of that name that another owner made
    (pod("pod-a", volumes=[claim_volume("scratch", ephemeral=True)]),
     [pvc("pod-a-scratch", "wait-sc", owner_uid="someone-else")],
     (UNRESOLVABLE, "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)")),
    # "all bound", "unbound claims no matches": PreFilter passes
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True), pv("pv-a", "wait-sc")], None),
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc")], None),
], ids=["no-pvcs", "pvc-missing", "part-missing", "immediate-unbound", "class-missing", "volume-name-only",
        "claim-lost", "claim-deleting", "ephemeral-missing", "ephemeral-not-owner", "all-bound", "wffc"])
def test_pre_filter(p, storage, want):
    assert _pre_filter(p, storage) == want


@pytest.mark.parametrize("p, storage, nodes, want", [
    # "all bound"
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True), pv("pv-a", "wait-sc")],
     [node("node-a")], {"node-a": None}),
    # "unbound claims no matches" (its class cannot provision)
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc")], [node("node-a")], {"node-a": (UNRESOLVABLE, BIND_CONFLICT)}),
    # "bound and unbound unsatisfied"
    (_pod("pvc-a", "pvc-b"),
     [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True), pvc("pvc-b", "wait-sc"),
      pv("pv-a", "wait-sc", affinity={"foo": ["bar"]})],
     [node("node-a", labels={"foo": "barbar"})], {"node-a": (UNRESOLVABLE, f"{NODE_CONFLICT}, {BIND_CONFLICT}")}),
    # "pv not found"
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True)], [node("node-a")],
     {"node-a": (UNRESOLVABLE, PV_NOT_EXIST)}),
    # a bound volume's node affinity picks its node
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc", volume_name="pv-a", bound=True),
                     pv("pv-a", "wait-sc", affinity={"kubernetes.io/hostname": ["node-b"]})],
     [node("node-a"), node("node-b")], {"node-a": (UNRESOLVABLE, NODE_CONFLICT), "node-b": None}),
    # an available volume of the class on one node only (a local volume)
    (_pod("pvc-a"), [pvc("pvc-a", "wait-sc"), pv("local-b", "wait-sc", affinity={"kubernetes.io/hostname": ["node-b"]})],
     [node("node-a"), node("node-b")], {"node-a": (UNRESOLVABLE, BIND_CONFLICT), "node-b": None}),
    # a class with a provisioner can provision anywhere its allowed topologies admit
    (_pod("pvc-a"), [pvc("pvc-a", "zonal"),
                     storage_class("zonal", "example.com/fake", topologies={"zone": ["z1"]})],
     [node("node-a", labels={"zone": "z1"}), node("node-b", labels={"zone": "z2"})],
     {"node-a": None, "node-b": (UNRESOLVABLE, BIND_CONFLICT)}),
    # a claim the scheduler already handed to a provisioner for a node stays with that node
    (_pod("pvc-a"), [pvc("pvc-a", "fast", annotations={"volume.kubernetes.io/selected-node": "node-b"})],
     [node("node-a"), node("node-b")], {"node-a": (UNRESOLVABLE, BIND_CONFLICT), "node-b": None}),
], ids=["all-bound", "no-matches", "bound-and-unbound", "pv-not-found", "bound-affinity", "local-volume",
        "allowed-topologies", "selected-node"])
def test_filter(p, storage, nodes, want):
    assert _filter(p, storage, nodes) == want


@pytest.mark.parametrize("storage, want", [
    # kube's "local volumes with close capacity are preferred": the smallest that fits
    ([pv("pv-a-0", WFFC, size="200Gi"), pv("pv-a-1", WFFC, size="200Gi"), pv("pv-a-2", WFFC, size="100Gi"),
      pv("pv-a-3", WFFC, size="150Gi")], "pv-a-3"),
    # too small, wrong class, claimed by another claim, not available, wrong access modes: never
    ([pv("small", WFFC, size="10Gi"), pv("other-class", "fast", size="150Gi"),
      pv("taken", WFFC, size="150Gi", claim="default/other"), pv("pending", WFFC, size="150Gi", phase="Pending"),
      pv("rox", WFFC, size="150Gi", modes=("ReadOnlyMany",)), pv("fits", WFFC, size="500Gi")], "fits"),
    # a volume pre-bound to this very claim wins over a better fit
    ([pv("best", WFFC, size="150Gi"), pv("mine", WFFC, size="900Gi", claim="default/pvc-a")], "mine"),
])
def test_a_waiting_claim_takes_the_smallest_matching_volume_and_reserve_assumes_it(storage, want):
    c = Cluster([node("node-a")], storage=[storage_class(WFFC, NO_PROV), pvc("pvc-a", WFFC, size="120Gi")] + storage)
    result = c.schedule(_pod("pvc-a"))
    assert result.node == "node-a"
    plan = planned_volumes(result.state, "node-a")
    assert [(v.name, claim.key) for v, claim in plan.static] == [(want, "default/pvc-a")] and not plan.provisions
    c.plugin("VolumeBinding").reserve(result.state, None, "node-a")
    assumed = c.sched.volumes.volume(want)
    assert (assumed.claim_ref.namespace, assumed.claim_ref.name, assumed.claim_ref.uid) == (
        "default", "pvc-a", "uid-pvc-default-pvc-a")
    c.plugin("VolumeBinding").unreserve(result.state, None, "node-a")
    assert c.sched.volumes.volume(want) is c.sched.volumes.volumes[want]  # as the watch has it


def test_reserve_assumes_the_provisioning_node_until_the_watch_brings_the_claim():
    c = Cluster([node("node-a")], storage=[storage_class("fast", "example.com/fake"), pvc("pvc-a", "fast")])
    result = c.schedule(_pod("pvc-a"))
    plan = planned_volumes(result.state, "node-a")
    assert [claim.key for claim in plan.provisions] == ["default/pvc-a"] and not plan.static
    c.plugin("VolumeBinding").reserve(result.state, None, "node-a")
    assert c.sched.volumes.claim("default", "pvc-a").selected_node == "node-a"
    # another pod of the same claim now may only go where it is being provisioned
    c.add_node(node("node-b"))
    assert c.filter("VolumeBinding", pod("pod-b", volumes=[claim_volume("pvc-a")]))["node-b"] == (
        UNRESOLVABLE, BIND_CONFLICT)
    from common.model.objects import parse_object
    c.sched.volumes.set(parse_object(pvc("pvc-a", "fast")))  # a newer version from the watch
    assert c.sched.volumes.claim("default", "pvc-a").selected_node is None


def test_whole_message_for_a_missing_claim_is_kubes():
    """The issue's case: a pod whose claim does not exist stays pending with kube's words.
    kube-scheduler v1.37: VolumeBinding's PreFilter stops the cycle before DynamicResources'
    PreFilter ran, so DynamicResources' PostFilter (first) fails with "not found" and
    DefaultPreemption never runs (v1.33 said "preemption: 0/2 nodes are available: 2
    Preemption is not helpful for scheduling.")."""
    c = Cluster([node("n1"), node("n2")], storage=CLASSES)
    assert c.explain(pod("p", volumes=[claim_volume("x")])) == (
        '0/2 nodes are available: persistentvolumeclaim "x" not found. not found')


def _scores(c: Cluster, p: dict) -> dict:
    """node -> VolumeBinding's score after PreFilter, Filter and PreScore on every node (0
    where PreScore skips or the node is filtered out)."""
    from common.model.objects import parse_pod
    from shard.framework import CycleState
    plugin, pod_ = c.plugin("VolumeBinding"), parse_pod(p)
    state = CycleState()
    assert plugin.pre_filter(state, pod_) is None
    table = c.table
    rows = [table.row_of[name] for name in table.names]
    feasible = [table.infos[r] for r in rows if plugin.filter(state, pod_, table.infos[r]) is None]
    st = plugin.pre_score(state, pod_, rows)
    if st is not None and st.code == SKIP:
        return {info.name: 0 for info in feasible}
    return {info.name: plugin.score(state, pod_, info) for info in feasible}


def test_volumes_score_by_how_empty_they_stay_as_kube_v137_scores_them():
    """kube-scheduler v1.37 (StorageCapacityScoring on by default, its default shape: empty 10,
    full 0), TestVolumeBinding "local volumes with close capacity are preferred": the claim
    of 50Gi on node-a's 200Gi volume scores 75, on node-b's 100Gi one 50."""
    local = {"kubernetes.io/hostname": None}
    storage = [storage_class(WFFC, NO_PROV), pvc("pvc-a", WFFC, size="50Gi")]
    for name, host, size in (("pv-a-0", "node-a", "200Gi"), ("pv-a-1", "node-a", "200Gi"),
                             ("pv-b-0", "node-b", "100Gi"), ("pv-b-1", "node-b", "100Gi")):
        storage.append(pv(name, WFFC, size=size, affinity={**local, "kubernetes.io/hostname": [host]}))
    c = Cluster([node("node-a"), node("node-b"), node("node-c")], storage=storage)
    assert _scores(c, _pod("pvc-a")) == {"node-a": 75, "node-b": 50}
    # a claim to provision (no capacity is modelled, none published): every node 0, as kube
    c = Cluster([node("node-a"), node("node-b")], storage=[storage_class("fast", "example.com/fake"), pvc("pvc-a", "fast")])
    assert _scores(c, _pod("pvc-a")) == {"node-a": 0, "node-b": 0}
    # the default profile runs it with kube's weight 1
    assert c.plugin("VolumeBinding").weight == 1
