"""Builders shared by the plugin, queue, threshold and simulate tests.

Nodes and pods are written as the plain Kubernetes dicts a manifest would hold and parsed with
common.objects, so the tests exercise the same parsing the shard uses. `Cluster` puts them in
a ShardCache behind a real Scheduler (default profile, threshold `all` unless told otherwise)
and offers two harnesses over one plugin:

* `filter(plugin, pod)` runs the plugin's PreFilter, then BOTH its per-node `filter` and its
  vectorised `filter_vec` (over a slice of rows and over an index array, the two forms the
  scan passes) and fails the test if they disagree on any node; when the plugin explains
  vectorised rejections itself (`reasons_vec`), those reasons must equal the per-node ones.
* `score(plugin, pod)` runs PreFilter, PreScore, `score` and/or `score_vec` (asserting they
  agree when both exist) and NormalizeScore, returning the final 0..100 score per node.
"""
from __future__ import annotations

import copy
from collections import Counter

import numpy as np

from common import config as config_mod
from common.objects import parse_node, parse_pod
from shard.cache import ShardCache
from shard.framework import SKIP, CycleState, PreFilterResult, Status, implements
from shard.scheduler import Scheduler

SCHEDULER = "shardsched"
GI = 1024 ** 3
MI = 1024 ** 2


# --- objects ---------------------------------------------------------------------------------

def node(name: str, cpu="4", memory="8Gi", pods="110", labels: dict | None = None,
         taints=(), unschedulable: bool = False, images: dict | None = None,
         extra: dict | None = None, hostname_label: bool = True) -> dict:
    """A Node dict; `taints` as "key=value:Effect" strings, `images` as {name: bytes}."""
    lab = {"kubernetes.io/hostname": name} if hostname_label else {}
    lab.update(labels or {})
    alloc = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods)}
    alloc.update({k: str(v) for k, v in (extra or {}).items()})
    spec: dict = {}
    if taints:
        spec["taints"] = [_taint(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    status: dict = {"allocatable": alloc, "capacity": dict(alloc)}
    if images:
        status["images"] = [{"names": [n] if isinstance(n, str) else list(n), "sizeBytes": size}
                            for n, size in images.items()]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": lab}, "spec": spec, "status": status}


def _taint(text: str) -> dict:
    kv, effect = text.rsplit(":", 1)
    key, _, value = kv.partition("=")
    t = {"key": key, "effect": effect}
    if value:
        t["value"] = value
    return t


def toleration(key: str = "", value: str = "", effect: str = "", operator: str | None = None) -> dict:
    t: dict = {}
    if key:
        t["key"] = key
    t["operator"] = operator or ("Equal" if value else "Exists")
    if value:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def pod(name: str, cpu: str | None = None, memory: str | None = None, *, ns: str = "default",
        labels: dict | None = None, node_name: str | None = None, priority: int | None = None,
        tolerations=(), node_selector: dict | None = None, affinity: dict | None = None,
        spread=(), ports=(), images=("pause",), owner: str | None = None,
        extra: dict | None = None, scheduler: str = SCHEDULER, phase: str | None = None) -> dict:
    """A Pod dict. `ports` as (hostPort, protocol, hostIP) tuples (protocol/hostIP optional);
    `owner` as "Kind/name" for a controller ownerReference; `extra` extra requests."""
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update({k: str(v) for k, v in (extra or {}).items()})
    containers = []
    for i, image in enumerate(images):
        c: dict = {"name": f"c{i}", "image": image}
        if i == 0 and requests:
            c["resources"] = {"requests": requests}
        if i == 0 and ports:
            c["ports"] = [_port(p) for p in ports]
        containers.append(c)
    spec: dict = {"containers": containers, "schedulerName": scheduler}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = list(spread)
    meta: dict = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": dict(labels or {})}
    if owner:
        kind, _, oname = owner.partition("/")
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": oname,
                                    "uid": f"uid-{oname}", "controller": True}]
    status = {"phase": phase or ("Running" if node_name else "Pending")}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _port(p) -> dict:
    if isinstance(p, int):
        p = (p,)
    out = {"containerPort": p[0], "hostPort": p[0]}
    if len(p) > 1 and p[1]:
        out["protocol"] = p[1]
    if len(p) > 2 and p[2]:
        out["hostIP"] = p[2]
    return out


