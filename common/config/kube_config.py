"""KubeSchedulerConfiguration files (`kubescheduler.config.k8s.io/v1`) as shardsched
configurations: `--config` and `config validate` take them, `config convert` prints what
they mean to shardsched.

A file is defaulted and validated as kube-scheduler v1.37 does (its defaults, its rules, its
messages and field paths), then mapped onto shardsched's own configuration:

    profiles[]                     profiles[] (plugins per extension point, multiPoint merged
                                   into kube's default plugins; pluginConfig args)
    percentageOfNodesToScore       N > 0: threshold.mode percentage, threshold.percentage N;
                                   0 (kube's default): shardsched's threshold section
    podInitial/MaxBackoffSeconds   shards.podInitial/MaxBackoffSeconds
    leaderElection                 leaderElection (durations in seconds; resourceName, except
                                   kube's default `kube-scheduler`, kube-scheduler's own Lease)
    clientConnection               store.kubeconfig, store.qps, store.burst (kube:// requests)
    extenders                      extenders (httpTimeout as httpTimeoutSeconds; 0 = kube's 30s)
    shardsched                     the extension: any of shardsched's own sections (store,
                                   dispatcher, shards, binders, threshold, ...), as in a
                                   ShardschedConfiguration

Fields kube has and shardsched cannot honour are refused by name, except at kube's default
value (`kube-scheduler --write-config-to` writes every field): then, if the file sets the
field, a note says what shardsched does instead (a field left out says nothing). kube's default plugins shardsched does not ship are left out of a
profile with a note; enabled anywhere else, they are refused. The extension may not set what
the file sets explicitly elsewhere; it may refine what kube only defaulted.
"""
from __future__ import annotations

import copy

from . import plugin_names as names
from ..plugins import EXTENSION_POINTS, KNOWN, PAIRED_POINTS, POINTS
from . import extenders, plugin_args
from ..validation import (ANY, Bool, Int, List, Num, Obj, Str, Verbatim, collecting, decode_object, duplicate,
                         forbidden, format_duration, invalid, not_supported, parse_duration, raise_all, required)

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
KIND = "KubeSchedulerConfiguration"
#: The key holding shardsched's own sections in a KubeSchedulerConfiguration: the product's
#: name, like the shardsched.io API group of its own format, so a section moves between the
#: two formats unchanged.
EXTENSION = "shardsched"
DEFAULT_SCHEDULER = "default-scheduler"
#: kube-scheduler v1.37's default plugin shardsched does not ship (NOT_SHIPPED says why).
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"

#: kube-scheduler v1.37's default multiPoint plugins with their weights (getDefaultPlugins with
#: its default feature gates: DynamicResourceAllocation and NodeDeclaredFeatures are GA and on;
#: GenericWorkload's GangScheduling and TopologyAwareWorkloadScheduling's plugins are off).
KUBE_DEFAULT_PLUGINS = (
    (names.SCHEDULING_GATES, None), (names.PRIORITY_SORT, None), (names.NODE_NAME, None),
    (names.NODE_UNSCHEDULABLE, None), (names.TAINT_TOLERATION, 3), (names.NODE_AFFINITY, 2), (names.NODE_PORTS, None),
    (names.NODE_RESOURCES_FIT, 1), (names.VOLUME_RESTRICTIONS, None), (names.NODE_VOLUME_LIMITS, None),
    (names.VOLUME_BINDING, None), (names.VOLUME_ZONE, None), (names.POD_TOPOLOGY_SPREAD, 2),
    (names.INTER_POD_AFFINITY, 2), (names.DYNAMIC_RESOURCES, 2), (names.DEFAULT_PREEMPTION, None),
    (names.NODE_RESOURCES_BALANCED_ALLOCATION, 1), (names.IMAGE_LOCALITY, 1), (names.DEFAULT_BINDER, None),
    (NODE_DECLARED_FEATURES, None),
)
#: kube's default plugins shardsched does not ship, and what that means for a pod: multiPoint
#: (kube's defaults, or `--write-config-to`'s list of them) leaves them out with a note; any
#: other extension point enabling them is refused.
NOT_SHIPPED = {
    NODE_DECLARED_FEATURES: "shardsched does not match pods to nodes' status.declaredFeatures: only pods "
                            "using fields of features a node must declare (alpha in v1.37) are affected",
}
#: Extension points of kube's workload (pod group) scheduling cycle (GenericWorkload and
#: TopologyAwareWorkloadScheduling, off by default in v1.37): accepted empty, as
#: `--write-config-to` writes them.
WORKLOAD_POINTS = ("placementGenerate", "placementScore", "podGroupPostFilter")
_PLUGIN = Obj(name=Str(), weight=Int(None))
_PLUGIN_SET = Obj(enabled=List(_PLUGIN), disabled=List(_PLUGIN))
_PLUGINS = {point: _PLUGIN_SET for point in (*EXTENSION_POINTS, *WORKLOAD_POINTS, "multiPoint")}
_PROFILE = {"schedulerName": Str(None), "percentageOfNodesToScore": Int(None), "plugins": ANY,
            "pluginConfig": List(Obj(name=Str(), args=ANY))}
