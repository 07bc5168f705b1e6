"""The scheduling framework: extension points, plugin statuses and the per-cycle state.

Plugins implement only the extension points they need (declared once, as one interface each,
in common/plugins/interface.py); a Profile looks at which methods a plugin class implements
and builds one ordered list per extension point. Filters and scores
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

from common.config.plugin_args import KINDS, resolve
from common.plugins.interface import check_implements, implements  # noqa: F401 (implements: the shard's)
from common.plugins.spec import PluginSpec

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


class Plugin(PluginSpec):
    """Base class of the shard's plugins: the scheduling framework's side of a plugin.

    A plugin's adapter derives from this and from the plugin's class in common/plugins/ (its
    name, its extension points as the interfaces of common/plugins/interface.py, its args,
    checks and hints): `class NodePorts(Plugin, node_ports.NodePorts)`, and implements the
    methods of those interfaces; defining one that misses a point it declares, or implements
    a method none of its points runs, raises TypeError (kube's `var _ framework.FilterPlugin =
    &X{}`). A plugin of a registry of one's own (out of tree) may derive from Plugin alone:
    it runs at the points of the methods it implements.

    `handle` is what the plugin may use of the scheduler (its profile's Handle); `args` the
    plugin's pluginConfig args, read through common.config.plugin_args (every field present, kube's
    defaults filled in); `weight` its score weight in the profile.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.points():
            check_implements(cls, cls.points())

    def __init__(self, handle, args: dict | None = None, weight: int = 1):
        self.handle = handle
        # an out-of-tree plugin (a registry's) reads its args as given
        self.args = resolve(self.name, args) if self.name in KINDS else dict(args or {})
        self.weight = weight