def expr(key: str, op: str, *values) -> dict:
    e: dict = {"key": key, "operator": op}
    if values:
        e["values"] = [str(v) for v in values]
    return e


def node_affinity(*required_terms, preferred=()) -> dict:
    """required_terms: each a list of matchExpressions, or a dict term; preferred: (weight, term)."""
    na: dict = {}
    if required_terms:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [t if isinstance(t, dict) else {"matchExpressions": list(t)}
                                  for t in required_terms]}
    if preferred:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t if isinstance(t, dict) else {"matchExpressions": list(t)}}
            for w, t in preferred]
    return {"nodeAffinity": na}


def pod_term(match_labels: dict, topology_key: str = "kubernetes.io/hostname", **extra) -> dict:
    t = {"labelSelector": {"matchLabels": match_labels}, "topologyKey": topology_key}
    t.update(extra)
    return t


def pod_affinity(required=(), preferred=(), anti_required=(), anti_preferred=()) -> dict:
    """Each required entry is a pod_term(); each preferred entry is (weight, pod_term())."""
    out: dict = {}
    for key, req, pref in (("podAffinity", required, preferred),
                           ("podAntiAffinity", anti_required, anti_preferred)):
        section: dict = {}
        if req:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = list(req)
        if pref:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref]
        if section:
            out[key] = section
    return out


def spread(max_skew: int, key: str, labels: dict, hard: bool = True, **extra) -> dict:
    c = {"maxSkew": max_skew, "topologyKey": key,
         "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
         "labelSelector": {"matchLabels": labels}}
    c.update(extra)
    return c


# --- configuration ---------------------------------------------------------------------------

def make_config(mode: str = "all", plugin_config: dict | None = None, disabled=(), enabled=(),
                **sections) -> dict:
    """A validated config: threshold `mode`, pluginConfig {plugin: args} for the one profile,
    plus any top-level section overrides (e.g. shards={...}, threshold={...})."""
    profile: dict = {"schedulerName": SCHEDULER}
    if plugin_config:
        profile["pluginConfig"] = [{"name": n, "args": a} for n, a in plugin_config.items()]
    if disabled or enabled:
        profile["plugins"] = {"disabled": [{"name": n} for n in disabled],
                              "enabled": [e if isinstance(e, dict) else {"name": e} for e in enabled]}
    doc: dict = {"threshold": {"mode": mode}, "profiles": [profile]}
    for k, v in sections.items():
        doc.setdefault(k, {}).update(v)
    return config_mod.validate(copy.deepcopy(doc))


# --- a cluster behind a real scheduler -------------------------------------------------------

def outcome(st: Status | None):
    """(code, message) of a filter status, None when the node passes."""
    return None if st is None else (st.code, st.message())


