"""VolumeBinding: the pod's claims can be bound on the node (kube's rules: common.scheduling.volumes);
its PreBind, which writes the bindings and waits for them, is the binder's
(common.scheduling.volume_binding), so the plugin's points are kube's less preBind."""
from __future__ import annotations

from ..config.validation import ANY, Int, forbidden, invalid
from ..scheduling.volumes import binding_claims, binding_refusal, find_pod_volumes
from .args import ArgsKind
from .interface import FilterPlugin, PreFilterPlugin, ReservePlugin
from .spec import PluginSpec


def _rules(a: dict, path: str) -> list:
    errs = []
    if a["bindTimeoutSeconds"] < 0:
        errs.append(invalid(f"{path}.bindTimeoutSeconds", a["bindTimeoutSeconds"],
                            "invalid BindTimeoutSeconds, should not be a negative value"))
    if a["shape"]:
        errs.append(forbidden(f"{path}.shape", "shardsched does not score nodes by storage capacity "
                              "(kube's StorageCapacityScoring, off by default in v1.33)"))
    return errs


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


class VolumeBinding(PluginSpec, PreFilterPlugin, FilterPlugin, ReservePlugin):
    name = "VolumeBinding"
    args_kind = ArgsKind({"bindTimeoutSeconds": Int(600, bits=64), "shape": ANY}, _rules)
    binder_check = staticmethod(check)
    binder_check_always = True
