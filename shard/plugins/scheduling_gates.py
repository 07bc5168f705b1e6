"""SchedulingGates: a pod whose spec.schedulingGates is not empty is not scheduled.

Its PreEnqueue keeps the pod out of the scheduling queue until the last gate is removed (an
update of the pod, which the loop runs PreEnqueue on again). The API server marks such a
pod PodScheduled=False/SchedulingGated when it is created and refuses to bind it; the
scheduler writes nothing for it.
"""
from __future__ import annotations

from common.plugins import scheduling_gates
from ..framework import Plugin, unresolvable


class SchedulingGates(Plugin, scheduling_gates.SchedulingGates):
    def pre_enqueue(self, pod):
        if not pod.scheduling_gates:
            return None
        # kube's words, a Go %v of the gate names
        return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")
