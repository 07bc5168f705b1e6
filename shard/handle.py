"""What a plugin may use of the scheduler: its profile's Handle.

As kube-scheduler's framework.Handle, it gives a plugin the snapshot it schedules against,
the pods waiting at Permit, the PodDisruptionBudgets, the PodGroups, the cluster client, the
shard's clock, and a way to run the other plugins of its own profile on one node (what
preemption's dry runs need), but not the scheduler itself: a plugin cannot reach into the
queue, the cache or another profile.
"""
from __future__ import annotations


class Handle:
    __slots__ = ("_sched", "_profile")

    def __init__(self, sched, profile):
        self._sched = sched
        self._profile = profile

    # --- what the cycle schedules against ---------------------------------------------------

    @property
    def table(self):
        """The snapshot's node table (kube's SnapshotSharedLister): rows of NodeInfos and
        their numpy columns, as of the start of the cycle."""
        return self._sched.snapshot.table

    @property
    def devices(self):
        """DRA's claims, classes and slices (common.scheduling.device_state.DeviceState), with
        the allocations this shard assumed laid over them."""
        return self._sched.devices

    @property
    def volumes(self):
        """The claims, volumes, storage classes and CSINodes (common.scheduling.volumes.VolumeState),
        with the volume bindings this shard assumed laid over them."""
        return self._sched.volumes

    @property
    def namespaces(self):
        """The Namespaces' labels, for pod affinity's namespaceSelector
        (common.model.workloads.Namespaces)."""
        return self._sched.namespaces

    @property
    def workloads(self):
        """The Services and controllers whose selectors default spreading takes
        (common.scheduling.workloads.Workloads)."""
        return self._sched.workloads

    @property
    def claims_in_use(self):
        """"namespace/claim" -> pods placed (bound or assumed) that mount it."""
        return self._sched.cache.claims_in_use

    @property
    def rng(self):
        """The shard's seeded random source (tie-breaks, random starting rows)."""
        return self._sched.rng

    @property
    def preemption_pruning(self) -> bool:
        """Whether preemption may skip nodes by the priority prefix sums (an optimisation
        that can be switched off for baselines; decisions are the same either way)."""
        return self._sched.preemption_pruning

    def lowest_priority(self) -> float:
        """The lowest priority of any pod counted on a node (infinity when there is none):
        preemption cannot find victims for a pod whose priority is not above it."""
        return self._sched.cache.lowest_priority()

    def budgets(self):
        """The PodDisruptionBudgets, as preemption spends them, over the counted pods."""
        return self._sched.budgets()

    @property
    def waiting(self):
        """Pods held at Permit (WaitingPods): Permit plugins allow or reject them here."""
        return self._sched.waiting

    @property
    def groups(self):
        """PodGroups and their members as the watch shows them (common.model.podgroup.GroupIndex)."""
        return self._sched.groups

    @property
    def partitioning(self) -> tuple[int, str]:
        """(binders.count, binders.partitionLabel): how nodes fall into binder partitions."""
        return self._sched.partitioning

    def now(self) -> float:
        """The shard's clock (seconds; virtual in `simulate`)."""
        return self._sched.clock()

    def counted(self, key: str):
        """The pod counted on a node under `key` (bound, or assumed by this shard), or None."""
        return self._sched.cache.counted(key)

    @property
    def client(self):
        """The cluster store (None in pure scheduling tests): what Bind plugins write to."""
        return self._sched.store

    # --- running this profile's plugins on one node -----------------------------------------

    def preempt_through_extenders(self, pod, victims: dict) -> dict:
        """kube's callExtenders: the candidates (node name -> (victim Pods, PDB violations))
        the extenders with a preemptVerb keep; raises common.scheduling.extenders.ExtenderError."""
        return self._sched.extenders.preempt(pod, victims, self._sched.snapshot.table)

    def filter_with_nominated(self, state, pod, info):
        """Every filter of the profile on `info`, counting the pods nominated there that
        `pod` must leave room for; None when the node fits, else the first failure."""
        return self._sched.check_node(self._profile, state, pod, info)

    def has_nominated(self) -> bool:
        """Whether any pending pod is nominated to a node."""
        return bool(self._sched.nominated)

    def nominated_on(self, pod, node_name: str) -> list:
        """Pods nominated to the node that `pod` must leave room for (priority >= its own)."""
        return self._sched._nominated_on(pod, node_name)

    def add_pod(self, state, pod, other, info) -> None:
        """Count `other` on `info` (a scratch copy) and in the PreFilter state."""
        self._sched.add_to(self._profile, state, pod, other, info)

    def remove_pod(self, state, pod, other, info) -> None:
        """Take `other` off `info` (a scratch copy) and out of the PreFilter state."""
        self._sched.remove_from(self._profile, state, pod, other, info)
