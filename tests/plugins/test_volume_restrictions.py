"""VolumeRestrictions, after kube-scheduler v1.37's volumerestrictions/volume_restrictions_test.go
(TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts,
TestAccessModeConflicts), and preemption curing a ReadWriteOncePod conflict."""
from __future__ import annotations

import pytest

from builders import UNRESOLVABLE, Cluster, claim_volume, node, pod, pv, pvc, running
from shard.framework import SKIP

DISK = ("Unschedulable", "node(s) had no available disk")
# kube-scheduler v1.37's words (v1.33: "node has pod using PersistentVolumeClaim with the same name
# and ReadWriteOncePod access mode")
RWOP = ("Unschedulable", "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                         "already in-use by another pod")


def _vol(kind: str, ident: str, read_only: bool = False) -> dict:
    sources = {"gce": ("gcePersistentDisk", {"pdName": ident}),
               "aws": ("awsElasticBlockStore", {"volumeID": ident}),
               "rbd": ("rbd", {"monitors": ["a", "b"], "pool": "foo", "image": ident}),
               "iscsi": ("iscsi", {"targetPortal": "127.0.0.1:3260", "iqn": ident, "lun": 0})}
    field, src = sources[kind]
    if read_only:
        src = dict(src, readOnly=True)
    return {"name": f"{kind}-{ident}", field: src}


def _run(new_volumes, existing_volumes):
    existing = [pod("there", node_name="n1", volumes=existing_volumes)] if existing_volumes is not None else []
    c = Cluster([node("n1")], existing)
    p = pod("p", volumes=new_volumes)
    pre = c.pre_filter("VolumeRestrictions", p)
    if pre is not None:
        return "pre", pre.code
    return "filter", c.filter("VolumeRestrictions", p)["n1"]


@pytest.mark.parametrize("kind", ["gce", "aws", "rbd", "iscsi"])
@pytest.mark.parametrize("new, existing, want", [
    ([], None, ("pre", SKIP)),                                     # nothing
    ([], ["foo"], ("pre", SKIP)),                                  # one state
    (["foo"], ["foo"], ("filter", DISK)),                          # same state
    (["bar"], ["foo"], ("filter", None)),                          # different state
], ids=["nothing", "one-state", "same-state", "different-state"])
def test_disk_conflicts(kind, new, existing, want):
    got = _run([_vol(kind, i) for i in new], None if existing is None else [_vol(kind, i) for i in existing])
    assert got == want


@pytest.mark.parametrize("kind, conflicts", [("gce", False), ("aws", True), ("rbd", False), ("iscsi", False)])
def test_read_only_on_both_sides_shares_the_disk_except_ebs(kind, conflicts):
    assert _run([_vol(kind, "foo", True)], [_vol(kind, "foo", True)]) == ("filter", DISK if conflicts else None)


def test_a_volume_without_restrictions_skips():  # "pod with a volume that doesn't have restrictions"
    assert _run([{"name": "empty", "emptyDir": {}}], None) == ("pre", SKIP)


RWOP_1, RWOP_2 = pvc("claim-with-rwop-1", modes=("ReadWriteOncePod",)), pvc("claim-with-rwop-2", modes=("ReadWriteOncePod",))
RWX = pvc("claim-with-rwx", modes=("ReadWriteMany",))


def _with_claims(name, *claims, node_name=None, priority=None):
    return pod(name, node_name=node_name, priority=priority, volumes=[claim_volume(c) for c in claims])


@pytest.mark.parametrize("new, existing, claims, want", [
    # failed to get PVC
    (_with_claims("p", "claim-with-rwop-1"), [], [], ("pre", (UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'))),
    # no access mode conflict
    (_with_claims("p", "claim-with-rwop-1"), [_with_claims("rwx", "claim-with-rwx", node_name="n1")], [RWOP_1, RWX],
     ("pre", (SKIP, ""))),
    # access mode conflict, unschedulable
    (_with_claims("p", "claim-with-rwop-1"),
     [_with_claims("one", "claim-with-rwop-1", node_name="n1"), _with_claims("rwx", "claim-with-rwx", node_name="n1")],
     [RWOP_1, RWX], ("filter", RWOP)),
    # two conflicts, unschedulable
    (_with_claims("p", "claim-with-rwop-1", "claim-with-rwop-2"),
     [_with_claims("two", "claim-with-rwop-1", "claim-with-rwop-2", node_name="n1")], [RWOP_1, RWOP_2, RWX],
     ("filter", RWOP)),
], ids=["missing-pvc", "no-conflict", "conflict", "two-conflicts"])
def test_access_mode_conflicts(new, existing, claims, want):
    c = Cluster([node("n1"), node("n2")], existing, storage=claims)
    pre = c.pre_filter("VolumeRestrictions", new)
    if pre is not None:
        assert ("pre", (pre.code, pre.message())) == want
    else:
        # the conflict is cluster-wide: every node fails, not only the holder's
        assert c.filter("VolumeRestrictions", new) == {"n1": want[1], "n2": want[1]}


def test_preemption_frees_a_read_write_once_pod_claim():
    """The conflict is Unschedulable (not unresolvable): evicting the lower-priority holder
    cures it, and its node is the one preemption picks."""
    holder = running("holder", "n2", "100m", 1, volumes=[claim_volume("claim-with-rwop-1")])
    bound = pvc("claim-with-rwop-1", modes=("ReadWriteOncePod",), volume_name="vol-1", bound=True)
    c = Cluster([node("n1"), node("n2")], [holder], storage=[bound, pv("vol-1", modes=("ReadWriteOncePod",))])
    result = c.schedule(_with_claims("high", "claim-with-rwop-1", priority=100))
    assert result.node == "n2" and [v.key for v in result.victims] == ["default/holder"]
    low = c.explain(_with_claims("low", "claim-with-rwop-1", priority=0))
    assert low == (f"0/2 nodes are available: 2 {RWOP[1]}. "
                   "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
