"""VolumeZone, after kube-scheduler v1.37's volumezone/volume_zone_test.go (TestSingleZone,
TestMultiZone, TestWithBinding): a pod's bound volumes' zone and region labels keep it in
their zones."""
from __future__ import annotations

import pytest

from builders import UNRESOLVABLE, WFFC, Cluster, claim_volume, node, pod, pv, pvc, storage_class
from shard.framework import SKIP

BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
CONFLICT = (UNRESOLVABLE, "node(s) had no available volume zone")

STORAGE = [
    pv("vol-1", labels={BETA_ZONE: "us-west1-a"}), pv("vol-2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("vol-stable-1", labels={ZONE: "us-west1-a"}), pv("vol-stable-2", labels={REGION: "us-west1"}),
    pv("vol-stable-3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pv("vol-multi", labels={BETA_ZONE: "us-west1-c__us-west1-a"}), pv("vol-bad", labels={ZONE: "us-west1-a__"}),
    storage_class("wait", mode=WFFC), storage_class("immediate", mode="Immediate"),
] + [pvc(f"pvc-{v}", volume_name=v, bound=True) for v in (
    "vol-1", "vol-2", "vol-stable-1", "vol-stable-2", "vol-stable-3", "vol-multi", "vol-bad", "vol-not-exist")] + [
    pvc("pvc-no-class"), pvc("pvc-empty-class", ""), pvc("pvc-wait", "wait"), pvc("pvc-immediate", "immediate")]


def _run(claim, labels):
    c = Cluster([node("host1", labels=labels, hostname_label=False)], storage=STORAGE)
    p = pod("pod_1", volumes=[claim_volume(claim)] if claim else ())
    pre = c.pre_filter("VolumeZone", p)
    if pre is not None:
        return "pre", (pre.code, pre.message())
    return "filter", c.filter("VolumeZone", p)["host1"]


@pytest.mark.parametrize("claim, labels, want", [
    ("", {BETA_ZONE: "us-west1-a"}, ("pre", (SKIP, ""))),                                 # pod without volume
    ("pvc-vol-1", {}, ("filter", None)),                                                 # node without labels
    ("pvc-vol-1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, ("filter", None)),  # beta zone label matched
    ("pvc-vol-2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, ("filter", None)),  # beta region label matched
    ("pvc-vol-2", {BETA_REGION: "no_us-west1"}, ("filter", CONFLICT)),                   # beta region label doesn't match
    ("pvc-vol-1", {BETA_ZONE: "no_us-west1-a"}, ("filter", CONFLICT)),                   # beta zone label doesn't match
    ("pvc-vol-stable-1", {ZONE: "us-west1-a"}, ("filter", None)),                        # zone label matched
    ("pvc-vol-stable-2", {REGION: "us-west1"}, ("filter", None)),                        # region label matched
    ("pvc-vol-stable-2", {REGION: "no_us-west1"}, ("filter", CONFLICT)),                 # region label doesn't match
    ("pvc-vol-stable-1", {ZONE: "no_us-west1-a"}, ("filter", CONFLICT)),                 # zone label doesn't match
    ("pvc-vol-stable-3", {ZONE: "us-west1-a"}, ("filter", CONFLICT)),       # pv with zone and region, node with only zone
    ("pvc-vol-stable-1", {BETA_ZONE: "us-west1-a"}, ("filter", CONFLICT)),  # pv with zone, node with beta zone
    ("pvc-vol-1", {ZONE: "us-west1-a"}, ("filter", None)),                  # pv with beta label, node with ga label, matched
    ("pvc-vol-1", {ZONE: "us-west1-b"}, ("filter", CONFLICT)),              # ... don't match
    ("pvc-vol-multi", {BETA_ZONE: "us-west1-a"}, ("filter", None)),         # TestMultiZone: one of the zones
    ("pvc-vol-multi", {BETA_ZONE: "us-west1-b"}, ("filter", CONFLICT)),
    ("pvc-vol-bad", {ZONE: "elsewhere"}, ("pre", (SKIP, ""))),              # an unparsable label is ignored
    ("pvc-vol-not-exist", {ZONE: "us-west1-a"}, ("pre", (UNRESOLVABLE, 'persistentvolume "vol-not-exist" not found'))),
    # TestWithBinding
    ("pvc-no-class", {BETA_ZONE: "us-west1-a"},
     ("pre", (UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"))),
    ("pvc-empty-class", {BETA_ZONE: "us-west1-a"},
     ("pre", (UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"))),
    ("pvc-immediate", {BETA_ZONE: "us-west1-a"}, ("pre", (UNRESOLVABLE, "PersistentVolume had no name"))),
    ("pvc-wait", {BETA_ZONE: "us-west1-a"}, ("pre", (SKIP, ""))),
    ("missing", {}, ("pre", (UNRESOLVABLE, 'persistentvolumeclaim "missing" not found'))),
])
def test_volume_zone(claim, labels, want):
    assert _run(claim, labels) == want


def test_a_claim_of_a_missing_class_names_it():
    c = Cluster([node("n1")], storage=[pvc("c", "gone")])
    out = c.pre_filter("VolumeZone", pod("p", volumes=[claim_volume("c")]))
    assert (out.code, out.message()) == (UNRESOLVABLE, 'storageclass.storage.k8s.io "gone" not found')
