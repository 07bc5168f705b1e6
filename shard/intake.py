"""What a shard keeps of the store, and how the store's events change it.

The shard's declarations for common.runtime.intake: PriorityClasses and PodDisruptionBudgets kept by
key, the storage kinds in the scheduler's VolumeState, Services and controllers in its
Workloads (default spreading's selectors), Namespaces (namespaceSelector's labels), nodes in the cache, PodGroups in the
scheduler's group index, and every pod: bound ones counted in the cache, owned pending ones
queued (unless a PreEnqueue plugin holds them back), another shard's pending ones set aside
unparsed. Each change wakes the queued pods it may help (shard.queueing_hints).

Which pods the shard owns is one of two collaborators: `DispatchedPods` (the server: what
the dispatcher handed over) or `ProfileOwnership` (every pending pod whose schedulerName
names a profile: `shardsched simulate`).

Bad objects never stop it: a pod that cannot be parsed is recorded in `errors` and its
PodScheduled condition says why; everything else keeps flowing.
"""
from __future__ import annotations

import logging

from common.model.changes import node_unchanged
from common.runtime.intake import (Intake, Kind, bound_from_patch, key_of, same_version, status_hinted, status_update,
                                   volume_kinds, workload_kinds)
from common.model.objects import raw_pod_key
from common.model.podgroup import NATIVE_KIND, index_key_of, may_name_group
from common.scheduling.device_state import claim_name
from common.scheduling.volumes import counts_volumes
from common.store.base import WATCH_LINGER_S
from . import queueing_hints as hints

log = logging.getLogger(__name__)


class ProfileOwnership:
    """The loop owns every pending pod whose schedulerName names one of its profiles (and,
    with `accept_default`, default-scheduler's pods too)."""

    def __init__(self, cfg, accept_default: bool = False):
        self.names = {p.scheduler_name for p in cfg.profiles}
        if accept_default or cfg.dispatcher.also_default_scheduler:
            self.names.add("default-scheduler")

    def may_skip(self, key: str) -> bool:
        """Whether a pending pod under `key` can be passed over without parsing it."""
        return False

    def owns(self, pod) -> bool:
        return pod.scheduler_name in self.names

    def release(self, key: str) -> None:
        """The pod is no longer this loop's to schedule."""


class DispatchedPods:
    """The loop owns exactly the pods the dispatcher handed to it."""

    def __init__(self):
        self.keys: set[str] = set()

    def take(self, key: str) -> None:
        self.keys.add(key)

    def may_skip(self, key: str) -> bool:
        return key not in self.keys  # another shard's pending pod: nothing to count yet

    def owns(self, pod) -> bool:
        return pod.key in self.keys

    def release(self, key: str) -> None:
        self.keys.discard(key)