class Cluster:
    def __init__(self, nodes=(), pods=(), cfg: dict | None = None, seed: int = 0, **opts):
        self.cache = ShardCache()
        for n in nodes:
            self.cache.set_node(parse_node(n))
        for p in pods:
            self.cache.set_pod(parse_pod(p))
        self.sched = Scheduler(cfg or make_config(), self.cache, None, seed, **opts)
        self.sched.refresh()

    # cluster changes --------------------------------------------------------------------------

    def add_node(self, n: dict) -> None:
        self.cache.set_node(parse_node(n))
        self.sched.refresh()

    def add_pod(self, p: dict) -> None:
        self.cache.set_pod(parse_pod(p))
        self.sched.refresh()

    @property
    def table(self):
        return self.sched.table

    @property
    def profile(self):
        return self.sched.profiles[SCHEDULER]

    def plugin(self, name: str):
        for p in self.profile.plugins:
            if p.name == name:
                return p
        raise KeyError(name)

    # whole cycles -----------------------------------------------------------------------------

    def schedule(self, p, **kw):
        """One cycle; accepts a dict or a parsed Pod."""
        pod_ = parse_pod(p) if isinstance(p, dict) else p
        self.sched.refresh()
        return self.sched.schedule(pod_, **kw)

    def explain(self, p) -> str:
        """kube-scheduler's unschedulable message for `p` (the pod must not fit)."""
        result = self.schedule(p)
        assert not result.scheduled, f"{p['metadata']['name']} was scheduled on {result.node}"
        return self.sched.explain(result)

    # one plugin -------------------------------------------------------------------------------

    def pre_filter(self, name: str, p: dict):
        plugin = self.plugin(name)
        state = CycleState()
        return plugin.pre_filter(state, parse_pod(p)) if implements(plugin, "pre_filter") else None

    def filter(self, name: str, p: dict) -> dict:
        """node name -> (code, message) or None, agreed by the per-node and vectorised forms."""
        plugin = self.plugin(name)
        pod_ = parse_pod(p)
        table = self.table
        n = len(table)
        state = CycleState()
        if implements(plugin, "pre_filter"):
            out = plugin.pre_filter(state, pod_)
            if isinstance(out, Status):
                if out.code == SKIP:
                    return {nm: None for nm in table.names}
                return {nm: outcome(out) for nm in table.names}
            assert out is None or isinstance(out, PreFilterResult)
        per_node = vec = None
        statuses = {}
        if implements(plugin, "filter"):
            statuses = {nm: plugin.filter(state, pod_, table.infos[row]) for row, nm in enumerate(table.names)}
            per_node = {nm: outcome(st) for nm, st in statuses.items()}
        if implements(plugin, "filter_vec"):
            ok_slice = np.asarray(plugin.filter_vec(state, pod_, table, slice(0, n)), dtype=bool)
            ok_rows = np.asarray(plugin.filter_vec(state, pod_, table, np.arange(n)), dtype=bool)
            assert ok_slice.tolist() == ok_rows.tolist(), "filter_vec: slice and index forms differ"
            vec = dict(zip(table.names, ok_slice.tolist()))
        if per_node is None:
            return {nm: None if ok else ("vectorised", "") for nm, ok in vec.items()}
        if vec is not None:
            assert {nm: ok for nm, ok in vec.items()} == {nm: o is None for nm, o in per_node.items()}, \
                f"{name}: vectorised {vec} vs per-node {per_node}"
            if hasattr(plugin, "reasons_vec"):
                failed = np.array([row for row, nm in enumerate(table.names) if not vec[nm]], dtype=np.int64)
                expected = Counter(r for row in failed for r in statuses[table.names[row]].reasons)
                got = plugin.reasons_vec(state, pod_, table, failed) if len(failed) else Counter()
                assert Counter(got) == expected, f"{name}: reasons_vec {got} vs per-node {expected}"
        return per_node

    def passing(self, name: str, p: dict) -> set:
        return {nm for nm, o in self.filter(name, p).items() if o is None}

    def score(self, name: str, p: dict, nodes=None, normalize: bool = True) -> dict:
        """node name -> score after NormalizeScore (raw scores with normalize=False).

        A plugin whose PreScore says Skip scores 0 everywhere: the framework leaves it out."""
        plugin = self.plugin(name)
        pod_ = parse_pod(p)
        table = self.table
        names = list(nodes) if nodes is not None else list(table.names)
        rows = np.array([table.row_of[nm] for nm in names], dtype=np.int64)
        state = CycleState()
        if implements(plugin, "pre_filter"):
            plugin.pre_filter(state, pod_)
        if implements(plugin, "pre_score"):
            st = plugin.pre_score(state, pod_, rows)
            if st is not None and st.code == SKIP:
                return {nm: 0 for nm in names}
        scores = None
        if implements(plugin, "score_vec"):
            scores = np.asarray(plugin.score_vec(state, pod_, table, rows), dtype=np.int64)
        if implements(plugin, "score"):
            per = np.array([plugin.score(state, pod_, table.infos[r]) for r in rows], dtype=np.int64)
            if scores is not None:
                assert scores.tolist() == per.tolist(), f"{name}: score_vec {scores} vs score {per}"
            scores = per
        scores = scores.copy()
        if normalize and implements(plugin, "normalize"):
            plugin.normalize(state, pod_, scores)
        return dict(zip(names, scores.tolist()))
