"""PodDisruptionBudgets: how many more pods each budget lets preemption take (the shard's
preemption ranks candidates by it, the binder re-checks it before evicting).

On a real cluster the disruption controller keeps `status.disruptionsAllowed` current and
that figure is used as it is. Stores without that controller (the embedded Redis, the memory
store of `simulate`) hold budgets whose status was never written, so the figure is worked
out from the spec and the running pods the budget selects, as the controller would with no
workload controller to ask: minAvailable leaves `healthy - minAvailable`, maxUnavailable
allows `maxUnavailable` (percentages of the healthy pods, minAvailable rounded up).
"""
from __future__ import annotations

#: A binder's answer to a preemption whose victims were evicted but are still terminating.
VICTIMS_TERMINATING = "VictimsTerminating"


def allowed(pdb, pods) -> int:
    """Disruptions `pdb` allows now; `pods` are the bound pods of the cluster."""
    if pdb.disruptions_allowed is not None:
        return pdb.disruptions_allowed
    healthy = sum(1 for p in pods if not p.deleting and pdb.matches(p))
    if pdb.min_available is not None:
        return max(0, healthy - pdb.min_available.resolve(healthy, True))
    if pdb.max_unavailable is not None:
        return max(0, pdb.max_unavailable.resolve(healthy, False))
    return max(0, healthy - 1)  # an empty spec means minAvailable: 1


class Budgets:
    """Budgets being spent while victims are chosen: each victim taken spends one from every
    budget that selects it.

    A budget's starting figure is worked out the first time a pod it selects is spent (it
    may take a pass over every pod of the cluster) and shared by every `copy`, so one
    preemption pays for it once however many nodes it tries.
    """

    def __init__(self, pdbs, all_pods, start: dict | None = None):
        self.pdbs = list(pdbs)
        self.all_pods = all_pods  # callable: the bound pods of the cluster
        self.start = {} if start is None else start
        self.spent: dict[str, int] = {}

    def copy(self) -> "Budgets":
        """Unspent budgets sharing this one's starting figures."""
        return Budgets(self.pdbs, self.all_pods, self.start)

    def violates(self, pod) -> bool:
        """Spend `pod`; True if a budget that selects it had nothing left."""
        broken = False
        for b in self.pdbs:
            if b.matches(pod):
                if b.key not in self.start:
                    self.start[b.key] = allowed(b, self.all_pods())
                spent = self.spent[b.key] = self.spent.get(b.key, 0) + 1
                broken |= spent > self.start[b.key]
        return broken


def breaking(victims, budgets: Budgets) -> set:
    """Keys of the `victims` whose eviction would break a budget, spending `budgets` on each.

    Budgets are best effort in preemption: kube-scheduler ranks candidates by violations and
    then deletes such victims outright rather than giving up. The binder and the shard's store
    committer ask this right before evicting (the budgets may have shrunk since the shard
    chose the victims), evict the others through the budget-respecting path and delete these.
    """
    return {v.key for v in victims if budgets.violates(v)}


def eviction_failures(keys, reasons) -> str | None:
    """"EvictionFailed: ..." for the evictions the store refused, or None. A victim already
    gone (PodNotFound) is no failure: the room it held is free either way."""
    failed = [f"{k}: {r}" for k, r in zip(keys, reasons) if r not in (None, "PodNotFound")]
    return f"EvictionFailed: {'; '.join(failed)}" if failed else None
