"""The configuration file: one YAML document, `kind: ShardschedConfiguration`, or a
kube-scheduler `KubeSchedulerConfiguration` (common.config.kube_config maps it onto this one).

The schema below is the single source of the defaults, the validation rules and the field
documentation (`shardsched config defaults` prints it, the README lists it). Unknown fields,
wrong types and numbers out of range or not finite are rejected with the dotted path of the
field, so a typo never silently falls back to a default. Validation also runs every check a
process makes when it starts (profiles through common.config.profile_plugins, plugin arguments
through common.config.plugin_args), so a file that validates never stops a process.

Processes receive the result typed and immutable: `Config`, frozen dataclasses built from
the schema after validation (`cfg.shards.base_port` is the file's shards.basePort), never
the raw document; `Config.to_dict()` gives that back (`dump`, `config convert`).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any

import yaml

from . import extenders, kube_config, plugin_args, profile_plugins
from .. import plugins
from ..model import yaml_input
from ..runtime import identity
from ..validation import FieldError, qualified_name_errors

API_VERSION = "shardsched.io/v1alpha1"
KIND = "ShardschedConfiguration"


class ConfigError(ValueError):
    """A configuration's errors: `errors` lists every (path, message) found, as kube-scheduler
    reports all of a file's errors at once; `path` and `message` are the first one's. Printed
    one error a line, each `config: <path>: <message>`."""

    def __init__(self, path: str, message: str, unreadable: bool = False,
                 errors: list[tuple[str, str]] | None = None):
        self.errors = errors or [(path, message)]
        super().__init__("\n".join(f"config: {p}: {m}" for p, m in self.errors))
        self.path = path
        self.message = message
        #: The file could not be read or parsed at all (a usage error), as opposed to a
        #: readable file with invalid content (a rejected object).
        self.unreadable = unreadable

    @classmethod
    def of(cls, errors: list[tuple[str, str]]) -> "ConfigError":
        """One error standing for all of `errors` (non-empty)."""
        return cls(*errors[0], errors=list(errors))


@dataclass
class Leaf:
    """One scalar field: its type(s), default, allowed values and the sentence documenting it."""

    types: tuple
    default: Any
    doc: str
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None
    nullable: bool = False


@dataclass
class ListOf:
    """A list whose items follow `item` (a schema dict); `default` is the default list."""

    item: dict
    default: list
    doc: str
    required_keys: tuple = dc_field(default_factory=tuple)
    min_items: int = 0


#: Largest integer a field takes unless it says otherwise (kube's int32 fields).
INT_MAX = 2**31 - 1
#: Longest time in seconds a field takes unless it says otherwise: a day.
SECONDS_MAX = 86400


def _i(default, doc, minimum=0, maximum=INT_MAX, nullable=False):
    return Leaf((int,), default, doc, minimum=minimum, maximum=maximum, nullable=nullable)


def _f(default, doc, minimum=0.0, maximum=SECONDS_MAX):
    """A number (of seconds unless `maximum` says otherwise); always finite."""
    return Leaf((int, float), default, doc, minimum=minimum, maximum=maximum)


def _s(default, doc, choices=(), nullable=False):
    return Leaf((str,), default, doc, choices=choices, nullable=nullable)


def _b(default, doc):
    return Leaf((bool,), default, doc)


PLUGIN_ENTRY = {
    "name": _s("", "Plugin name (one of the registered plugins)."),
    "weight": _i(1, "Score weight; 0 disables its score but keeps its filter.", minimum=0, maximum=100),
}

DISABLED_ENTRY = {
    "name": _s("", "Plugin name, or '*' for all defaults."),
    "extensionPoints": Leaf((list,), [], "Switch the plugin (or with '*' every plugin not enabled) off "
                            "at these extension points only (kube's names: preFilter, filter, postFilter, preScore, "
                            "score, ...); [] = remove it."),
}

PLUGIN_CONFIG_ENTRY = {
    "name": _s("", "Plugin the arguments are for."),
    "args": Leaf((dict,), {}, "Plugin arguments, as kube-scheduler's pluginConfig args."),
}

PROFILE = {
    "schedulerName": _s("shardsched", "Pods whose spec.schedulerName equals this use the profile."),
    "percentageOfNodesToScore": _i(None, "This profile's threshold: mode percentage with this percent "
                                   "(0 = kube's rule); null = the threshold section.", maximum=100,
                                   nullable=True),
    "plugins": {
        "enabled": ListOf(PLUGIN_ENTRY, [], "Plugins added to (or re-weighted in) the defaults.", ("name",)),
        "disabled": ListOf(DISABLED_ENTRY, [], "Default plugins switched off.", ("name",)),
    },
    "pluginConfig": ListOf(PLUGIN_CONFIG_ENTRY, [], "Per-plugin arguments.", ("name",)),
}

EXTENDER_TLS = {
    "insecure": _b(False, "Do not verify the extender's certificate."),
    "serverName": _s("", "Name the extender's certificate must carry (\"\" = the urlPrefix's host)."),
    "certFile": _s("", "Client certificate (PEM file) presented to the extender."),
    "keyFile": _s("", "Its private key (PEM file)."),
    "caFile": _s("", "CA certificate (PEM file) the extender's certificate must be signed by."),
    "certData": _s("", "certFile's content instead, base64 (kube's []byte); wins over certFile."),
    "keyData": _s("", "keyFile's content instead, base64; wins over keyFile."),
    "caData": _s("", "caFile's content instead, base64; wins over caFile."),
}

MANAGED_RESOURCE = {
    "name": _s("", "Extended resource name (example.com/gpu): pods requesting it (requests or limits, "
               "containers or init containers) are the ones the extender is called for."),
    "ignoredByScheduler": _b(False, "NodeResourcesFit leaves the resource out (in shards and binders): "
                             "these names replace its ignoredResources in every profile, as in kube."),
}

EXTENDER = {
    "urlPrefix": _s("", "The extender's URL; a verb is appended after a '/' (http://host:port/prefix)."),
    "filterVerb": _s("", "Filter: called after the shard's Filter plugins with the feasible nodes; "
                     "\"\" = not called."),
    "preemptVerb": _s("", "Preempt: DefaultPreemption's candidates and victims, as kube sends them."),
    "prioritizeVerb": _s("", "Prioritize: scores 0-10 times weight times 10 added to each node's total."),
    "weight": _i(0, "Multiplier of the prioritize scores; > 0 when prioritizeVerb is set.",
                 minimum=-2**63, maximum=2**63 - 1),
    "bindVerb": _s("", "Bind: the binder, after its checks, binds the extender's pods through it "
                   "instead of writing the binding (one extender at most)."),
    "enableHTTPS": _b(False, "Use TLS; without caFile/caData the certificate is not verified (as kube)."),
    "tlsConfig": EXTENDER_TLS,
    "httpTimeoutSeconds": _f(30, "Timeout of each call. A filter, preempt or bind timeout fails the pod's "
                             "attempt (unless ignorable); a prioritize failure only drops its scores.",
                             minimum=0.001, maximum=3600),
    "nodeCacheCapable": _b(False, "Send node names only (the extender caches nodes) instead of whole Nodes."),
    "managedResources": ListOf(MANAGED_RESOURCE, [], "Call the extender only for pods requesting one of "
                               "these; [] = every pod.", ("name",)),
    "ignorable": _b(False, "Errors and timeouts skip the extender instead of failing the pod's attempt."),
}

SCHEMA = {
    "apiVersion": _s(API_VERSION, "Always shardsched.io/v1alpha1.", choices=(API_VERSION,)),
    "kind": _s(KIND, "Always ShardschedConfiguration.", choices=(KIND,)),
    "store": {
        "url": _s(None, "Cluster store: redis://HOST:PORT/DB, memory:// or kube:// (kubeconfig). "
                  "null: kube:// when store.kubeconfig is set, else `up` starts an embedded redis-server on "
                  "a free loopback port.", nullable=True),
        "kubeconfig": _s(None, "Kubeconfig file for kube:// (and, without store.url, the store itself: its "
                         "API server); null uses in-cluster config or ~/.kube/config.", nullable=True),
        "requestTimeoutSeconds": _f(10, "Timeout of every store request; a dead connection never hangs.",
                                    minimum=0.1, maximum=3600),
        "qps": _f(0, "kube:// only: requests per second each process sends the API server at most "
                  "(client-go's token bucket; 0 = no limit). Watches are not counted.", maximum=1e6),
        "burst": _i(0, "kube:// only: requests allowed at once above qps (0 = qps, rounded up).",
                    maximum=1_000_000),
        "watchLingerSeconds": _f(0.005, "How long a process waiting for store events lets them gather "
                                 "between two reads (a paced rate then reads several per poll instead of "
                                 "waking for each; an event after a quiet spell is read at once); "
                                 "0 = read each as it comes.", maximum=1),
        "historySeconds": _f(150, "Embedded or redis:// store: how long its event stream keeps events. A "
                             "process lists, then watches from the list's snapshot: the window must "
                             "outlast its slowest list (a million running pods: over a minute on two "
                             "cores), or it relists again and again. The store holds the window's "
                             "events in memory, each with its object.",
                             minimum=1, maximum=86400),
    },
    "dispatcher": {
        "host": _s("127.0.0.1", "Address the dispatcher listens on."),
        "port": _i(7100, "gRPC port of the dispatcher (0 = any free port).", maximum=65535),
        "metricsPort": _i(9100, "Prometheus metrics port of the dispatcher (0 = any free port, null = off).",
                          maximum=65535, nullable=True),
        "alsoDefaultScheduler": _b(False, "Also take pods whose schedulerName is default-scheduler."),
        "batchSize": _i(256, "Pods per Dispatch message.", minimum=1),
        "redispatchAfterSeconds": _f(30, "Re-dispatch a pod still unbound this long after dispatch.",
                                     minimum=1),
        "shardTimeoutSeconds": _f(5, "A shard whose lease is older than this is considered dead.",
                                  minimum=0.5, maximum=3600),
    },
    "leaderElection": {
        "leaderElect": _b(True, "Dispatcher replicas elect a leader through a Lease; only the leader dispatches."),
        "leaseDurationSeconds": _f(15, "A standby takes the Lease over once it was not renewed for this long.",
                                   minimum=0.1, maximum=3600),
        "renewDeadlineSeconds": _f(10, "The leader stops leading when it could not renew the Lease for this long.",
                                   minimum=0.1, maximum=3600),
        "retryPeriodSeconds": _f(2, "Time between attempts to acquire or renew the Lease.", minimum=0.1,
                                 maximum=3600),
        "resourceName": _s("shardsched-dispatcher", "Name of the dispatcher's Lease."),
        "identity": _s("{hostname}_{role}-{id}", "This replica's holder identity in the Lease, the same across its "
                       "restarts so that a restarted leader takes it back at once: `{hostname}` (a pod's name), "
                       "`{role}` and `{id}` (its --id) are filled in. Two live replicas must not share one."),
    },
    "shards": {
        "count": _i(2, "Scheduler shard processes started by `shardsched up`. Each follows every pod's events "
                     "whichever shard schedules it, so every extra shard costs CPU on every pod: where the API server "
                     "shares two cores with the scheduler, one shard is cheaper and faster (README: How many "
                     "shards).", minimum=1),
        "host": _s("127.0.0.1", "Address the shards listen on."),
        "basePort": _i(7200, "gRPC port of shard 0; shard i listens on basePort + i (0 = any free port).", maximum=65535),
        "metricsBasePort": _i(9200, "Metrics port of shard 0; shard i uses metricsBasePort + i (0 = any free "
                              "port, null = off).", maximum=65535, nullable=True),
        "assumeTtlSeconds": _f(30, "Forget an assumed pod if neither its binding nor a rejection "
                               "arrives within this time.", minimum=1),
        "decisionTimeoutSeconds": _f(20, "A decision a binder has not answered within this time is withdrawn "
                                     "and decided again for the partition's current holder (a binder stuck "
                                     "without dying; a frozen one loses its stream to keepalive sooner); a "
                                     "pod with claims also gets its profile's VolumeBinding "
                                     "bindTimeoutSeconds, which the binder may wait for them to bind.",
                                     minimum=1),
        "podInitialBackoffSeconds": _f(1, "First backoff of a pod that failed to schedule.", minimum=0),
        "podMaxBackoffSeconds": _f(10, "Longest backoff (doubles each attempt up to this).", minimum=0),
        "unschedulableMaxSeconds": _f(300, "An unschedulable pod is retried at least this often.",
                                      minimum=1),
        "qualitySamplePercent": _f(0, "Percent of successful cycles whose choice is graded off the "
                                   "clock: every feasible node scored for the pod, the chosen node's "
                                   "regret counted in the shard's Status (bench --quality; 0 = off).",
                                   minimum=0, maximum=100),
        # Each optimisation can be switched off, for ablations and to rule it out when
        # debugging; placements stay kube-scheduler's either way.
        "optimizations": {
            "incrementalSnapshot": _b(True, "Update the snapshot from what changed (GenerationStore); "
                                      "false copies the whole cache every cycle."),
            "swapDeleteNodeList": _b(True, "Keep nodes in swap-delete rows; false keeps kube-scheduler's "
                                     "zone-interleaved order, rebuilt whenever nodes come or go."),
            "vectorisedFilters": _b(True, "Run the built-in filters over numpy columns first; false "
                                    "runs every filter node by node."),
            "schedulingContext": _b(True, "On retry, skip nodes unchanged since a pod's last failed "
                                    "attempt (pods without cross-node constraints)."),
            "unitLocating": _b(True, "Send pods pinned to one node straight to that node's checks."),
        },
    },
    "binders": {
        "count": _i(1, "Partitions of the nodes, each committed by the one binder holding its lease; "
                    "`shardsched up` starts this many binder processes.", minimum=1),
        "partitionLabel": _s("topology.kubernetes.io/zone", "Nodes with the same value of this label share "
                             "a partition (nodes without it go by their name), so constraints over "
                             "it or the hostname are checked by one binder. \"\" partitions by name."),
        "leaseDurationSeconds": _f(5, "A partition whose binder stops renewing its lease is taken over "
                                   "by another binder after this long.", minimum=0.5, maximum=3600),
        "maxInFlight": _i(128, "Store requests a binder keeps in flight for its commits (and the size "
                          "of its connection pool).", minimum=1, maximum=4096),
        "crossNodeChecks": _b(True, "Re-check inter-pod affinity, anti-affinity and topology spread "
                              "of every decision; false only to measure or debug (conflicts between "
                              "shards then go through)."),
        "host": _s("127.0.0.1", "Address the binders listen on."),
        "basePort": _i(7300, "gRPC port of binder 0; binder i listens on basePort + i (0 = any free port).", maximum=65535),
        "metricsBasePort": _i(9300, "Metrics port of binder 0; binder i uses metricsBasePort + i (0 = any free "
                              "port, null = off).", maximum=65535, nullable=True),
    },
    "threshold": {
        "mode": _s("adaptive", "How many feasible nodes a cycle looks for: adaptive, kube "
                   "(percentageOfNodesToScore's rule), percentage, or all.",
                   choices=("adaptive", "kube", "percentage", "all")),
        "percentage": _i(0, "For mode percentage: percent of nodes to find feasible (0 = kube rule).",
                         maximum=100),
        "minFeasibleNodes": _i(100, "Never stop a search before this many feasible nodes (or all nodes).",
                               minimum=1),
        "maxFeasibleNodes": _i(300, "adaptive: target number of feasible nodes with no rejections and "
                               "an empty queue.", minimum=1),
        "rejectionDecay": _f(1.0, "adaptive: how fast the target shrinks with the share of nodes "
                             "rejected so far in the cycle (0 = not at all).", minimum=0, maximum=100),
        "queueDecay": _f(0.5, "adaptive: how fast the target shrinks as the active queue grows "
                         "(per decade of queued pods; 0 = not at all).", minimum=0, maximum=100),
        "growth": _b(False, "Quality-first profiles: grow the target with rejections and queue "
                     "length instead of shrinking it (capped at all nodes)."),
    },
    "subClusters": {
        "label": _s("", "Node label naming a node's pool (e.g. shardsched.io/pool); \"\" = off. A pod "
                    "belongs to the pool its nodeSelector or every term of its required node affinity "
                    "pins this label to (In, one value), else to the cluster-wide pool. Each shard "
                    "keeps an active queue per pool, served in turn, and a pool's pod is filtered "
                    "only against the pool's nodes."),
        "shardsPerPool": _i(0, "Shards each named pool's pods are dispatched to (chosen from the "
                            "live shards by the pool's name, so a dead shard's pools move to "
                            "others); the cluster-wide pool goes to every shard; 0 = every shard.",
                            maximum=1024),
    },
    "packing": {
        "mode": _s("auto", "Conflict-aware packing: each shard prefers the nodes of its own slice (a "
                   "stable hash of the node's name modulo shards.count) among those scored within "
                   "tolerance of the best, so shards that pack do not race for the same nodes. auto: "
                   "profiles whose NodeResourcesFit packs (MostAllocated, or a RequestedToCapacityRatio "
                   "shape that scores fuller nodes higher); always: every profile; off.",
                   choices=("auto", "always", "off")),
        "tolerance": _i(100, "Percent of the best score a node of the shard's own slice may fall "
                        "short by and still be chosen over the best (100: its own slice whenever "
                        "one of its nodes is feasible; 0: only among nodes tied with the best).",
                        maximum=100),
    },
    "preemption": {
        "minCandidateNodesPercentage": _i(10, "Search at least this percent of nodes for victims.",
                                          maximum=100),
        "minCandidateNodesAbsolute": _i(100, "...and at least this many nodes.", minimum=0),
        "pruning": _b(True, "Skip nodes where even evicting every lower-priority pod cannot free "
                      "enough (priority prefix-sum splay trees)."),
    },
    "security": {
        "mode": _s("none", "How the processes authenticate each other on every gRPC link: mtls "
                   "(certificates signed by caFile), token (the shared secret in tokenFile; "
                   "unencrypted, for loopback), or none (anyone who reaches a port is trusted).",
                   choices=("none", "token", "mtls")),
        "tokenFile": _s(None, "token: file holding the shared secret.", nullable=True),
        "caFile": _s(None, "mtls: CA certificate (PEM) every peer's certificate must be signed by.",
                     nullable=True),
        "certFile": _s(None, "mtls: this process's certificate (PEM), for serverName.", nullable=True),
        "keyFile": _s(None, "mtls: this process's private key (PEM).", nullable=True),
        "serverName": _s("shardsched", "mtls: the name every component certificate carries and "
                         "clients verify (pod addresses change, so certificates do not name them)."),
    },
    "health": {
        "livenessTimeoutSeconds": _f(30, "/livez fails when one of a process's loops (main loop, watch, "
                                     "leases, partitions, commit feeder) has not come round for this long.",
                                     minimum=1),
    },
    "events": {
        "qps": _f(50, "PodScheduled conditions and Events one process writes per second, at most "
                  "(a background writer; scheduling never waits for it).", minimum=0.1),
        "burst": _i(100, "Writes allowed at once after a quiet period.", minimum=1),
    },
    "tracing": {
        "enabled": _b(False, "Record each pod's trip (dispatch, scheduling cycles, commit) as an "
                      "OpenTelemetry trace (needs the `tracing` extra: opentelemetry-sdk)."),
        "exporter": _s("otlp", "Where spans go: otlp (OTLP over HTTP to endpoint) or file (one JSON span "
                       "per line appended to file).", choices=("otlp", "file")),
        "endpoint": _s("http://localhost:4318/v1/traces", "otlp: the collector's OTLP/HTTP traces URL."),
        "file": _s("", "file: the file every process appends its spans to."),
        "samplingRatePerMillion": _i(10000, "Pods traced per million, decided by the dispatcher "
                                     "(kube's TracingConfiguration name); the shard and binder follow it.",
                                     maximum=1000000),
    },
    "profiles": ListOf(PROFILE, [{"schedulerName": "shardsched"}], "Scheduling profiles.",
                       ("schedulerName",), min_items=1),
    "extenders": ListOf(EXTENDER, [], "Scheduler extenders (kube-scheduler's `extenders`), called by the "
                        "shards for every profile, in order; the one with bindVerb by the binders.",
                        ("urlPrefix",)),
}


# --- the typed configuration ------------------------------------------------------------------
#
# Processes receive the validated configuration as the frozen dataclasses below, one per
# mapping of the schema, with the schema's fields as snake_case attributes (`cfg.shards.
# base_port` is the file's shards.basePort) and lists as tuples. The classes only name the
# attributes and their types: defaults, documentation and validation stay in SCHEMA, and
# `_section` checks at import that each class has exactly its schema mapping's fields, in
# order. `validate`/`load`/`defaults` build them; `to_dict()` gives the file's document back.

def attribute_name(key: str) -> str:
    """A schema field's attribute on the typed configuration: camelCase -> snake_case."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


