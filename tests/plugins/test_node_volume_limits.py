"""NodeVolumeLimits, after kube-scheduler v1.37's nodevolumelimits/csi_test.go
(TestCSILimits): a pod's new volumes, counted per CSI driver with those of the pods already
on the node, must stay within the node's CSINode allocatable count.

The objects are kube's fakes: for each driver, claims "csi-<driver>-0..3" bound to volumes of
that driver (for the in-tree kubernetes.io/aws-ebs, EBS volumes); "csi-4" unbound of class
csi-sc (provisioner ebs.csi.aws.com), "csi-5" of no class, "csi-6" of csi-sc naming a volume
that does not exist."""
from __future__ import annotations

import pytest

from builders import UNRESOLVABLE, Cluster, claim_volume, csi_node, node, pod, pv, pvc, storage_class
from shard.framework import SKIP

EBS, GCE, EBS_IN_TREE = "ebs.csi.aws.com", "pd.csi.storage.gke.io", "kubernetes.io/aws-ebs"
EXCEEDED = ("Unschedulable", "node(s) exceed max volume count")
NODE = "node-for-max-pd-test-1"


def _storage(drivers):
    out = [storage_class("csi-sc", EBS, mode=None)]
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            source = {"awsElasticBlockStore": {"volumeID": name}} if driver == EBS_IN_TREE else None
            out += [pvc(name, volume_name=name), pv(name, csi=None if source else (driver, name), source=source)]
    return out + [pvc("csi-4", "csi-sc"), pvc("csi-5"), pvc("csi-6", "csi-sc", volume_name="missing-in-action")]


def _pod(name, *claims, node_name=None, **kw):
    return pod(name, node_name=node_name, volumes=[claim_volume(c) for c in claims], **kw)


def running(name, *claims):
    return _pod(name, *claims, node_name=NODE)


RUNNING = running("running", f"csi-{EBS}-3")
EBS_TWO = running("ebs-two", f"csi-{EBS}-1", f"csi-{EBS}-2")
EBS_ONE = _pod("ebs-one", f"csi-{EBS}-0")


@pytest.mark.parametrize("new, existing, limit, drivers, want", [
    (EBS_ONE, [RUNNING, EBS_TWO], 4, [EBS], None),        # fits when node volume limit >= new pods CSI volume
    (EBS_ONE, [RUNNING, EBS_TWO], 2, [EBS], EXCEEDED),    # doesn't when node volume limit <= pods CSI volume
    (EBS_ONE, [RUNNING, EBS_TWO], None, [EBS], None),     # should when driver does not support volume limits
    (EBS_ONE, [running("pending", "csi-4"), EBS_TWO], 2, [EBS], EXCEEDED),  # count pending PVCs towards volume limit
    # count multiple pending pvcs towards volume limit >= pods CSI volume (one claim counts once)
    (EBS_ONE, [running("pending", "csi-4"), running("pending2", "csi-4"), EBS_TWO], 4, [EBS], None),
    (EBS_ONE, [running("missing-pv", "csi-6"), EBS_TWO], 2, [EBS], EXCEEDED),  # invalid PV name but valid SC
    (EBS_ONE, [RUNNING, running("no-sc", "csi-5")], 2, [EBS], None),  # don't count pvcs with missing SC
    # count pvcs with the same type towards volume limit
    (EBS_ONE, [running("gce-two", f"csi-{GCE}-1", f"csi-{GCE}-2"), EBS_TWO], 2, [EBS, GCE], EXCEEDED),
    # don't count pvcs with different type towards volume limit
    (_pod("gce-two", f"csi-{GCE}-1", f"csi-{GCE}-2"), [EBS_TWO, RUNNING], 2, [EBS, GCE], None),
    # should count in-tree volumes if migration is enabled
    (_pod("in-tree-one", f"csi-{EBS_IN_TREE}-0"), [running("in-tree-two", f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2")],
     2, [EBS_IN_TREE, EBS], EXCEEDED),
    # should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)
    (EBS_ONE, [running("in-tree-two", f"csi-{EBS_IN_TREE}-1", f"csi-{EBS_IN_TREE}-2")], 2, [EBS_IN_TREE, EBS],
     EXCEEDED),
    # ephemeral volume missing
    (pod("abc", ns="test", volumes=[claim_volume("xyz", ephemeral=True)]), [], None, [EBS],
     (UNRESOLVABLE, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
], ids=["fits", "exceeds", "no-limit", "pending-pvc", "same-pending-pvc-once", "missing-pv-counts-by-class",
        "no-class-not-counted", "same-driver", "other-driver", "in-tree", "in-tree-and-csi", "ephemeral-missing"])
def test_csi_limits(new, existing, limit, drivers, want):
    c = Cluster([node(NODE)], existing, storage=_storage(drivers) + [csi_node(NODE, {d: limit for d in drivers})])
    assert c.filter("NodeVolumeLimits", new) == {NODE: want}


def test_no_csi_node_no_limit():
    """kube's "nil csi node": without a CSINode nothing is counted."""
    c = Cluster([node(NODE)], [EBS_TWO, RUNNING], storage=_storage([EBS]))
    assert c.filter("NodeVolumeLimits", EBS_ONE) == {NODE: None}


def test_an_ephemeral_volume_counts_by_its_class():
    """kube's "ephemeral doesn't when node volume limit <= pods CSI volume"."""
    owned = pvc("abc-xyz", "csi-sc", ns="test", owner_uid="12345")
    c = Cluster([node(NODE)], [RUNNING, EBS_TWO], storage=_storage([EBS]) + [owned, csi_node(NODE, {EBS: 2})])
    new = pod("abc", ns="test", uid="12345", volumes=[claim_volume("xyz", ephemeral=True)])
    assert c.filter("NodeVolumeLimits", new) == {NODE: EXCEEDED}


def test_pods_with_only_other_volumes_skip():
    """kube's "skip Filter when the pod only uses secrets and configmaps"."""
    p = pod("p", volumes=[{"name": "cm", "configMap": {"name": "x"}}, {"name": "s", "secret": {"secretName": "y"}}])
    st = Cluster([node(NODE)]).pre_filter("NodeVolumeLimits", p)
    assert st.code == SKIP
