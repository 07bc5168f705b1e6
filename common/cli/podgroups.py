"""`shardsched get podgroups`: each PodGroup as a unit.

From the store: its phase (as the dispatcher keeps it), minMember, members, and how many are
bound and pending. With `-o wide`, also running, and from the shards placing the group
(asked through their leases; "-" when none answers for it): how many members a shard has
assumed and how many of those wait at Permit for the rest of the group.
"""
from __future__ import annotations

from ..model.podgroup import GroupIndex


def rows(group_docs: list, pod_docs: list, wide: bool, now: float, units: dict, age) -> tuple[list, list]:
    """(header, rows); `units`: group -> (shard id, GroupUnit) (common.tools.top.shard_units);
    `age(timestamp, now)`: kubectl's AGE column."""
    index = GroupIndex()
    invalid = {}
    for d in group_docs:
        if index.apply_group("ADDED", d) is None:
            invalid[f"{d['metadata'].get('namespace', 'default')}/{d['metadata']['name']}"] = d
    for d in pod_docs:
        meta = d.get("metadata") or {}
        index.apply_pod("ADDED", f"{meta.get('namespace') or 'default'}/{meta.get('name')}", d)
    header = ["NAMESPACE", "NAME", "PHASE", "MINMEMBER", "MEMBERS", "BOUND", "PENDING", "AGE"]
    if wide:
        header += ["RUNNING", "ASSUMED", "WAITING", "SHARD"]
    out = []
    for key, group in sorted(index.groups.items()):
        counts = index.counts(key)
        phase = ((group.raw.get("status") or {}).get("phase")) or "<none>"
        row = [group.namespace, group.name, phase, str(group.min_member), str(counts.total), str(counts.bound),
               str(counts.pending), age(group.raw["metadata"].get("creationTimestamp"), now)]
        if wide:
            shard, unit = units.get(key, (None, None))
            row += [str(counts.running)] + ([str(unit.assumed), str(unit.waiting), shard] if unit else ["-"] * 3)
        out.append(row)
    for key, d in sorted(invalid.items()):
        ns, _, name = key.partition("/")
        row = [ns, name, "<invalid>", "-", "-", "-", "-", age(d["metadata"].get("creationTimestamp"), now)]
        out.append(row + ["-"] * 4 if wide else row)
    return header, out