#: The typed class of each schema mapping, by the mapping's id.
_CLASS_OF: dict[int, type] = {}


class Section:
    """Base of the typed configuration objects (frozen dataclasses)."""

    #: The schema mapping this class is built from (set by `_section`).
    schema: dict = {}

    @classmethod
    def of(cls, doc: dict, path: str = "") -> "Section":
        """This class's object for a (partial) document of its schema mapping: the schema's
        defaults filled in, each field checked (raises ConfigError naming `path`); the
        checks between fields are `validate`'s, for a whole configuration."""
        return _typed(cls.schema, _merge(cls.schema, doc, path), ({}, {}))

    def to_dict(self) -> dict:
        """The document this object stands for (camelCase keys, lists), as the file has it."""
        return _document(self.schema, self, ({}, {}))

    def replace(self, **changes) -> "Section":
        """A copy with `changes` (attribute=value), unchecked, as an override of a command's
        flags is; a nested section takes a mapping of its own changes
        (`cfg.replace(shards={"count": 3})`). A misspelled attribute raises AttributeError."""
        new = {}
        for name, value in changes.items():
            if name not in self.__dataclass_fields__:
                raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
            current = getattr(self, name)
            nested = isinstance(current, Section) and isinstance(value, dict)
            new[name] = current.replace(**value) if nested else value
        return dataclasses.replace(self, **new)


