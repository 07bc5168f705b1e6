"""Every check a placement must pass, as one ordered list: what the binder checks before it
commits a decision, and what `verify --settled` asks of a pending pod on every node (the
node checks, kube's volume filters, then the cross-node constraints).

Each check sees the pod as the binder's own watch shows it, the node's record, the
victims (resolved from the binder's view, never from the message) and the binder's
reservations, and answers None or "Reason: message": the name of the kube filter plugin
whose rule failed and kube's message (the shard retries with it), or one of the binder's own
reasons for victims. Each plugin's check is its own (common/plugins/<plugin>.py), over
common/'s predicates, the same the shard's plugins use; this module orders them.

Why checks over other partitions' nodes stay exact with several binders (common.scheduling.partition):
a domain of the partition label, or of the hostname, lies within one partition, so affinity,
anti-affinity and the "existing pods" rule see every reservation that could break them. A
topology spread check also reads other domains' counts; those only grow through other
binders' commits, and a larger count elsewhere can only lower the skew of this placement,
so a decision judged against a slightly older view of other partitions stays valid. (A
concurrent eviction of a matching pod in another partition is the one exception: it lowers
a count. Constraints over labels wider than the partition label, a region say, are exact
only with binders.count 1 or a partitionLabel at least that wide.)
"""
from __future__ import annotations

from ..config import plugin_names as names
from ..config.plugin_args import profile_args
from ..plugins import SPECS
from ..config.profile_plugins import filters


class Judged:
    """One decision as the checks see it. `view` has `nodes` (name -> node record),
    `constraints` (a ConstraintIndex), `claimed` (victim key -> claimant), `bound_to(key)`,
    `volumes` (common.scheduling.volumes.VolumeState), `claims_in_use` (claim key -> pods counted
    mounting it), `volume_prefix` (NodeVolumeLimits' name for unbound claims) and, for
    DEVICE_CHECKS, `devices` (common.scheduling.device_state.DeviceState)."""

    __slots__ = ("view", "pod", "node_name", "info", "victim_refs", "victims", "volume_plan", "device_plan")

    def __init__(self, view, pod, node_name: str, victim_refs: list = ()):
        self.view = view
        self.pod = pod
        self.node_name = node_name
        self.info = view.nodes.get(node_name)
        self.victim_refs = victim_refs  # [(key, uid)] as the shard named them
        self.victims: list = []         # the victims' Pods, once `victims` passed
        self.volume_plan = None         # the volumes to bind, once `volume_binding` passed
        self.device_plan = None         # (claims, [(claim, allocation)]), once DynamicResources' passed

    @property
    def node(self):
        return self.info.node

    @property
    def excluded(self) -> dict:
        """The victims, as constraint checks leave them out: key -> node."""
        return {v.key: self.node_name for v in self.victims}

    def remaining(self) -> list:
        """The pods staying on the node (the victims leave)."""
        gone = {v.key for v in self.victims}
        return [p for key, p in self.info.pods.items() if key not in gone]


def node_exists(j: Judged):
    if j.info is None or j.info.node is None:
        return f"NodeNotFound: node {j.node_name} not found"
    return None


def victims(j: Judged):
    """Victims exist on this node as the watch shows them, are distinct, are bound (not
    another decision's reservation), are of lower priority, and nobody else claimed them."""
    view, seen = j.view, set()
    for key, uid in j.victim_refs:
        if key in seen:
            return f"InvalidVictim: {key} is named twice"
        seen.add(key)
        victim = j.info.pods.get(key)
        if victim is None or (uid and victim.uid != uid) or view.bound_to(key) != j.node_name:
            return f"VictimGone: {key} is not bound to {j.node_name}"
        if victim.priority >= j.pod.priority:
            return (f"InvalidVictim: {key} has priority {victim.priority}, not below the preemptor's "
                    f"{j.pod.priority}")
        claimant = view.claimed.get(key)
        if claimant is not None and claimant != j.pod.key:
            return f"VictimClaimed: {key} is a victim of {claimant}'s decision in flight"
        j.victims.append(victim)
    return None


def _checks(*plugins: str) -> tuple:
    """The binder checks of these plugins (each plugin's module in common/plugins/ has its own)."""
    return tuple(SPECS[p].binder_check for p in plugins)


#: In order; the first failure is the answer. A plugin's check is its own
#: (common/plugins/<plugin>.py, `binder_check`); where it runs is the binder's order, here.
NODE_CHECKS = (node_exists, *_checks(names.NODE_UNSCHEDULABLE, names.TAINT_TOLERATION, names.NODE_AFFINITY),
               victims, *_checks(names.NODE_RESOURCES_FIT, names.NODE_PORTS))
#: kube's volume filters, after NodeResourcesFit as in its profile; always made (switching
#: them off could bind a pod to a node its volumes cannot reach)
VOLUME_CHECKS = _checks(names.VOLUME_RESTRICTIONS, names.NODE_VOLUME_LIMITS, names.VOLUME_BINDING, names.VOLUME_ZONE)
#: DynamicResources' allocation against the binder's devices, after the volumes (kube's order);
#: never run by verify: a bound pod's devices are already its own
DEVICE_CHECKS = _checks(names.DYNAMIC_RESOURCES)
CROSS_NODE_CHECKS = _checks(names.INTER_POD_AFFINITY, names.POD_TOPOLOGY_SPREAD)
#: The checks that stand for a kube filter plugin: a profile that does not run the plugin's
#: Filter does not get the check either (node_exists and victims always run, and a plugin's
#: check with `binder_check_always`, as the volume plugins').
CHECKED_PLUGIN = {spec.binder_check: name for name, spec in SPECS.items()
                  if spec.binder_check is not None and not spec.binder_check_always}
#: check -> its plugin, for every plugin's check.
PLUGIN_OF = {spec.binder_check: name for name, spec in SPECS.items() if spec.binder_check is not None}


def profile_checks(cfg, cross_node: bool = True) -> dict[str, tuple]:
    """schedulerName -> the checks for that profile's pods: the filters it runs, each as the
    profile's args configure it (NodeResourcesFit's ignored resources), and the volume checks
    always."""
    out = {}
    for i, profile in enumerate(cfg.profiles):
        runs = filters(profile)
        args = profile_args(cfg, i)
        checks = []
        for check in NODE_CHECKS + VOLUME_CHECKS + DEVICE_CHECKS + (CROSS_NODE_CHECKS if cross_node else ()):
            plugin = CHECKED_PLUGIN.get(check)
            if plugin is not None and plugin not in runs:
                continue
            plugin = PLUGIN_OF.get(check)
            # a plugin's check as its args configure it (NodeResourcesFit's ignored resources)
            checks.append(SPECS[plugin].configured_check(args[plugin]) if plugin is not None else check)
        out[profile.scheduler_name] = tuple(checks)
    return out


def first_failure(j: Judged, checks) -> str | None:
    for check in checks:
        why = check(j)
        if why is not None:
            return why
    return None
