"""What a plugin is to every role: the base of each plugin's class in common/plugins/, and its
queueing hints' shape.

A plugin's class (one module per plugin, common/plugins/<plugin>.py) holds its semantics that
more than the shard needs: its name, the extension points it extends (the interfaces of
common/plugins/interface.py it derives from), its arguments (an ArgsKind: types, kube's
defaults and validation), the binder's re-check of its filter, its queueing hints (kube's
EventsToRegister and QueueingHintFns), and what a failure of its filter means to preemption.
The shard's adapter of the plugin (shard/plugins/<plugin>.py) derives from that class and
adds the scheduling framework's methods; every other module reaches a plugin through the
registry (common/plugins/__init__.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..scheduling.predicates import node_matches, unschedulable_blocks, untolerated_taint
from .args import ArgsKind
from .interface import declared_points


def never(pod, *event) -> bool:
    return False


def always(pod, *event) -> bool:
    return True


@dataclass(frozen=True)
class QueueingHints:
    """Which cluster events could change the plugin's mind about a pod it turned down (kube's
    QueueingHintFn per event): each takes the parked pod, then what describes the event, and
    answers whether to retry the pod. An event a plugin does not list never wakes the pods it
    alone rejected (shard/queueing_hints.py)."""

    node_added: Callable = never          # (pod, node)
    node_updated: Callable = never        # (pod, old, new)
    node_deleted: Callable = never        # (pod,)
    pod_left: Callable = never            # (pod, gone): a pod left its node
    pod_arrived: Callable = never         # (pod, other): a pod bound (or relabelled) elsewhere
    preemption_changed: Callable = never  # (pod,): a PodDisruptionBudget or a nomination changed


def labels_changed(pod, old, new) -> bool:
    return old.labels != new.labels


#: The hints of a plugin whose verdict depends on pods on other nodes (affinity, spread): a
#: node added or gone (a topology domain with it), its labels changed, a pod leaving or
#: arriving anywhere may change its mind.
ACROSS_NODES = QueueingHints(node_added=always, node_updated=labels_changed, node_deleted=always,
                             pod_left=always, pod_arrived=always)


class PluginSpec:
    """Base of a plugin's class. Subclasses set `name` and derive from the interfaces of the
    points they extend; the rest has defaults."""

    #: The registry name (kube's plugin name; common.config.plugin_names has the ones code names).
    name = ""
    #: Its pluginConfig args: types, kube's defaults and validation (none by default).
    args_kind = ArgsKind({})
    #: The binder's re-check of its filter (common.scheduling.checks.Judged -> None or "Plugin: message"),
    #: or None; where it runs among the binder's checks is common.scheduling.checks' order.
    binder_check = None
    #: Whether the binder makes that check whether or not the pod's profile runs the filter
    #: (the volume plugins': switching them off could bind a pod where its volumes cannot go).
    binder_check_always = False
    #: Queueing hints, or None: a pod it turned down is retried on every event (adding a
    #: plugin can cost retries but never strands a pod).
    queueing_hints: QueueingHints | None = None
    #: What a filter failure of this plugin means for preemption: can removing pods help?
    resolvable_by_preemption = False
    #: A PostFilter that looks for victims (preemption): pointless, so skipped, when no pod
    #: has a lower priority than the one that failed.
    finds_victims = False

    @classmethod
    def points(cls) -> tuple:
        """kube's extension points of the plugin (those a profile may switch it on or off at)."""
        return declared_points(cls)

    @classmethod
    def configured_check(cls, args: dict):
        """The binder check for a profile whose args for this plugin are `args` (resolved)."""
        return cls.binder_check


def could_host(pod, node) -> bool:
    """Whether an empty `node` passes the pod's checks that do not depend on other pods: a
    node added wakes a pod a node-local filter turned down only then."""
    return (not unschedulable_blocks(pod, node) and untolerated_taint(node.taints, pod.tolerations) is None
            and node_matches(pod, node) and all(r <= a for r, a in zip(pod.requests, node.allocatable)))


def grown(old, new) -> bool:
    """The node's allocatable grew in some resource."""
    return any(b > a for a, b in zip(old.allocatable, new.allocatable))