def _section(schema: dict):
    """Class decorator: a frozen dataclass standing for the schema mapping `schema`."""
    def register(cls):
        if cls.__doc__ is None:
            # dataclass() would otherwise build a docstring from inspect.signature(cls), the
            # largest part of creating these classes, in every process's start (issue 31).
            cls.__doc__ = (f"{cls.__name__}: typed configuration section; its fields' defaults, "
                           "documentation and checks are in SCHEMA (`shardsched config defaults`).")
        cls = dataclass(frozen=True)(cls)
        have = [f.name for f in dataclasses.fields(cls)]
        want = [attribute_name(k) for k in schema]
        if have != want:
            raise TypeError(f"{cls.__name__} has fields {have}, its schema {want}")
        shadowed = set(have) & set(vars(Section))
        if shadowed:
            raise TypeError(f"{cls.__name__}: fields {sorted(shadowed)} shadow Section's methods")
        cls.schema = schema
        _CLASS_OF[id(schema)] = cls
        return cls
    return register


def _typed(schema, value, memo: tuple[dict, dict]):
    """The typed form of a validated (sub)document. `memo` (deepcopy's, and tuples by list)
    keeps values the document shares (a YAML alias) shared, as `to_dict` gives them back."""
    copies, tuples = memo
    if isinstance(schema, Leaf):
        if isinstance(value, list):
            if id(value) not in tuples:
                tuples[id(value)] = (value, tuple(copy.deepcopy(value, copies)))
            return tuples[id(value)][1]
        return copy.deepcopy(value, copies)
    if isinstance(schema, ListOf):
        return tuple(_typed(schema.item, item, memo) for item in value)
    return _CLASS_OF[id(schema)](**{attribute_name(k): _typed(sub, value[k], memo) for k, sub in schema.items()})


