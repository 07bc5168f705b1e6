"""One scheduling profile: its plugins sorted into the extension points they implement."""
from __future__ import annotations

from .framework import implements
from .handle import Handle
from .registry import build_plugins


class Profile:
    def __init__(self, cfg: dict, sched, default_args: dict | None = None, registry: dict | None = None):
        """`cfg` is one entry of the config's `profiles`; `default_args` the arguments a
        plugin gets where the profile's pluginConfig gives none (plugin name -> args);
        `registry` the plugin classes by name (default: shard.registry.REGISTRY)."""
        self.name = cfg["schedulerName"]
        self.handle = Handle(sched, self)
        self.plugins = build_plugins(cfg, self.handle, default_args or {}, registry)

        def at(point):
            return [p for p in self.plugins if implements(p, point)]

        self.pre_enqueue = at("pre_enqueue")
        sorters = at("less")
        self.queue_sort = sorters[0] if sorters else None
        self.pre_filter = at("pre_filter")
        self.filters = [p for p in self.plugins if implements(p, "filter") or implements(p, "filter_vec")]
        self.post_filter = at("post_filter")
        self.pre_score = at("pre_score")
        self.scorers = [p for p in self.plugins
                        if p.weight and (implements(p, "score") or implements(p, "score_vec"))]
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
