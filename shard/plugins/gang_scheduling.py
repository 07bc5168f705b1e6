"""GangScheduling: kube v1.37's all-or-nothing placement of a kube PodGroup's pods.

The rules and messages are kube-scheduler's (pkg/scheduler/framework/plugins/gangscheduling):

* PreEnqueue keeps a member out of the queue (UnschedulableAndUnresolvable) while its PodGroup
  does not exist (`waiting for pods's pod group "NAME" to appear in scheduling queue`) or, for
  a gang, while the group has fewer pods than minCount (`waiting for minCount pods from a gang
  to appear in scheduling queue`): every pod of the group that is not finished counts, gated
  or bound. A new member or PodGroup event asks again (shard/intake.py's wake_unit).
* Permit holds a member (`waiting for minCount pods from a gang to be scheduled`, at most 5
  minutes) until minCount of the group are scheduled (bound, or assumed here), then allows
  every waiting member; the shard commits them with the one that completed the group as one
  unit, which the binder binds all or nothing.

kube v1.37 tries a group's queued pods in one pod-group cycle and gives up on the group as
soon as the pods left could not make up minCount; the shard tries them one after the other,
the placed ones waiting at Permit, and gives up at the same point (ShardLoop.group_failed)
with kube's messages (common.model.podgroup.gave_up).
"""
from __future__ import annotations

from common.plugins import gang_scheduling
from common.model.podgroup import GANG, NATIVE_PREFIX
from ..framework import Plugin, unresolvable
from ..waiting import Wait

WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to appear in scheduling queue"


def native_key(pod) -> str | None:
    """The key of the kube PodGroup `pod` joins, or None."""
    return f"{NATIVE_PREFIX}{pod.namespace}/{pod.scheduling_group}" if pod.scheduling_group else None


class GangScheduling(Plugin, gang_scheduling.GangScheduling):
    def pre_enqueue(self, pod):
        key = native_key(pod)
        if key is None:
            return None
        group = self.handle.groups.get(key)
        if group is None:
            return unresolvable(f"waiting for pods's pod group \"{pod.scheduling_group}\" to appear in scheduling queue")
        if group.policy != GANG:
            return None
        if self._all_pods(key) < group.min_member:
            return unresolvable(WAITING_FOR_QUORUM)
        return None

    def permit(self, state, pod, node_name: str):
        key = native_key(pod)
        if key is None:
            return None
        group = self.handle.groups.get(key)
        if group is None:
            return unresolvable(f"failed to get podGroup {pod.namespace}/{pod.scheduling_group}: "
                                f"podgroup.scheduling.k8s.io \"{pod.scheduling_group}\" not found")
        if group.policy != GANG:
            return None
        if self.scheduled(key) < group.min_member:
            return Wait(gang_scheduling.PERMIT_TIMEOUT_S)
        waiting = self.handle.waiting
        for other in waiting.in_unit(key):
            waiting.allow(other, self.name)
        return None

    def _all_pods(self, key: str) -> int:
        """kube's AllPodsCount: the group's pods the scheduler's informer holds (not finished)."""
        return sum(1 for m in self.handle.groups.members.get(key, {}).values() if m.live)

    def scheduled(self, key: str) -> int:
        """kube's ScheduledPodsCount: members bound (as the watch shows them) or assumed here."""
        return sum(1 for k, m in self.handle.groups.members.get(key, {}).items()
                   if m.live and (m.node is not None or self.handle.counted(k) is not None))