def _document(schema, obj, memo: tuple[dict, dict]):
    """The inverse of `_typed`."""
    copies, lists = memo
    if isinstance(schema, Leaf):
        if isinstance(obj, tuple):
            if not obj:  # () is one object: empty lists were not shared
                return []
            if id(obj) not in lists:
                lists[id(obj)] = (obj, [copy.deepcopy(v, copies) for v in obj])
            return lists[id(obj)][1]
        return copy.deepcopy(obj, copies)
    if isinstance(schema, ListOf):
        return [_document(schema.item, item, memo) for item in obj]
    return {k: _document(sub, getattr(obj, attribute_name(k)), memo) for k, sub in schema.items()}


@_section(PLUGIN_ENTRY)
class PluginEntry(Section):
    name: str
    weight: int


@_section(DISABLED_ENTRY)
class DisabledEntry(Section):
    name: str
    extension_points: tuple


@_section(PLUGIN_CONFIG_ENTRY)
class PluginConfigEntry(Section):
    name: str
    #: As written (common.config.plugin_args resolves and checks it).
    args: dict


@_section(PROFILE["plugins"])
class ProfilePlugins(Section):
    enabled: tuple[PluginEntry, ...]
    disabled: tuple[DisabledEntry, ...]


@_section(PROFILE)
class Profile(Section):
    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    plugins: ProfilePlugins
    plugin_config: tuple[PluginConfigEntry, ...]


