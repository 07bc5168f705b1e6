"""The scheduling framework: extension points, plugin statuses and the per-cycle state.

Plugins implement only the extension points they need; a Profile looks at which methods a
plugin class overrides and builds one ordered list per extension point. Filters and scores
may come in two forms:

* a vectorised form (`filter_vec`, `score_vec`) over the node-table rows of a window (a
  slice or an index array), which the scheduler runs first, one numpy pass per plugin;
* a per-node form (`filter`, `score`) over one NodeInfo, run in Python only on the rows that
  survived the vectorised filters, and everywhere when vectorised filters are switched off.

A plugin that has a vectorised filter is not asked for the per-node one in the same scan;
the per-node form serves node-by-node checks (preemption's dry runs, nominated pods).
Plugins reach the rest of the scheduler only through their Handle (see handle.py).
"""
from __future__ import annotations

from common.plugin_args import KINDS, resolve

SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
#: Unschedulable and preemption cannot help (node affinity, taints, unschedulable node...).
UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"
SKIP = "Skip"


class Status:
    __slots__ = ("code", "reasons", "plugin")

    def __init__(self, code: str, *reasons: str, plugin: str = ""):
        self.code = code
        self.reasons = reasons
        self.plugin = plugin

    def message(self) -> str:
        return ", ".join(self.reasons)

    def __repr__(self):
        return f"Status({self.code}, {self.reasons!r}, {self.plugin})"


def unschedulable(*reasons: str) -> Status:
    return Status(UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(UNRESOLVABLE, *reasons)


class CycleState(dict):
    """Per-cycle scratch space shared by a pod's plugins (keyed by plugin name).

    `skip_filter` / `skip_score` hold plugins whose PreFilter / PreScore said Skip, so the
    scheduler does not call them for this pod at all.
    """

    def __init__(self):
        super().__init__()
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def clone(self) -> "CycleState":
        c = CycleState()
        for k, v in self.items():
            c[k] = v.clone() if hasattr(v, "clone") else v
        c.skip_filter = set(self.skip_filter)
        c.skip_score = set(self.skip_score)
        return c


class PreFilterResult:
    """A PreFilter may narrow the candidates to a set of node names (unit locating, nodeName).

    A `hint` only saves the scan work (kube-scheduler's plugin has no such PreFilter): the
    nodes it leaves out are explained by the plugin's own filter, and it never takes part in
    kube's "didn't satisfy plugin(s)" accounting."""

    __slots__ = ("node_names", "hint")

    def __init__(self, node_names, hint: bool = False):
        self.node_names = frozenset(node_names)
        self.hint = hint


class PostFilterResult:
    """What a PostFilter (preemption) found: a node and the pods to evict there, or why not.

    `pruned` counts the nodes it skipped without a dry run (a metric).
    """

    __slots__ = ("node", "victims", "status", "pruned")

    def __init__(self):
        self.node = None
        self.victims: list = []
        self.status: Status | None = None
        self.pruned = 0


class Plugin:
    """Base class: subclasses override the extension points they take part in.

    `name` is the registry name (common.plugin_names); `handle` what the plugin may use of
    the scheduler (its profile's Handle); `args` the plugin's pluginConfig args, read through
    common.plugin_args (every field present, kube's defaults filled in); `weight` its score
    weight in the profile.
    """

    name = ""
    #: What a filter failure of this plugin means for preemption: can removing pods help?
    resolvable_by_preemption = False
    #: A PostFilter that looks for victims (preemption): pointless, so skipped, when no pod
    #: has a lower priority than the one that failed.
    finds_victims = False

    def __init__(self, handle, args: dict | None = None, weight: int = 1):
        self.handle = handle
        # an out-of-tree plugin (a registry's) reads its args as given
        self.args = resolve(self.name, args) if self.name in KINDS else dict(args or {})
        self.weight = weight

    # PreEnqueue -> None (the pod may be queued) or Status (it waits, out of the queue)
    def pre_enqueue(self, pod): raise NotImplementedError
    # QueueSort
    def less(self, a, b) -> bool: raise NotImplementedError
    # PreFilter: returns None / Status / PreFilterResult
    def pre_filter(self, state, pod): raise NotImplementedError
    def add_pod(self, state, pod, added, info) -> None: raise NotImplementedError
    def remove_pod(self, state, pod, removed, info) -> None: raise NotImplementedError
    # Filter (per node) -> None when the node passes, else Status
    def filter(self, state, pod, info): raise NotImplementedError
    # Filter (vectorised) -> pass mask over `rows`; `reasons_vec` (optional) explains failures
    def filter_vec(self, state, pod, table, rows): raise NotImplementedError
    # PostFilter -> PostFilterResult (`result` is the failed cycle's ScheduleResult)
    def post_filter(self, state, pod, result): raise NotImplementedError
    # PreScore -> None or Status(SKIP)
    def pre_score(self, state, pod, infos): raise NotImplementedError
    # Score (per node) -> int, (vectorised) -> ndarray of scores over rows
    def score(self, state, pod, info) -> int: raise NotImplementedError
    def score_vec(self, state, pod, table, rows): raise NotImplementedError
    # NormalizeScore: in place over an ndarray aligned with the candidates
    def normalize(self, state, pod, scores) -> None: raise NotImplementedError
    # Reserve / Unreserve
    def reserve(self, state, pod, node_name: str): raise NotImplementedError
    def unreserve(self, state, pod, node_name: str) -> None: raise NotImplementedError
    # Permit -> None (allow), Status(UNSCHEDULABLE) (deny) or waiting.Wait(timeout seconds)
    def permit(self, state, pod, node_name: str): raise NotImplementedError
    # PreBind / Bind / PostBind
    def pre_bind(self, state, pod, node_name: str): raise NotImplementedError
    def bind(self, state, pod, node_name: str): raise NotImplementedError
    def post_bind(self, state, pod, node_name: str) -> None: raise NotImplementedError


def implements(plugin: Plugin, point: str) -> bool:
    return getattr(type(plugin), point) is not getattr(Plugin, point)
