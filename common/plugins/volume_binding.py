"""VolumeBinding: the pod's claims can be bound on the node (kube's rules: common.scheduling.volumes);
its PreBind, which writes the bindings and waits for them, is the binder's
(common.scheduling.volume_binding), so the plugin's points are kube's less preBind. It scores
as kube-scheduler v1.37 does with StorageCapacityScoring (beta, on by default since v1.37): a
node by how full the volumes it would bind the pod's claims to are (`shape`)."""
from __future__ import annotations

from ..validation import Int, List, invalid
from ..scheduling.volumes import binding_claims, binding_refusal, find_pod_volumes
from .args import SHAPE_POINT, ArgsKind, shape_rules
from .interface import FilterPlugin, PreFilterPlugin, PreScorePlugin, ReservePlugin, ScorePlugin
from .spec import PluginSpec


def _rules(a: dict, path: str) -> list:
    errs = []
    if a["bindTimeoutSeconds"] < 0:
        errs.append(invalid(f"{path}.bindTimeoutSeconds", a["bindTimeoutSeconds"],
                            "invalid BindTimeoutSeconds, should not be a negative value"))
    return errs + shape_rules(a["shape"], f"{path}.shape")


#: kube's default shape with StorageCapacityScoring: an empty volume scores 10, a full one 0.
DEFAULT_SHAPE = ({"utilization": 0, "score": 10}, {"utilization": 100, "score": 0})


def _defaulting(a: dict) -> None:
    if not a["shape"]:
        a["shape"] = [dict(p) for p in DEFAULT_SHAPE]


def check(j):
    """The pod's claims can be bound on the node, against the volumes other decisions in
    flight took; the plan (what PreBind writes) is kept for the reservation."""
    if not j.pod.volumes:
        return None
    claims, refusal = binding_claims(j.pod, j.view.volumes)
    if refusal is None and claims is not None:
        plan, reasons = find_pod_volumes(claims, j.node, j.view.volumes)
        refusal = binding_refusal(reasons)
        j.volume_plan = plan if plan else None
    return None if refusal is None else f"VolumeBinding: {refusal.message()}"


class VolumeBinding(PluginSpec, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin):
    name = "VolumeBinding"
    args_kind = ArgsKind({"bindTimeoutSeconds": Int(600, bits=64), "shape": List(SHAPE_POINT)}, _rules, _defaulting)
    binder_check = staticmethod(check)
    binder_check_always = True