@_section(EXTENDER_TLS)
class ExtenderTLSConfig(Section):
    insecure: bool
    server_name: str
    cert_file: str
    key_file: str
    ca_file: str
    cert_data: str
    key_data: str
    ca_data: str


@_section(MANAGED_RESOURCE)
class ManagedResource(Section):
    name: str
    ignored_by_scheduler: bool


@_section(EXTENDER)
class ExtenderConfig(Section):
    url_prefix: str
    filter_verb: str
    preempt_verb: str
    prioritize_verb: str
    weight: int
    bind_verb: str
    enable_https: bool
    tls_config: ExtenderTLSConfig
    http_timeout_seconds: float
    node_cache_capable: bool
    managed_resources: tuple[ManagedResource, ...]
    ignorable: bool


@_section(SCHEMA["store"])
class StoreConfig(Section):
    url: str | None
    kubeconfig: str | None
    request_timeout_seconds: float
    qps: float
    burst: int
    watch_linger_seconds: float
    history_seconds: float


@_section(SCHEMA["dispatcher"])
class DispatcherConfig(Section):
    host: str
    port: int
    metrics_port: int | None
    also_default_scheduler: bool
    batch_size: int
    redispatch_after_seconds: float
    shard_timeout_seconds: float


@_section(SCHEMA["leaderElection"])
class LeaderElectionConfig(Section):
    leader_elect: bool
    lease_duration_seconds: float
    renew_deadline_seconds: float
    retry_period_seconds: float
    resource_name: str
    identity: str


