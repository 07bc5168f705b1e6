"""Figures of a bench run over its pod groups (`--workload gang`).

A group counts as placed when minMember of its members are bound; its placement time is from
the creation of its last member (before which it cannot be placed) to the binding that
completed it. Reported: groups placed per second (over the span from the first group placed
to the last, as pods/s is), placement time p50 / p99 / max for the groups of 64 pods and for
all, and the groups left partial (some members bound, fewer than minMember) at the end.
"""
from __future__ import annotations

from . import harness

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def _key(d: dict) -> str:
    meta = d["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def figures(manifests: list[dict], created_at: dict, bound_at: dict) -> dict:
    """The `groups` section of the bench report (see the module doc)."""
    quorum = {_key(d): (d.get("spec") or {}).get("minMember", 1) for d in manifests if d.get("kind") == "PodGroup"}
    members: dict[str, list[str]] = {g: [] for g in quorum}
    for d in manifests:
        group = (d["metadata"].get("labels") or {}).get(GROUP_LABEL)
        if d.get("kind", "Pod") == "Pod" and group:
            members[f"{d['metadata'].get('namespace', 'default')}/{group}"].append(_key(d))
    placed_at, took, took_64, partial = {}, [], [], 0
    for g, keys in members.items():
        times = sorted(bound_at[k] for k in keys if k in bound_at)
        if len(times) >= quorum[g]:
            placed_at[g] = times[quorum[g] - 1]
            seconds = placed_at[g] - max(created_at[k] for k in keys)
            took.append(seconds)
            if len(keys) == 64:
                took_64.append(seconds)
        elif times:
            partial += 1
    span = (max(placed_at.values()) - min(placed_at.values())) if len(placed_at) > 1 else 0.0

    def spread(samples: list[float]) -> dict:
        if not samples:
            return {"p50": None, "p99": None, "max": None}
        return {"p50": round(harness.percentile(samples, 50), 2), "p99": round(harness.percentile(samples, 99), 2),
                "max": round(max(samples), 2)}

    return {"groups": len(quorum), "placed": len(placed_at), "partial": partial,
            "groups_per_s": round(len(placed_at) / span, 1) if span > 0 else float(len(placed_at)),
            "groups_of_64": sum(1 for keys in members.values() if len(keys) == 64),
            "place_64_s": spread(took_64), "place_s": spread(took)}