_LEADER_ELECTION = {"leaderElect": Bool(True), "leaseDuration": Str("15s"), "renewDeadline": Str("10s"),
                    "retryPeriod": Str("2s"), "resourceLock": Str("leases"), "resourceName": Str("kube-scheduler"),
                    "resourceNamespace": Str("kube-system")}
_EXTENDER = {
    "urlPrefix": Str(), "filterVerb": Str(), "preemptVerb": Str(), "prioritizeVerb": Str(), "weight": Int(0, bits=64),
    "bindVerb": Str(), "enableHTTPS": Bool(False),
    "tlsConfig": Obj(insecure=Bool(False), serverName=Str(), certFile=Str(), keyFile=Str(), caFile=Str(),
                     certData=Str(), keyData=Str(), caData=Str()),
    "httpTimeout": Str("0s"), "nodeCacheCapable": Bool(False),
    "managedResources": List(Obj(name=Str(), ignoredByScheduler=Bool(False))), "ignorable": Bool(False),
}
_CLIENT_CONNECTION = {"kubeconfig": Str(), "acceptContentTypes": Str(),
                      "contentType": Str("application/vnd.kubernetes.protobuf"), "qps": Num(0), "burst": Int(0)}
#: The top-level fields of a KubeSchedulerConfiguration v1 (kube's defaults).
FIELDS = {
    "apiVersion": Str(), "kind": Str(), "parallelism": Int(16), "leaderElection": ANY,
    "clientConnection": ANY, "enableProfiling": Bool(True), "enableContentionProfiling": Bool(True),
    "percentageOfNodesToScore": Int(None), "podInitialBackoffSeconds": Int(1, bits=64),
    "podMaxBackoffSeconds": Int(10, bits=64), "profiles": List(ANY), "extenders": ANY,
    "delayCacheUntilActive": Bool(False), EXTENSION: ANY,
}


def is_kube(doc) -> bool:
    """Whether a parsed document is a KubeSchedulerConfiguration (of any version)."""
    return isinstance(doc, dict) and (doc.get("kind") == KIND or str(doc.get("apiVersion", "")).startswith(f"{API_GROUP}/"))


def convert(doc: dict):
    """(shardsched document, origin, notes): the equivalent ShardschedConfiguration document
    (still to be validated), a function from a path in it to the path in `doc` that set it,
    and notes on what shardsched does differently. Raises FieldError, or FieldErrors with
    every error of the file as kube-scheduler lists them, with `doc`'s paths."""
    c = _Conversion(doc)
    raise_all(c.errors)
    return c.native, c.origin, c.notes