@_section(SCHEMA["shards"]["optimizations"])
class Optimizations(Section):
    incremental_snapshot: bool
    swap_delete_node_list: bool
    vectorised_filters: bool
    scheduling_context: bool
    unit_locating: bool


@_section(SCHEMA["shards"])
class ShardsConfig(Section):
    count: int
    host: str
    base_port: int
    metrics_base_port: int | None
    assume_ttl_seconds: float
    decision_timeout_seconds: float
    pod_initial_backoff_seconds: float
    pod_max_backoff_seconds: float
    unschedulable_max_seconds: float
    quality_sample_percent: float
    optimizations: Optimizations


@_section(SCHEMA["binders"])
class BindersConfig(Section):
    count: int
    partition_label: str
    lease_duration_seconds: float
    max_in_flight: int
    cross_node_checks: bool
    host: str
    base_port: int
    metrics_base_port: int | None


@_section(SCHEMA["threshold"])
class ThresholdConfig(Section):
    mode: str
    percentage: int
    min_feasible_nodes: int
    max_feasible_nodes: int
    rejection_decay: float
    queue_decay: float
    growth: bool


@_section(SCHEMA["subClusters"])
class SubClustersConfig(Section):
    label: str
    shards_per_pool: int


@_section(SCHEMA["packing"])
class PackingConfig(Section):
    mode: str
    tolerance: int


@_section(SCHEMA["preemption"])
class PreemptionConfig(Section):
    min_candidate_nodes_percentage: int
    min_candidate_nodes_absolute: int
    pruning: bool


@_section(SCHEMA["security"])
class SecurityConfig(Section):
    mode: str
    token_file: str | None
    ca_file: str | None
    cert_file: str | None
    key_file: str | None
    server_name: str


@_section(SCHEMA["health"])
class HealthConfig(Section):
    liveness_timeout_seconds: float


@_section(SCHEMA["events"])
class EventsConfig(Section):
    qps: float
    burst: int


@_section(SCHEMA["tracing"])
class TracingConfig(Section):
    enabled: bool
    exporter: str
    endpoint: str
    file: str
    sampling_rate_per_million: int


@_section(SCHEMA)
class Config(Section):
    """The whole configuration, as every process receives it."""

    api_version: str
    kind: str
    store: StoreConfig
    dispatcher: DispatcherConfig
    leader_election: LeaderElectionConfig
    shards: ShardsConfig
    binders: BindersConfig
    threshold: ThresholdConfig
    sub_clusters: SubClustersConfig
    packing: PackingConfig
    preemption: PreemptionConfig
    security: SecurityConfig
    health: HealthConfig
    events: EventsConfig
    tracing: TracingConfig
    profiles: tuple[Profile, ...]
    extenders: tuple[ExtenderConfig, ...]


def _defaults(schema) -> Any:
    if isinstance(schema, Leaf):
        return copy.deepcopy(schema.default)
    if isinstance(schema, ListOf):
        return [_merge(schema.item, item, "") for item in schema.default]
    return {k: _defaults(v) for k, v in schema.items()}


