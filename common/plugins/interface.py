"""kube-scheduler's extension points, declared once: one small interface per point, as kube's
framework/interface.go declares them (`FilterPlugin`, `ScorePlugin`, ...).

A plugin's class (common/plugins/<plugin>.py) names the points it extends by the interfaces
it derives from; nothing else lists them. Config validation reads them from there (common/
must not import the shard), and the shard's adapter of the plugin, which derives from that
class, implements their methods: `check_implements` (run when an adapter class is defined, as
kube's `var _ framework.FilterPlugin = &X{}`) refuses an adapter that misses a point it
declares, or implements a method none of its points runs.

Each interface lists the methods that run at its point. Some run at two: a PreFilter (and
the PreFilter extensions AddPod, RemovePod) runs with its plugin's Filter, a PreScore and a
NormalizeScore with its Score (PAIRED_POINTS), whether or not kube's plugin of that name has
the PreFilter (several shard plugins have one kube's lack, to skip pods early); a PreFilter
without a Filter (Coscheduling's) runs on its own point.
"""
from __future__ import annotations


def _stub(name: str, doc: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not implement {name}")
    method.__name__ = name
    method.__doc__ = doc
    method.stub = True  # `implements` tells a stub from an implementation by this
    return method


#: Every method a plugin may implement, with what it answers (the interfaces below take theirs
#: from here, so each is stubbed once).
_METHODS = {
    "pre_enqueue": "(pod) -> None (the pod may be queued) or Status (it waits, out of the queue)",
    "less": "(a, b) -> bool: queue order",
    "pre_filter": "(state, pod) -> None / Status / PreFilterResult",
    "add_pod": "(state, pod, added, info) -> None: PreFilter extension, a pod added to the node",
    "remove_pod": "(state, pod, removed, info) -> None: PreFilter extension, a pod taken off the node",
    "filter": "(state, pod, info) -> None when the node passes, else Status (per node)",
    "filter_vec": "(state, pod, table, rows) -> pass mask over `rows` (vectorised; `reasons_vec` "
                  "optionally explains failures)",
    "post_filter": "(state, pod, result) -> PostFilterResult (`result`: the failed cycle's ScheduleResult)",
    "pre_score": "(state, pod, infos) -> None or Status(SKIP)",
    "score": "(state, pod, info) -> int (per node)",
    "score_vec": "(state, pod, table, rows) -> ndarray of scores over rows (vectorised)",
    "normalize": "(state, pod, scores) -> None: NormalizeScore, in place over the candidates' scores",
    "reserve": "(state, pod, node_name) -> None or Status",
    "unreserve": "(state, pod, node_name) -> None",
    "permit": "(state, pod, node_name) -> None (allow), Status(UNSCHEDULABLE) (deny) or waiting.Wait",
    "pre_bind": "(state, pod, node_name) -> None or Status",
    "bind": "(state, pod, node_name) -> None or Status",
    "post_bind": "(state, pod, node_name) -> None",
}


class ExtensionPoint:
    """An extension point's interface: `point` is kube's name of it, `methods` the plugin
    methods that run there (implementing any one of them implements the point)."""

    point = ""
    methods: tuple = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "point" in cls.__dict__:  # an interface (not a plugin deriving from one): stub its methods
            for m in cls.methods:
                setattr(cls, m, _stub(m, _METHODS[m]))


class PreEnqueuePlugin(ExtensionPoint):
    point, methods = "preEnqueue", ("pre_enqueue",)


class QueueSortPlugin(ExtensionPoint):
    point, methods = "queueSort", ("less",)


class PreFilterPlugin(ExtensionPoint):
    point, methods = "preFilter", ("pre_filter", "add_pod", "remove_pod")


class FilterPlugin(ExtensionPoint):
    point, methods = "filter", ("filter", "filter_vec", "pre_filter", "add_pod", "remove_pod")


class PostFilterPlugin(ExtensionPoint):
    point, methods = "postFilter", ("post_filter",)


class PreScorePlugin(ExtensionPoint):
    point, methods = "preScore", ("pre_score",)


class ScorePlugin(ExtensionPoint):
    point, methods = "score", ("score", "score_vec", "normalize", "pre_score")


class ReservePlugin(ExtensionPoint):
    point, methods = "reserve", ("reserve", "unreserve")


class PermitPlugin(ExtensionPoint):
    point, methods = "permit", ("permit",)


class PreBindPlugin(ExtensionPoint):
    point, methods = "preBind", ("pre_bind",)


class BindPlugin(ExtensionPoint):
    point, methods = "bind", ("bind",)


class PostBindPlugin(ExtensionPoint):
    point, methods = "postBind", ("post_bind",)


#: The interfaces, in the order a pod meets their points.
INTERFACES = (PreEnqueuePlugin, QueueSortPlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, PreScorePlugin,
              ScorePlugin, ReservePlugin, PermitPlugin, PreBindPlugin, BindPlugin, PostBindPlugin)
#: kube-scheduler's extension points, in the order a pod meets them.
EXTENSION_POINTS = tuple(i.point for i in INTERFACES)
#: A plugin's PreFilter and PreScore prepare its Filter and Score: shardsched runs each with
#: its main point, so a profile switches the pair on or off together.
PAIRED_POINTS = {"preFilter": "filter", "preScore": "score"}
#: Each plugin method -> kube's extension points that switch it on.
METHOD_POINTS = {m: tuple(i.point for i in INTERFACES if m in i.methods) for m in _METHODS}


def declared_points(cls) -> tuple:
    """kube's extension points a plugin class declares (the interfaces it derives from), in
    the order a pod meets them."""
    return tuple(i.point for i in INTERFACES if issubclass(cls, i))


def implements(cls, method: str) -> bool:
    """Whether the class (or an instance's class) implements `method` (not just its stub)."""
    if not isinstance(cls, type):
        cls = type(cls)
    f = getattr(cls, method, None)
    return f is not None and not getattr(f, "stub", False)


def implemented_points(cls) -> tuple:
    """kube's extension points of the methods a class implements, sorted (a plugin that
    derives from no interface, out of tree, runs at these)."""
    return tuple(sorted({p for m, pts in METHOD_POINTS.items() if implements(cls, m) for p in pts}))


def check_implements(cls, points: tuple) -> None:
    """Raise TypeError unless the class implements the extension points `points` (a pre point
    may be implemented inside its main one) and every method it implements runs at one."""
    declared = set(points)
    methods = [m for m in METHOD_POINTS if implements(cls, m)]
    unreachable = [m for m in methods if declared.isdisjoint(METHOD_POINTS[m])]
    if unreachable:
        raise TypeError(f"{cls.__name__} implements {', '.join(unreachable)}, which run at none of its extension "
                        f"points {sorted(declared)}: derive from the interface (common/plugins/interface.py)")
    main = {PAIRED_POINTS.get(p, p) for p in declared}
    implemented = {PAIRED_POINTS.get(p, p) for m in methods for p in METHOD_POINTS[m]}
    if not main <= implemented:
        raise TypeError(f"{cls.__name__} declares {sorted(main - implemented)} but implements none of its methods")