class _Conversion:
    """One file's conversion. Every check appends its FieldErrors to `errors` and the
    conversion goes on (a bad field takes its default), so that a file's errors are all
    reported at once, in kube-scheduler's order: clientConnection, leaderElection,
    parallelism, profiles, percentageOfNodesToScore, backoff, extenders; then shardsched's
    own refusals."""

    def __init__(self, doc: dict):
        self.errors: list = []
        self.explicit = set(doc) if isinstance(doc, dict) else set()
        self.top = decode_object(FIELDS, doc, "", self.errors)
        self.native: dict = {}
        self.origins: dict[str, str] = {}
        self.notes: list[str] = []
        steps = ((self._type_meta,), (self._extension, self.top[EXTENSION]),
                 (self._client_connection, self.top["clientConnection"]),
                 (self._leader_election, self.top["leaderElection"]), (self._parallelism,), (self._profiles,),
                 (self._scheduling,), (self._extenders, self.top["extenders"]), (self._unsupported,))
        for fn, *args in steps:
            collecting(self.errors, fn, *args)

    def origin(self, path: str) -> str:
        """The path in the kube file of what set `path` of the shardsched document."""
        best = ""
        for prefix in self.origins:
            if len(prefix) > len(best) and (path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")):
                best = prefix
        return self.origins[best] + path[len(best):] if best else path

    def _put(self, dotted: str, value, kube_path: str, explicit: bool) -> None:
        """Set a native leaf from a kube field; the extension may refine only kube's defaults."""
        section, leaf = dotted.split(".")
        sec = self.native.setdefault(section, {})
        if not isinstance(sec, dict):
            return  # the extension's section is no mapping: validation names it
        if leaf in sec:
            if explicit:
                raise invalid(f"{EXTENSION}.{dotted}", sec[leaf], f"also set by {kube_path}: set it in one place")
            return
        sec[leaf] = value
        self.origins[dotted] = kube_path

    # --- top level ----------------------------------------------------------------------

    def _type_meta(self) -> None:
        if self.top["apiVersion"] != API_VERSION:
            self.errors.append(not_supported("apiVersion", self.top["apiVersion"], (API_VERSION,)))
        if self.top["kind"] != KIND:
            self.errors.append(not_supported("kind", self.top["kind"], (KIND,)))

    def _extension(self, ext) -> None:
        if ext is None:
            return
        if not isinstance(ext, dict):
            raise invalid(EXTENSION, ext, "must be a mapping of shardsched's configuration sections")
        for key, value in ext.items():
            if key in ("apiVersion", "kind", "profiles"):
                raise forbidden(f"{EXTENSION}.{key}", "comes from the KubeSchedulerConfiguration itself")
            self.native[key] = copy.deepcopy(value)
            self.origins[str(key)] = f"{EXTENSION}.{key}"

    def _parallelism(self) -> None:
        """kube's goroutines for filtering and scoring one pod: shardsched's shards filter and
        score a pod's nodes in vectorised passes, so any valid value means the same to it."""
        n = self.top["parallelism"]
        if n <= 0:
            self.errors.append(invalid("parallelism", n, "should be an integer value greater than zero"))
        elif n != 16:
            self.notes.append(f"parallelism: {n} accepted; each shard filters and scores a pod's nodes in "
                              "vectorised passes: shardsched.shards.count sets how many pods are scheduled at once")

    def _unsupported(self) -> None:
        """kube's fields shardsched has no counterpart for: kube's default value only."""
        t = self.top
        if t["delayCacheUntilActive"]:
            self.errors.append(invalid("delayCacheUntilActive", True, "not supported by shardsched: only the "
                                       "dispatcher elects a leader, and shards and binders keep their caches warm"))
        for key in ("enableProfiling", "enableContentionProfiling"):
            if t[key] and key in self.explicit:  # kube's default left out is no news
                self.notes.append(f"{key}: shardsched serves no profiling endpoints")

    def _extenders(self, raw) -> None:
        """kube's extenders, checked by kube's rules; httpTimeout becomes seconds."""
        if raw is None:
            return
        if not isinstance(raw, list):
            raise invalid("extenders", raw, "must be a list")
        errs, out = [], []
        for i, item in enumerate(raw):
            p = f"extenders[{i}]"
            e = decode_object(_EXTENDER, item, p, errs)
            seconds = parse_duration(e.pop("httpTimeout"))
            if seconds is None or seconds < 0:
                errs.append(invalid(f"{p}.httpTimeout", item.get("httpTimeout") if isinstance(item, dict) else None,
                                    'must be a duration such as "30s"'))
                seconds = 0
            e["httpTimeoutSeconds"] = seconds or extenders.DEFAULT_TIMEOUT_SECONDS
            e["tlsConfig"] = e["tlsConfig"] or {}
            self.origins[f"extenders[{i}].httpTimeoutSeconds"] = f"{p}.httpTimeout"
            out.append(e)
        errs += extenders.check(out)
        self.errors += errs
        if errs:
            return
        if "extenders" in self.native:
            raise invalid(f"{EXTENSION}.extenders", "...", "also set by extenders: set it in one place")
        self.native["extenders"] = out
        self.origins.setdefault("extenders", "extenders")

    def _scheduling(self) -> None:
        t = self.top
        pct = t["percentageOfNodesToScore"]
        if collecting(self.errors, _percentage, "percentageOfNodesToScore", pct, default=False) and pct:
            self._put("threshold.mode", "percentage", "percentageOfNodesToScore", True)
            self._put("threshold.percentage", pct, "percentageOfNodesToScore", True)
        initial, most = t["podInitialBackoffSeconds"], t["podMaxBackoffSeconds"]
        bad = len(self.errors)
        if initial <= 0:
            self.errors.append(invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
        if most < initial:
            self.errors.append(invalid("podMaxBackoffSeconds", most,
                                       "must be greater than or equal to PodInitialBackoffSeconds"))
        if len(self.errors) > bad:
            return
        for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds"):
            self._put(f"shards.{key}", t[key], key, key in self.explicit)

    def _leader_election(self, raw) -> None:
        le = decode_object(_LEADER_ELECTION, raw, "leaderElection", self.errors)
        given = set(raw) if isinstance(raw, dict) else set()
        p, errs = "leaderElection", []
        seconds = {}
        for key in ("leaseDuration", "renewDeadline", "retryPeriod"):
            seconds[key] = parse_duration(le[key])
            if seconds[key] is None:
                errs.append(invalid(f"{p}.{key}", le[key], 'must be a duration such as "15s" or "1m30s"'))
        if le["leaderElect"] and not errs:
            errs += _election_timing(seconds, p)
        if le["leaderElect"]:
            for key in ("resourceLock", "resourceNamespace", "resourceName"):
                if not le[key]:
                    errs.append(invalid(f"{p}.{key}", "", f"{key} is required"))
            if le["resourceLock"] != "leases":
                errs.append(invalid(f"{p}.resourceLock", le["resourceLock"], 'resourceLock value must be "leases"'))
        if le["resourceNamespace"] not in ("kube-system", ""):
            errs.append(invalid(f"{p}.resourceNamespace", le["resourceNamespace"], "not supported by shardsched, "
                                "whose Leases live in its own namespace: leave kube's default kube-system"))
        self.errors += errs
        if errs:
            return
        self._put("leaderElection.leaderElect", le["leaderElect"], f"{p}.leaderElect", "leaderElect" in given)
        for key in ("leaseDuration", "renewDeadline", "retryPeriod"):
            self._put(f"leaderElection.{key}Seconds", seconds[key], f"{p}.{key}", key in given)
        if le["resourceName"] != "kube-scheduler":  # kube's default: kube-scheduler's own Lease
            self._put("leaderElection.resourceName", le["resourceName"], f"{p}.resourceName", True)

    def _client_connection(self, raw) -> None:
        cc = decode_object(_CLIENT_CONNECTION, raw, "clientConnection", self.errors)
        given = set(raw) if isinstance(raw, dict) else set()
        p, errs = "clientConnection", []
        if cc["burst"] < 0:
            errs.append(invalid(f"{p}.burst", cc["burst"], "must be non-negative"))
        if cc["contentType"] not in ("application/vnd.kubernetes.protobuf", "application/json", ""):
            errs.append(invalid(f"{p}.contentType", cc["contentType"], "not supported by shardsched, which sends JSON"))
        if cc["contentType"] == "application/vnd.kubernetes.protobuf" and "contentType" in given:
            self.notes.append(f"{p}.contentType: shardsched talks JSON to the API server")
        if cc["acceptContentTypes"] not in ("", "application/json"):
            errs.append(invalid(f"{p}.acceptContentTypes", cc["acceptContentTypes"],
                                "not supported by shardsched, which reads JSON"))
        self.errors += errs
        if errs:
            return
        if cc["kubeconfig"]:
            self._put("store.kubeconfig", cc["kubeconfig"], f"{p}.kubeconfig", True)
        # kube: 0 means its defaults (50 and 100); a negative qps switches the limit off.
        qps = 50.0 if cc["qps"] == 0 else max(float(cc["qps"]), 0.0)
        self._put("store.qps", qps, f"{p}.qps", "qps" in given)
        self._put("store.burst", cc["burst"] or 100, f"{p}.burst", "burst" in given)

    # --- profiles -----------------------------------------------------------------------

    def _profiles(self) -> None:
        raw = self.top["profiles"] or [{}]  # kube defaults no profile to one profile
        out, seen = [], {}
        for i, prof in enumerate(raw):
            name, native = self._profile(prof, i, len(raw))
            if name and name in seen:
                self.errors.append(duplicate(f"profiles[{i}].schedulerName",
                                             Verbatim(f"profiles[{seen[name]}].schedulerName")))
            seen.setdefault(name, i)
            if native is not None:
                out.append(native)
        self.native["profiles"] = out

    def _profile(self, prof, i: int, count: int) -> tuple[str | None, dict | None]:
        """(its schedulerName, the profile in shardsched's terms or None when it has errors,
        which are appended)."""
        path, errs = f"profiles[{i}]", []
        p = decode_object(_PROFILE, prof, path, errs)
        name = p["schedulerName"]
        if name is None and count == 1:
            name = DEFAULT_SCHEDULER
        if not name:
            errs.append(required(f"{path}.schedulerName"))
        collecting(errs, _percentage, f"{path}.percentageOfNodesToScore", p["percentageOfNodesToScore"])
        self.origins[path] = path
        native = {"schedulerName": name, "plugins": collecting(errs, self._plugins, p["plugins"], path, i),
                  "pluginConfig": collecting(errs, self._plugin_config, p["pluginConfig"], path)}
        if p["percentageOfNodesToScore"] is not None:
            native["percentageOfNodesToScore"] = p["percentageOfNodesToScore"]
        self.errors += errs
        return name, None if errs else native

    def _plugins(self, raw, path: str, index: int) -> dict:
        sets = _PluginSets(raw, f"{path}.plugins")
        self.notes += sets.notes
        native = {"disabled": [{"name": "*"}], "enabled": []}
        self.origins[f"{path}.plugins"] = f"{path}.plugins"
        for name in sets.order:
            runs = sets.runs[name]
            if not runs:
                continue
            weight, origin = sets.weight(name)
            self.origins[f"{path}.plugins.enabled[{len(native['enabled'])}]"] = origin
            native["enabled"].append({"name": name, "weight": weight})
            off = [pt for pt in POINTS[name] if pt not in runs]
            if off:
                native["disabled"].append({"name": name, "extensionPoints": off})
        return native

    def _plugin_config(self, entries: list, path: str) -> list:
        """The profile's pluginConfig, each entry's args checked here so that their errors
        are listed with the rest of the file's (kube validates every plugin's args)."""
        out, seen, errs = [], set(), []
        for k, entry in enumerate(entries):
            ep = f"{path}.pluginConfig[{k}]"
            name = entry["name"]
            if name in seen:
                errs.append(duplicate(ep, name))
                continue
            seen.add(name)
            if name not in KNOWN:
                errs.append(not_supported(f"{ep}.name", name, sorted(KNOWN)))
                continue
            if collecting(errs, plugin_args.resolve, name, entry["args"], f"{ep}.args") is None:
                continue
            self.origins[f"{path}.pluginConfig[{len(out)}]"] = ep
            out.append({"name": name, "args": entry["args"] or {}})
        raise_all(errs)
        return out


def _election_timing(seconds: dict, p: str) -> list:
    """kube's (and client-go's) rules for the three leader election durations."""
    errs = [invalid(f"{p}.{key}", format_duration(seconds[key]), "must be greater than zero")
            for key in ("leaseDuration", "renewDeadline", "retryPeriod") if seconds[key] <= 0]
    if seconds["leaseDuration"] <= seconds["renewDeadline"]:
        errs.append(invalid(f"{p}.leaseDuration", format_duration(seconds["renewDeadline"]),
                            "LeaseDuration must be greater than RenewDeadline"))
    if seconds["renewDeadline"] <= 1.2 * seconds["retryPeriod"]:  # client-go's leader elector
        errs.append(invalid(f"{p}.renewDeadline", format_duration(seconds["renewDeadline"]),
                            "renewDeadline must be greater than retryPeriod*JitterFactor (1.2)"))
    return errs


def _percentage(path: str, value) -> bool:
    """True, or raises: a percentage of nodes to score is in [0, 100]."""
    if value is not None and not 0 <= value <= 100:
        raise invalid(path, value, "not in valid range [0-100]")
    return True


class _PluginSets:
    """One profile's `plugins` as kube-scheduler resolves them: multiPoint merged into kube's
    default plugins (mergePluginSet), then expanded to every extension point the plugin
    implements unless that point disables it (or `*`) or enables it explicitly; score
    weights from `score`, else multiPoint, 0 meaning 1."""

    def __init__(self, raw, path: str):
        self.path = path
        sets = decode_object(_PLUGINS, raw, path)
        self.sets = {pt: s or {"enabled": [], "disabled": []} for pt, s in sets.items()}
        self.notes: list[str] = []
        self.order: list[str] = []
        self.runs: dict[str, dict] = {}        # name -> {point: path of the entry that enabled it}
        self.why_off: dict[str, dict] = {}     # name -> {point: path of the entry that disabled it}
        self.multi: dict[str, tuple] = {}      # name -> (weight, path of its multiPoint entry)
        self.scores: dict[str, tuple] = {}     # name -> (weight, path) from `score`
        for point in WORKLOAD_POINTS:
            for k, _ in enumerate(self.sets[point]["enabled"]):
                raise forbidden(f"{path}.{point}.enabled[{k}]", "shardsched has no workload scheduling cycle "
                                "(kube's GenericWorkload and TopologyAwareWorkloadScheduling, off by default)")
        self._multi_point()
        for point in EXTENSION_POINTS:
            self._expand(point)
        for name in self.order:
            self._check_pairs(name)

    def _add(self, name: str) -> None:
        if name not in self.runs:
            self.order.append(name)
            self.runs[name] = {}
            self.why_off[name] = {}

    def _multi_point(self) -> None:
        mp, mpp = self.sets["multiPoint"], f"{self.path}.multiPoint"
        disabled = {e["name"] for e in mp["disabled"]}
        custom: dict[str, int] = {}
        for k, e in enumerate(mp["enabled"]):
            if e["name"] in custom:
                raise duplicate(f"{mpp}.enabled[{k}]", e["name"])
            custom[e["name"]] = k
        merged, used = [], set()
        if "*" not in disabled:
            for name, weight in KUBE_DEFAULT_PLUGINS:
                if name in disabled:
                    continue
                k = custom.get(name)
                if k is None:
                    merged.append((name, weight, None))
                else:
                    used.add(k)
                    merged.append((name, mp["enabled"][k]["weight"], f"{mpp}.enabled[{k}]"))
        merged += [(e["name"], e["weight"], f"{mpp}.enabled[{k}]") for k, e in enumerate(mp["enabled"])
                   if k not in used]
        for name, weight, origin in merged:
            if name in NOT_SHIPPED:
                if origin is not None:  # named by the file; kube's default left out is no news (README)
                    self.notes.append(f"{origin}: {name} left out: {NOT_SHIPPED[name]}")
                continue
            if name not in KNOWN:
                _refuse(origin, name)
            self._add(name)
            self.multi[name] = (weight, origin or mpp)

    def _expand(self, point: str) -> None:
        ps, pp = self.sets[point], f"{self.path}.{point}"
        disabled = {e["name"]: f"{pp}.disabled[{k}]" for k, e in enumerate(ps["disabled"])}
        specific = []
        for k, e in enumerate(ps["enabled"]):
            name, ep = e["name"], f"{pp}.enabled[{k}]"
            if name not in KNOWN:
                _refuse(ep, name)
            if point not in POINTS[name]:
                raise invalid(ep, name, f"{name} does not extend the {point} extension point")
            if name in specific:
                raise duplicate(ep, name)
            specific.append(name)
            self._add(name)
            self.runs[name][point] = ep
            if point == "score":
                self.scores[name] = (e["weight"], ep)
        for name, (_, origin) in self.multi.items():
            if point not in POINTS[name] or name in specific:
                continue
            off = disabled.get(name) or disabled.get("*")
            if off:
                self.why_off[name][point] = off
            else:
                self.runs[name][point] = origin

    def _check_pairs(self, name: str) -> None:
        """A preFilter (preScore) left out while its filter (score) runs fails every pod in
        kube; one left in while its filter (score) is out goes out with it."""
        runs, off = self.runs[name], self.why_off[name]
        for pre, main in PAIRED_POINTS.items():
            if pre not in POINTS[name]:
                continue
            if pre not in runs and main in runs:
                raise invalid(off.get(pre) or runs[main], name, f"{name}'s {main} needs its {pre}: "
                              f"switch {main} off too, or enable {pre}")
            if main not in runs:
                runs.pop(pre, None)

    def weight(self, name: str) -> tuple[int, str]:
        """(score weight, path of the entry it comes from); 0 for a plugin that does not score."""
        if "score" not in self.runs[name]:
            return 0, self.runs[name][next(iter(self.runs[name]))]
        weight, origin = self.scores.get(name) or self.multi[name]
        return weight or 1, origin


def _refuse(path: str, name: str) -> None:
    raise not_supported(f"{path}.name", name, sorted(KNOWN))

