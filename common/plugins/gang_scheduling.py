"""GangScheduling (kube v1.37, GenericWorkload): the pods of a kube PodGroup
(`scheduling.k8s.io/v1beta1`) with a `gang` policy are placed all or nothing; a `basic` group's
pods are scheduled one by one. It has no args. Kube enables it only with the GenericWorkload
feature gate (off by default in v1.37, as the API is); here it is in the default profile, since
pods outside such a group never notice it and an API server without the gate drops
spec.schedulingGroup. The binder judges a group as a unit (binder/groups.py), as for
Coscheduling's groups."""
from __future__ import annotations

from .interface import PermitPlugin, PreEnqueuePlugin
from .spec import PluginSpec

#: kube's permitTimeoutDuration: how long a member waits at Permit for its quorum.
PERMIT_TIMEOUT_S = 300.0


class GangScheduling(PluginSpec, PreEnqueuePlugin, PermitPlugin):
    name = "GangScheduling"
