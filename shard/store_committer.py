"""Committing a shard's decisions where no binder runs (`shardsched simulate`, tests).

The shard loop hands each decision to a committer (shard.loop). The shard server's sends it
to a binder and hears the outcome later; `StoreCommitter` commits it at once, in the loop's
own thread, against the store.
"""
from __future__ import annotations

from common.scheduling.disruption import breaking, eviction_failures
from common.scheduling.group_commit import GroupCommit
from common.model.objects import parse_object
from common.config.plugin_names import DYNAMIC_RESOURCES, VOLUME_BINDING
from common.scheduling.dra_binding import write_claims
from common.scheduling.volume_binding import TIMED_OUT, bindings_done, store_lookups, write_bindings
from .plugins.dynamic_resources import planned_claims
from .plugins.volume_binding import planned_volumes


class StoreCommitter:
    """Commits a decision in the loop's own thread: nominates the pod and evicts its victims,
    binds its volumes (VolumeBinding's PreBind), then runs the profile's Bind plugins. Used
    where no binder runs (`simulate`, tests). Victims are evicted as the binder evicts them
    (those whose eviction would break a PodDisruptionBudget deleted outright, as
    kube-scheduler does), so the outcome is what the distributed scheduler would do."""

    def __init__(self, store, failpoint=None, provision=None):
        """`failpoint`: common.scheduling.group_commit's hook, for tests that cut a group commit short;
        `provision`, when given, plays the storage controllers between writing a pod's volume
        bindings and checking they are done (simulate's shard.provisioner)."""
        self.store = store
        self.groups = GroupCommit(store, "shard", failpoint)
        self.provision = provision
        #: victim pod key -> key of the pod that preempted it
        self.evicted_by: dict[str, str] = {}

    def commit(self, entry, result, budgets) -> str:
        """"" when bound, else why not (the loop undoes the pod's assumption with it)."""
        pod, node = entry.pod, result.node
        if result.victims:
            self.store.set_nominated_node(pod.key, node)
            refused = self._evict([(pod, v) for v in result.victims], budgets())
            if refused is not None:
                return f"preemption failed: {refused}"
        claims = planned_claims(result.state, node)
        if claims is not None and (why := write_claims(self.store, pod, claims)) is not None:
            return f"{DYNAMIC_RESOURCES}: {why}"
        plan = planned_volumes(result.state, node)
        if plan is not None:
            why = self._bind_volumes(plan, node)
            if why is not None:
                return f"{VOLUME_BINDING}: {why}"
        for p in result.profile.bind:
            st = p.bind(result.state, pod, node)
            if st is None:
                return ""
            if st.code != "Skip":
                return f"{p.name}: {st.message()}"
        return ""

    def commit_unit(self, unit: str, items: list, budgets) -> list[str]:
        """A pod group's unit: every member's victims evicted (as `commit` evicts them), then
        all members bound or none (common.scheduling.group_commit, which takes the
        place of the Bind plugins for a unit); one reason per member, "" when bound."""
        victims = [(entry.pod, v) for entry, result in items for v in result.victims]
        if victims:
            for entry, result in items:
                if result.victims:
                    self.store.set_nominated_node(entry.pod.key, result.node)
            refused = self._evict(victims, budgets())
            if refused is not None:
                return [f"preemption failed: {refused}"] * len(items)
        results = self.groups.commit(unit, [(e.pod.key, e.pod.uid or "", r.node) for e, r in items])
        return [r or "" for r in results]

    def _evict(self, victims: list, budgets) -> str | None:
        """Evict (preemptor, victim) pairs as the binder does: through the budget-respecting
        path, except the victims whose eviction would break a budget, deleted outright.
        "EvictionFailed: ..." when the store refused one, else None."""
        delete = breaking([v for _, v in victims], budgets)
        reasons = {}
        for outright in (False, True):
            batch = [(v.key, v.uid or None) for _, v in victims if (v.key in delete) == outright]
            if batch:
                reasons.update(zip((k for k, _ in batch), self.store.evict_many(batch, respect_budgets=not outright)))
        for preemptor, v in victims:
            if reasons[v.key] is None:
                self.evicted_by[v.key] = preemptor.key
        return eviction_failures([v.key for _, v in victims], [reasons[v.key] for _, v in victims])

    def _bind_volumes(self, plan, node_name: str) -> str | None:
        """VolumeBinding's PreBind in place: write the bindings, let the provisioner act, and
        fail at once (rather than after bindTimeoutSeconds) unless the claims are bound."""
        written, why = write_bindings(self.store, plan, node_name)
        if why is not None:
            return why
        if self.provision is not None:
            self.provision()
        node = parse_object(self.store.get("Node", node_name) or {"kind": "Node", "metadata": {"name": node_name}})
        done, why = bindings_done(node, plan, written, *store_lookups(self.store))
        return None if done else (why or TIMED_OUT)