def _check_leaf(leaf: Leaf, value, path: str):
    if value is None:
        if leaf.nullable:
            return None
        raise ConfigError(path, "must not be null")
    if isinstance(value, bool) and bool not in leaf.types:
        raise ConfigError(path, f"must be {_type_names(leaf)}, got boolean {value!r}")
    if not isinstance(value, leaf.types):
        raise ConfigError(path, f"must be {_type_names(leaf)}, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(path, f"must be a finite number, got {value!r}")
    if leaf.choices and value not in leaf.choices:
        raise ConfigError(path, f"must be one of {', '.join(map(str, leaf.choices))}, got {value!r}")
    if leaf.minimum is not None and value < leaf.minimum:
        raise ConfigError(path, f"must be >= {leaf.minimum}, got {value!r}")
    if leaf.maximum is not None and value > leaf.maximum:
        raise ConfigError(path, f"must be <= {leaf.maximum}, got {value!r}")
    return value


def _type_names(leaf: Leaf) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", dict: "a mapping"}
    return " or ".join(dict.fromkeys(names[t] for t in leaf.types))


def _merge(schema: dict, value, path: str) -> dict:
    """Defaults of `schema` overlaid with `value`, checked field by field."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(path or "<root>", f"must be a mapping, got {type(value).__name__}")
    unknown = [k for k in value if k not in schema]
    if unknown:
        p = f"{path}.{unknown[0]}" if path else str(unknown[0])
        raise ConfigError(p, f"unknown field (known: {', '.join(schema)})")
    out = {}
    for key, sub in schema.items():
        p = f"{path}.{key}" if path else key
        if key not in value:
            out[key] = _defaults(sub)
        elif isinstance(sub, Leaf):
            out[key] = _check_leaf(sub, value[key], p)
        elif isinstance(sub, ListOf):
            out[key] = _merge_list(sub, value[key], p)
        else:
            out[key] = _merge(sub, value[key], p)
    return out


def _merge_list(schema: ListOf, items, path: str) -> list:
    if not isinstance(items, list):
        raise ConfigError(path, f"must be a list, got {type(items).__name__}")
    if len(items) < schema.min_items:
        raise ConfigError(path, f"must have at least {schema.min_items} item(s)")
    out = []
    for i, item in enumerate(items):
        ip = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(ip, f"must be a mapping, got {type(item).__name__}")
        for req in schema.required_keys:
            if not item.get(req):
                raise ConfigError(f"{ip}.{req}", "is required")
        out.append(_merge(schema.item, item, ip))
    return out


#: The store URL schemes common.store opens.
STORE_SCHEMES = ("memory", "redis", "rediss", "unix", "kube")


def _cross_checks(cfg: Config) -> None:
    """The checks across fields, every one: all their errors are raised together."""
    errors: list[tuple[str, str]] = []
    for check in (_check_ports, _check_profiles, _check_leader_election, _check_sub_clusters, _check_extenders,
                  _check_tracing):
        if check is _check_profiles and any(path.startswith("preemption.") for path, _ in errors):
            continue  # the profiles' DefaultPreemption args come from that section: said once
        try:
            check(cfg)
        except ConfigError as e:
            errors += e.errors
    if errors:
        raise ConfigError.of(errors)


def _check_tracing(cfg: Config) -> None:
    if cfg.tracing.enabled and cfg.tracing.exporter == "file" and not cfg.tracing.file:
        raise ConfigError("tracing.file", "must name a file when tracing.exporter is file")


def _check_ports(cfg: Config) -> None:
    url = cfg.store.url
    if url is not None and url.split("://", 1)[0].lower() not in STORE_SCHEMES:
        raise ConfigError("store.url", f"must be {', '.join(s + '://...' for s in STORE_SCHEMES)}, got {url!r}")
    for section in ("shards", "binders"):
        own = getattr(cfg, section)
        for key in ("basePort", "metricsBasePort"):
            port = getattr(own, attribute_name(key))
            if port and port + own.count - 1 > 65535:
                last = port + own.count - 1
                raise ConfigError(f"{section}.{key}", f"the last of {own.count} {section} would listen "
                                  f"on port {last}, past 65535")
    if cfg.preemption.min_candidate_nodes_percentage == 0 == cfg.preemption.min_candidate_nodes_absolute:
        raise ConfigError("preemption.minCandidateNodesAbsolute", "must not be 0 when minCandidateNodesPercentage is")
    if cfg.shards.pod_max_backoff_seconds < cfg.shards.pod_initial_backoff_seconds:
        raise ConfigError("shards.podMaxBackoffSeconds", "must be >= podInitialBackoffSeconds")


def _check_profiles(cfg: Config) -> None:
    """Each profile's plugins and their arguments; every profile's errors are raised."""
    known = plugins.KNOWN
    seen: dict[str, int] = {}
    errors: list[tuple[str, str]] = []
    for i, prof in enumerate(cfg.profiles):
        for section in ("enabled", "disabled"):
            for j, entry in enumerate(getattr(prof.plugins, section)):
                if entry.name not in known and not (section == "disabled" and entry.name == "*"):
                    errors.append((f"profiles[{i}].plugins.{section}[{j}].name",
                                   f"unknown plugin {entry.name!r} (known: {', '.join(sorted(known))})"))
        for check in (lambda: profile_plugins.resolve(prof, f"profiles[{i}]"), lambda: plugin_args.profile_args(cfg, i)):
            try:
                check()
            except FieldError as e:
                errors += [(one.path, one.body) for one in e.errors]
        name = prof.scheduler_name
        if name in seen:
            errors.append((f"profiles[{i}].schedulerName", f"same as profiles[{seen[name]}].schedulerName {name!r}"))
        seen.setdefault(name, i)
    if errors:
        raise ConfigError.of(errors)


def _check_extenders(cfg: Config) -> None:
    """kube's rules for extenders (common.config.extenders), with its messages."""
    errors = extenders.check([e.to_dict() for e in cfg.extenders])
    if errors:
        raise ConfigError.of([(one.path, one.body) for one in errors])


def _check_sub_clusters(cfg: Config) -> None:
    label = cfg.sub_clusters.label
    if label:
        errs = qualified_name_errors(label)
        if errs:
            raise ConfigError("subClusters.label", f"{label!r}: not a label key: {errs[0]}")


#: client-go's leader election jitters its retries by this factor.
ELECTION_JITTER = 1.2


def _check_leader_election(cfg: Config) -> None:
    """client-go's own rules for the three durations, when leader election is on."""
    le = cfg.leader_election
    if not le.leader_elect:
        return
    if le.renew_deadline_seconds >= le.lease_duration_seconds:
        raise ConfigError("leaderElection.renewDeadlineSeconds",
                          f"must be less than leaseDurationSeconds ({le.lease_duration_seconds:g}), "
                          f"got {le.renew_deadline_seconds:g}")
    if le.renew_deadline_seconds <= ELECTION_JITTER * le.retry_period_seconds:
        raise ConfigError("leaderElection.retryPeriodSeconds",
                          f"must be less than renewDeadlineSeconds / {ELECTION_JITTER} "
                          f"({le.renew_deadline_seconds / ELECTION_JITTER:g}), got {le.retry_period_seconds:g}")
    if not le.resource_name:
        raise ConfigError("leaderElection.resourceName", "must not be empty")
    if (why := identity.check(le.identity)) is not None:
        raise ConfigError("leaderElection.identity", why)


def defaults() -> Config:
    """The configuration of an empty file (every field its schema default)."""
    return _typed(SCHEMA, _defaults(SCHEMA), ({}, {}))


def validate(doc) -> Config:
    """Full config (defaults filled in) from a parsed YAML document; raises ConfigError."""
    return validate_with_notes(doc)[0]


def validate_with_notes(doc) -> tuple[Config, list[str]]:
    """validate(), and for a KubeSchedulerConfiguration the notes on what it left out (the
    kube defaults shardsched does not ship, say): `config validate` prints them, processes
    log them. A KubeSchedulerConfiguration's errors name its own fields."""
    if not kube_config.is_kube(doc):
        return _validate_native(doc), []
    try:
        native, origin, notes = kube_config.convert(doc)
    except FieldError as e:
        raise ConfigError.of([(one.path, one.body) for one in e.errors]) from None
    try:
        return _validate_native(native), notes
    except ConfigError as e:
        raise ConfigError.of([(origin(path), message) for path, message in e.errors]) from None


def _validate_native(doc) -> Config:
    cfg = _typed(SCHEMA, _merge(SCHEMA, doc, ""), ({}, {}))
    _cross_checks(cfg)
    return cfg


def load(path: str | None) -> Config:
    """Read and validate a config file (shardsched's or a KubeSchedulerConfiguration);
    None gives the defaults."""
    return load_with_notes(path)[0]


def load_with_notes(path: str | None) -> tuple[Config, list[str]]:
    if path is None:
        return validate({}), []
    try:
        with open(path) as fh:
            text = fh.read()
        # bounded: a linear scan refuses a too deep document before PyYAML reads it, and
        # aliases are held to go-yaml's rule (common/model/yaml_input.py)
        doc = yaml_input.read_single(text)
    except OSError as e:
        raise ConfigError(path, f"cannot read: {e.strerror}", unreadable=True) from None
    except (yaml_input.Unreadable, UnicodeDecodeError) as e:
        raise ConfigError(path, f"not valid YAML: {e}", unreadable=True) from None
    except yaml_input.Refused as e:
        raise ConfigError(path, f"{e.reason} (at line {e.line})") from None
    return validate_with_notes(doc)


def dump(cfg: Config) -> str:
    """The YAML document of a configuration (what `config defaults` and `convert` print)."""
    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def field_docs(schema=SCHEMA, prefix: str = "") -> list[tuple[str, Any, str]]:
    """(dotted path, default, doc) for every field, in schema order: the README's table."""
    rows = []
    for key, sub in schema.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(sub, Leaf):
            rows.append((path, sub.default, sub.doc))
        elif isinstance(sub, ListOf):
            rows.append((path, sub.default, sub.doc))
            rows.extend(field_docs(sub.item, f"{path}[]"))
        else:
            rows.extend(field_docs(sub, path))
    return rows
