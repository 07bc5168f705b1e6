"""InterPodAffinity: the pod's required pod affinity and anti-affinity, and existing pods'
anti-affinity, hold on the node (the rules, common.scheduling.constraints, are shared with verify);
preferred terms score."""
from __future__ import annotations

from ..scheduling.constraints import INTER_POD_AFFINITY, inter_pod_affinity_failure
from ..validation import Bool, Int, invalid
from .args import ArgsKind
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin
from .spec import ACROSS_NODES, PluginSpec


def _rules(a: dict, path: str) -> list:
    w = a["hardPodAffinityWeight"]
    return [] if 0 <= w <= 100 else [invalid(f"{path}.hardPodAffinityWeight", w, "not in valid range [0, 100]")]


def check(j):
    failure = inter_pod_affinity_failure(j.view.constraints, j.pod, j.node, j.excluded)
    return None if failure is None else f"{INTER_POD_AFFINITY}: {failure[1]}"


class InterPodAffinity(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = INTER_POD_AFFINITY
    resolvable_by_preemption = True
    args_kind = ArgsKind({"hardPodAffinityWeight": Int(1), "ignorePreferredTermsOfExistingPods": Bool()}, _rules)
    binder_check = staticmethod(check)
    queueing_hints = ACROSS_NODES