class ShardIntake:
    """The shard's view of the store, kept by the store's events, over the loop's cache,
    queue and scheduler (which it shares with the loop's cycles)."""

    def __init__(self, store, cache, queue, scheduler, owner, linger_s: float = WATCH_LINGER_S):
        """`linger_s`: the informer's (store.watchLingerSeconds)."""
        self.store = store
        self.cache = cache
        self.queue = queue
        self.scheduler = scheduler
        self.owner = owner
        self.groups = scheduler.groups
        self.priority_classes: dict = {}
        self.pods: dict = {}          # every pod we have parsed, by key (pending and bound)
        #: Pending pods we do not own, unparsed, as the watch showed them (their creation
        #: still undecoded, as the store handed it over, until one is dispatched here:
        #: `_holds`): what a dispatch names is taken from here (the message carries no pod),
        #: through `unowned_pod`.
        self.unowned: dict = {}
        #: Victims of pod group members that wait for their group (or whose unit is being
        #: committed): victim key -> preemptor key. They are left out of the cache until
        #: the unit is bound (the binder evicts them) or released (they count again), so the
        #: group's other members neither count their room twice nor claim them again.
        self.claimed: dict[str, str] = {}
        #: Owned pending pods a PreEnqueue plugin keeps out of the queue (scheduling gates):
        #: pod key -> its message. An update of the pod asks again.
        self.gated: dict[str, str] = {}
        #: Pending pods with claims by the keys of the claims they name ("namespace/name";
        #: a generated claim once the pod's status names it): the pods a claim event
        #: concerns (kube's index of pods by claim, for its preQueueingHint).
        self.by_claim: dict[str, set[str]] = {}
        self.intake = Intake([
            Kind("PriorityClass", keep=self.priority_classes),
            Kind("PodDisruptionBudget", keep=scheduler.pdbs, then=self._budgets_changed),
            *volume_kinds(scheduler.volumes, then=self._volumes_changed),
            Kind("DeviceClass", put=scheduler.devices.set, drop=self._drop_device_kind("DeviceClass"),
                 then=self._devices_changed),
            Kind("ResourceSlice", put=scheduler.devices.set, drop=self._drop_device_kind("ResourceSlice"),
                 then=self._devices_changed),
            Kind("ResourceClaim", handle=self._apply_claim),
            *workload_kinds(scheduler.workloads),
            Kind("Namespace", put=scheduler.namespaces.set, drop=scheduler.namespaces.remove),
            Kind("Node", handle=self._apply_node, current=self._node, unchanged=node_unchanged),
            Kind("PodGroup", handle=self._apply_group),
            Kind(NATIVE_KIND, handle=self._apply_group),
            Kind("Pod", handle=self.apply_pod, take_status=self._takes_status,
                 take_undecoded=self._takes_undecoded),
        ], priority_classes=self.priority_classes, logger=log)
        self.errors = self.intake.errors
        self.apply = self.intake.apply
        # a list's bound pods are counted node by node at its end (PodAccounting.listing)
        self.informer = self.intake.informer(store, self.forget_everything, linger_s=linger_s,
                                             listing=cache.listing)

    def forget_everything(self) -> None:
        """Before a relist: the fresh list will bring back whatever still exists."""
        self.unowned.clear()
        for key in list(self.pods):
            self.queue.delete(key)
            self.cache.remove_pod(key)
        for info_name in [name for name, _ in self.cache.nodes.items()]:
            self.cache.remove_node(info_name)
        self.pods.clear()
        self.by_claim.clear()
        self.gated.clear()
        self.scheduler.nominated.clear()
        self.groups.clear()
        self.claimed.clear()
        self.scheduler.volumes.clear()
        self.scheduler.devices.clear()
        self.scheduler.workloads.clear()
        self.scheduler.namespaces.clear()

    # --- the kinds --------------------------------------------------------------------------

    def _budgets_changed(self) -> None:
        self.queue.wake(hints.preemption_changed)

    def _volumes_changed(self) -> None:
        """A claim, volume, storage class or CSINode changed: it can only matter to pods
        with volumes (kube's VolumeBinding, VolumeZone and NodeVolumeLimits hints)."""
        self.queue.move_all_to_active(only=counts_volumes, event="StorageChange")

    def _drop_device_kind(self, kind: str):
        return lambda key: self.scheduler.devices.remove(kind, key)

    def _devices_changed(self) -> None:
        """A device class or slice changed: the parked pods DynamicResources turned down are
        retried (a slice that appeared, a class made); PreEnqueue, which waits for claims
        only, is not asked again."""
        self.queue.move_all_to_active(only=_devices_changed, entries=True, event="DeviceChange")

    def _apply_claim(self, type_: str, obj: dict) -> None:
        """A ResourceClaim event, kept in the DeviceState, then kube's DynamicResources hints
        (preQueueingHint and isSchedulableAfterClaimChange): a claim deallocated, or deleted
        while allocated, frees devices any parked pod with claims may take; otherwise only the
        pods that name the claim are concerned: PreEnqueue is asked again for those it held
        back (the claim made), and the parked ones are retried when it was made or its status
        changed (allocated, a reservation dropped)."""
        devices = self.scheduler.devices
        key = key_of("ResourceClaim", obj)
        old = devices.claims.get(key)
        if type_ == "DELETED":
            devices.remove("ResourceClaim", key)
            new = None
        else:
            new = self.intake.parse(obj)
            if new is None:
                return
            devices.set(new)
        if old is not None and old.allocation is not None and (new is None or new.allocation is None):
            self.queue.move_all_to_active(only=_devices_changed, entries=True, event="ResourceClaimChange")
        waiting = self.by_claim.get(key)
        if not waiting:
            return
        for pod_key in [k for k in waiting if k in self.gated]:
            pod = self.pods.get(pod_key)
            if pod is not None and not pod.deleting and self.owner.owns(pod):
                self.enqueue(pod)
        if new is not None and (old is None or _claim_status(old) != _claim_status(new)):
            self.queue.wake_pods(waiting, _devices_changed, event="ResourceClaimChange")

    def _index_claims(self, old, new) -> None:
        """Keep `by_claim` for a pod that was `old` and is now `new` (None: gone); only a
        pending pod is indexed (a bound one waits for nothing)."""
        if old is not None and old.resource_claims and not old.node_name:
            for claim in _claim_keys(old):
                keys = self.by_claim.get(claim)
                if keys is not None:
                    keys.discard(old.key)
                    if not keys:
                        del self.by_claim[claim]
        if new is not None and new.resource_claims and not new.node_name:
            for claim in _claim_keys(new):
                self.by_claim.setdefault(claim, set()).add(new.key)

    def _pools(self, *nodes):
        """The sub-cluster pools of these nodes, for a wake that concerns only them (None:
        sub-clusters off, every parked pod is asked)."""
        label = self.scheduler.pool_label
        return {n.labels.get(label, "") for n in nodes} if label else None

    def pools_on(self, node_name: str | None):
        node = self._node(node_name) if node_name else None
        return self._pools(node) if node is not None else None

    def _node(self, name: str):
        info = self.cache.nodes.get(name)
        return info.node if info is not None else None

    def _apply_node(self, type_: str, obj: dict) -> None:
        """(A heartbeat, which changes nothing a plugin reads, is skipped before this: no
        parse, no snapshot clone, no pod woken up.)"""
        name = (obj.get("metadata") or {}).get("name")
        if type_ == "DELETED":
            self.cache.remove_node(name)
            self.queue.wake(hints.node_deleted)
            return
        old = self._node(name)
        node = self.intake.parse(obj)
        if node is not None:
            self.cache.set_node(node)
            if old is None:
                self.queue.wake(hints.node_added, node, pools=self._pools(node))
            else:
                self.queue.wake(hints.node_updated, old, node, pools=self._pools(old, node))

    def _apply_group(self, type_: str, obj: dict) -> None:
        key = index_key_of(obj)
        if self.groups.apply_group(type_, obj) is None and type_ != "DELETED":
            self.intake.report(self.groups.errors[key])
        self.wake_unit(key)

    def apply_pod(self, type_: str, obj: dict) -> None:
        key = raw_pod_key(obj)
        self.unowned.pop(key, None)
        joined = self.groups.apply_pod(type_, key, obj)
        if joined is not None and type_ == "ADDED":
            self.wake_unit(joined)  # one more member may complete the group
        if type_ == "DELETED":
            gone = self.cache.counted(key)
            nominated = self._nominate(key, None)
            self._index_claims(self.pods.pop(key, None), None)
            self.claimed.pop(key, None)
            self.gated.pop(key, None)
            self.queue.delete(key)
            self.cache.remove_pod(key)
            if gone is not None:
                self.queue.wake(hints.pod_left, gone, pools=self.pools_on(gone.node_name))
            elif nominated:
                self.queue.wake(hints.preemption_changed)
            return
        meta = obj.get("metadata") or {}
        known = self.pods.get(key)
        if same_version(known, obj):
            return  # seen already (the dispatcher's copy and the watch carry the same version)
        node_name = (obj.get("spec") or {}).get("nodeName")
        if node_name and known is not None and known.node_name == node_name and self._refreshed(known, obj):
            return
        if (not node_name and known is None and self.owner.may_skip(key)
                and not (obj.get("status") or {}).get("nominatedNodeName")):
            self.unowned[key] = obj  # another shard's pending pod, until one is dispatched here
            return
        if (node_name and known is not None and not known.node_name
                and known.uid == meta.get("uid") and self.cache.is_assumed(key)):
            pod = known.bound_copy(obj)  # the binding of our own decision
        else:
            pod = self.intake.parse(obj)
        if pod is None:
            self._report_bad_pod(key, obj)
            return
        self._apply_parsed(key, known, pod)

    def _apply_parsed(self, key: str, known, pod) -> None:
        """`pod`, the new version of the pod under `key` (`known` before), parsed or taken
        from its binding: nominations, claims, the queue and the cache follow it."""
        if self._nominate(key, None if pod.node_name or pod.deleting else pod):
            self.queue.wake(hints.preemption_changed)
        self._index_claims(known, pod)
        self.pods[key] = pod
        if pod.node_name:
            self.queue.delete(key)
            self.gated.pop(key, None)
            if key in self.claimed:
                return  # a victim of a member waiting at Permit: counted as gone already
            counted = self.cache.counted(key)
            self.cache.set_pod(pod)
            if counted is not None and self.cache.counted(key) is None:
                # it finished: its room is free
                self.queue.wake(hints.pod_left, counted, pools=self.pools_on(counted.node_name))
            elif (known is None or not known.node_name or known.labels != pod.labels) and self.queue.has_parked():
                self.queue.wake(hints.pod_arrived, pod, pools=self.pools_on(pod.node_name))
        elif self.cache.is_assumed(key):
            pass  # our binding is in flight; the watch will bring the bound version
        elif self.owner.owns(pod) and not pod.deleting:
            self.enqueue(pod)

    def _takes_status(self, type_: str, key: str, status: bytes) -> bool:
        """A pod event taken undecoded (Kind.take_status): a status-only write (its
        `status` hint) of a bound pod this shard holds, not a pod group's member (the group
        index reads members' documents), applied from the hint alone. With --churn every
        pod's Running write is one, a third of the pod events a shard reads."""
        if type_ != "MODIFIED" or key in self.groups.group_of:
            return False
        pod = status_hinted(self.pods.get(key), status)
        if pod is None:
            return False  # read in full (and reported, if unreadable) by apply_pod
        self._swap_status(pod)
        return True

    def _takes_undecoded(self, type_: str, key: str, document: bytes, event) -> bool:
        """A pod event handed over undecoded (Kind.take_undecoded), taken as apply_pod would
        take it without decoding it, when it concerns no pod group (read on the document's
        bytes; the group index reads members' documents): another shard's pending pod held
        as it is (`_holds`), or the binding of this shard's own decision taken from its
        patch (common.runtime.intake.bound_from_patch). With two shards, each shard's
        pods' bindings and the other shard's pods' creations are half of the pod events it
        reads; what it declines is decoded and applied as usual."""
        if type_ == "ADDED":
            return self._holds(key, document, event)
        known = self.pods.get(key)
        if (type_ != "MODIFIED" or known is None or known.node_name or not self.cache.is_assumed(key)
                or key in self.groups.group_of or may_name_group(document)):
            return False
        pod = bound_from_patch(known, event)
        if pod is None:
            return False
        self.unowned.pop(key, None)
        self._apply_parsed(key, known, pod)
        return True

    def _holds(self, key: str, document: bytes, event) -> bool:
        """A pod's creation held as it is in `unowned` when apply_pod would only keep it
        there: another shard's pending pod (not dispatched here), not bound, not nominated.
        Most are bound by the other shard before any is dispatched here: their creation is
        never decoded."""
        if (key in self.pods or not self.owner.may_skip(key) or key in self.groups.group_of
                or may_name_group(document) or b'"nodeName"' in document or b'"nominatedNodeName"' in document):
            return False
        self.unowned[key] = event
        return True

    def unowned_pod(self, key: str) -> dict | None:
        """The pending pod under `key` the watch showed and this shard does not own yet, as
        a dict (decoded now if it was held undecoded: `_holds`); None when there is none, or
        when its record does not decode (then skipped, logged and counted by the informer,
        as at delivery)."""
        held = self.unowned.get(key)
        if held is None or held.__class__ is dict:
            return held
        obj = self.informer.decoded(held)
        if obj is None:
            del self.unowned[key]
            return None
        self.unowned[key] = obj
        return obj

    def _refreshed(self, known, obj: dict) -> bool:
        """A status update of a bound pod (kubelet or kwok saying it runs): swapped in without
        a parse and without marking its node changed, when that is all it is."""
        pod = status_update(known, obj)
        if pod is None:
            return False  # parsed in full (and reported, if unreadable) by the usual path
        self._swap_status(pod)
        return True

    def _swap_status(self, pod) -> None:
        """`pod`, a held bound pod with a new status only, kept in its place."""
        self.pods[pod.key] = pod
        if pod.key not in self.claimed and not self.cache.refresh_pod(pod):
            self.cache.set_pod(pod)  # (a claimed victim is counted as gone already)

    def _nominate(self, key: str, pod) -> bool:
        """Keep the scheduler's nominated pods: `pod` if it is nominated somewhere, else none.
        True when a nomination was withdrawn or moved (room left for other pods)."""
        nominated = self.scheduler.nominated
        old = self.pods.get(key)
        withdrawn = False
        if old is not None and old.nominated_node in nominated:
            withdrawn = nominated[old.nominated_node].pop(key, None) is not None and (
                pod is None or pod.nominated_node != old.nominated_node)
            if not nominated[old.nominated_node]:
                del nominated[old.nominated_node]
        if pod is not None and pod.nominated_node:
            nominated.setdefault(pod.nominated_node, {})[key] = pod
        return withdrawn

    def _report_bad_pod(self, key: str, obj: dict) -> None:
        err = self.errors.get(f"Pod {key}")
        already = any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                      and c.get("message") == str(err)
                      for c in ((obj.get("status") or {}).get("conditions") or []) if isinstance(c, dict))
        if err is not None and not already:
            self.store.set_unschedulable(key, f"invalid pod: {err.field}: {err.message}")

    # --- the queue ----------------------------------------------------------------------------

    def enqueue(self, pod) -> None:
        """Queue an owned pending pod, unless a PreEnqueue plugin holds it back."""
        if not self.held_back(pod):
            self.gated.pop(pod.key, None)
            self.queue.add(pod)

    def held_back(self, pod) -> bool:
        """Run the pod's PreEnqueue plugins; a pod they refuse leaves the queue and waits in
        `gated` for an update (kube also asks again when a pod moves to activeQ)."""
        why = self.profile_for(pod).gate(pod)
        if why is None:
            return False
        self.queue.delete(pod.key)
        self.gated[pod.key] = why
        return True

    def wake_unit(self, unit: str | None) -> None:
        """Try the group's queued members now (kube's PodsToActivate for the siblings), and
        ask PreEnqueue again for those it held back: the group or a member that arrived may
        be what GangScheduling's quorum waited for (its queueing hints)."""
        if unit is None:
            return
        members = list(self.groups.members.get(unit, ()))
        for key in members:
            pod = self.pods.get(key) if key in self.gated else None
            if pod is not None and not pod.node_name and not pod.deleting and self.owner.owns(pod):
                self.enqueue(pod)
        self.queue.activate(members)

    def profile_for(self, pod):
        prof = self.scheduler.profiles.get(pod.scheduler_name)
        return prof or next(iter(self.scheduler.profiles.values()))


def _claim_keys(pod) -> set[str]:
    """The keys of the claims a pod names (a generated one once its status names it)."""
    out = set()
    for pc in pod.resource_claims:
        name = claim_name(pod, pc)[0]
        if name is not None:
            out.add(f"{pod.namespace}/{name}")
    return out


def _claim_status(claim) -> tuple:
    """What kube compares of a claim's status before and after an update."""
    return (claim.allocation.raw if claim.allocation is not None else None), claim.reserved_for


def _devices_changed(entry) -> bool:
    return hints.devices_changed(entry.pod, entry.rejectors)
