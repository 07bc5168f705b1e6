"""kube-scheduler's semantics that the shard, the binder and verify share: predicates,
the binder's checks, per-node accounting, cross-node constraints, volumes and
VolumeBinding's PreBind, PDB arithmetic, node partitions and group commits.
"""
