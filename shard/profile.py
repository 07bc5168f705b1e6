"""One scheduling profile: its plugins sorted into the extension points they run at."""
from __future__ import annotations

from common.config.profile_plugins import resolve
from common.config.plugin_names import COSCHEDULING, GANG_SCHEDULING
from common.model.podgroup import KIND, NATIVE_KIND
from common.plugins.interface import METHOD_POINTS, implemented_points

from .framework import implements
from .handle import Handle
from .registry import build_plugins

#: Each plugin method, and kube's extension points that switch it on (from the interfaces,
#: common/plugins/interface.py: a PreFilter runs with its Filter, a PreScore and NormalizeScore
#: with its Score).
POINTS_OF = METHOD_POINTS


def registry_points(registry: dict | None) -> dict:
    """kube's extension points of each plugin class in `registry`, from the methods it
    implements (the known plugins' are common.plugins.POINTS)."""
    return {name: implemented_points(cls) for name, cls in (registry or {}).items()}


class Profile:
    def __init__(self, cfg, sched, args: dict, threshold, registry: dict | None = None):
        """`cfg` is one of the config's `profiles` (a common.config.Profile); `args` every plugin's resolved
        arguments (common.config.plugin_args.profile_args); `threshold` the profile's Threshold;
        `registry` the plugin classes by name (default: shard.registry.REGISTRY, as kube's
        out-of-tree registry)."""
        self.name = cfg.scheduler_name
        self.threshold = threshold
        self.handle = Handle(sched, self)
        uses = resolve(cfg, points=registry_points(registry))
        self.plugins = build_plugins(uses, args, self.handle, registry)
        runs = {u.name: u.points for u in uses}

        def at(*methods):
            return [p for p in self.plugins
                    if any(implements(p, m) and not runs[p.name].isdisjoint(POINTS_OF[m]) for m in methods)]

        self.pre_enqueue = at("pre_enqueue")
        sorters = at("less")
        #: kube takes one QueueSort plugin: one added after the default PrioritySort (as
        #: Coscheduling is) replaces it.
        self.queue_sort = sorters[-1] if sorters else None
        #: The PodGroup kinds whose pods are scheduled as units here: scheduler-plugins' with
        #: Coscheduling on, kube's with GangScheduling on.
        names = {p.name for p in self.plugins}
        self.gang = frozenset(kind for kind, plugin in ((KIND, COSCHEDULING), (NATIVE_KIND, GANG_SCHEDULING))
                              if plugin in names)
        self.pre_filter = at("pre_filter")
        self.filters = at("filter", "filter_vec")
        self.post_filter = at("post_filter")
        self.pre_score = at("pre_score")
        self.scorers = [p for p in at("score", "score_vec") if p.weight]
        #: Whether a scorer favours fuller nodes (NodeResourcesFit's `packs`): config
        #: `packing: auto` prefers the shard's own slice of the nodes for such profiles.
        self.packs = any(getattr(p, "packs", False) for p in self.scorers)
        #: (plugin, has a vectorised score, has NormalizeScore), worked out once, not per cycle.
        self.score_forms = [(p, implements(p, "score_vec"), implements(p, "normalize")) for p in self.scorers]
        #: The filters split into vectorised and per-node forms (see Scheduler._filters).
        self.vec_filters = [p for p in self.filters if implements(p, "filter_vec")]
        self.node_filters = [p for p in self.filters if not implements(p, "filter_vec")]
        self.reserve = at("reserve")
        self.unreserve = at("unreserve")
        self.permit = at("permit")
        self.pre_bind = at("pre_bind")
        self.bind = at("bind")
        self.post_bind = at("post_bind")
        self.add_pod = at("add_pod")
        self.remove_pod = at("remove_pod")

    def less(self, a, b) -> bool:
        return self.queue_sort.less(a, b)

    def gate(self, pod) -> str | None:
        """Why the pod may not enter the scheduling queue (its first PreEnqueue refusal),
        or None."""
        for p in self.pre_enqueue:
            st = p.pre_enqueue(pod)
            if st is not None:
                return st.message()
        return None
