"""Which plugins a profile runs, with which score weight, at which extension points.

A profile's `plugins` start from the default plugins (common.config.plugin_names): `disabled`
entries without `extensionPoints` remove a plugin (`*`: every default), `enabled` entries add
one or set its weight (in place, keeping the default order), and `disabled` entries with
`extensionPoints` switch a plugin (`*`: every plugin not in `enabled`) off at those points
only, as kube's per-extension-point `disabled` lists do (a plugin's preFilter and preScore go
off with its filter and score). The shard builds its plugins from this, the binder
re-checks exactly the filters a pod's profile runs, and config validation rejects a profile
no shard could run, each with the path of the entry at fault.
"""
from __future__ import annotations

from dataclasses import dataclass

from .plugin_names import COSCHEDULING, DEFAULT_PLUGINS
from ..plugins import EXTENSION_POINTS, KNOWN, PAIRED_POINTS, POINTS
from ..validation import duplicate, invalid, not_supported, required


@dataclass(frozen=True)
class PluginUse:
    name: str
    weight: int
    #: kube's names of the extension points it runs at (a subset of common.plugins.POINTS[name])
    points: frozenset

    def runs(self, point: str) -> bool:
        return point in self.points


def resolve(profile, path: str = "profile", points: dict | None = None) -> list[PluginUse]:
    """The profile's plugins in order (`profile` is one of the config's `profiles`, a
    common.config.Profile; `path` its path); raises FieldError when no shard could run it. `points`
    gives the extension points of plugins beyond the known ones (a shard's out-of-tree
    registry)."""
    points_of = POINTS if not points else {**points, **POINTS}
    plugins = profile.plugins
    removed, off = set(), {}
    for j, entry in enumerate(plugins.disabled):
        points = entry.extension_points
        for k, point in enumerate(points):
            if point not in EXTENSION_POINTS:
                raise not_supported(f"{path}.plugins.disabled[{j}].extensionPoints[{k}]", point, EXTENSION_POINTS)
        if points:
            off.setdefault(entry.name, {}).update({p: f"{path}.plugins.disabled[{j}]" for p in points})
        else:
            removed.add(entry.name)
    order = [] if "*" in removed else [n for n, _ in DEFAULT_PLUGINS if n not in removed]
    weights = {n: w for n, w in DEFAULT_PLUGINS if n in order}
    seen = set()
    for j, entry in enumerate(plugins.enabled):
        name = entry.name
        if name in seen:
            raise duplicate(f"{path}.plugins.enabled[{j}]", name)
        seen.add(name)
        if name not in weights:
            order.append(name)
        weights[name] = entry.weight
    uses = []
    for name in order:
        switched_off = {**({} if name in seen else off.get("*", {})), **off.get(name, {})}
        _check_pairs(name, points_of[name], switched_off)
        runs = frozenset(p for p in points_of[name] if p not in switched_off
                         and PAIRED_POINTS.get(p) not in switched_off)
        if runs:
            uses.append(PluginUse(name, weights[name], runs))
    _check_required_points(uses, path)
    return uses


def _check_pairs(name: str, points: tuple, switched_off: dict) -> None:
    """A plugin's PreFilter and PreScore prepare its Filter and Score: they go off with them,
    and cannot go off alone (kube's plugins then fail every pod)."""
    for pre, main in PAIRED_POINTS.items():
        if pre in points and pre in switched_off and main not in switched_off:
            raise invalid(switched_off[pre], name, f"{name}'s {main} needs its {pre}: switch {main} off too")


def _check_required_points(uses: list[PluginUse], path: str) -> None:
    """kube's framework needs exactly one queueSort plugin and at least one bind plugin.
    Coscheduling's QueueSort replaces PrioritySort's (scheduler-plugins has users switch
    PrioritySort off; shardsched runs both by default and lets Coscheduling's win)."""
    for point, rule in (("queueSort", "exactly one"), ("bind", "at least one")):
        at = [u.name for u in uses if u.runs(point)]
        if point == "queueSort" and COSCHEDULING in at:
            at = [COSCHEDULING]
        if not at or (rule == "exactly one" and len(at) > 1):
            names = ", ".join(n for n in sorted(KNOWN) if point in POINTS[n])
            raise required(f"{path}.plugins", f"{rule} {point} plugin ({names}) must run, got {len(at)}")


def filters(profile) -> frozenset:
    """Names of the plugins whose Filter the profile runs (what the binder re-checks)."""
    return frozenset(u.name for u in resolve(profile) if u.runs("filter"))


def gang_scheduler_names(cfg, plugin: str = COSCHEDULING) -> frozenset:
    """schedulerNames whose profile schedules PodGroups all or nothing with `plugin`
    (Coscheduling: scheduler-plugins' PodGroups; GangScheduling: kube's)."""
    return frozenset(p.scheduler_name for p in cfg.profiles
                     if any(u.name == plugin for u in resolve(p)))
