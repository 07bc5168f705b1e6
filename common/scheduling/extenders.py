"""Scheduler extenders: kube-scheduler's HTTP extender client (pkg/scheduler/extender.go).

An extender is a web service that a scheduler consults over JSON/HTTP at up to four points:
filter and prioritize (the shard's cycle, after its own Filter and with its own Score), preempt
(DefaultPreemption's candidates) and bind (the binder, instead of writing the binding). The
documents are k8s.io/kube-scheduler/extender/v1's, whose Go structs carry no JSON tags: the
keys are the Go field names (`Pod`, `NodeNames`, `FailedNodes`, `Host`, `Score`...). Go decodes
keys case-insensitively, so answers are read the same way: an extender written against either
spelling works with both schedulers.

Both the shard and the binder call extenders, so the client lives here. Calls go through one
urllib3 connection pool per extender (threads share it), time out after httpTimeout, and are
timed into `observe(extender, verb, result, seconds)` (the shardsched_extender_duration_seconds
histogram). Every failure is an ExtenderError naming the extender and the verb; what a failure
means for the pod (skip an ignorable extender, drop its scores, fail the attempt) is the
caller's, as in kube. urllib3 is imported by the first extender made, not with this module:
every shard and binder imports it, few configure an extender, and it cost each 12-24 ms of
CPU at start.
"""
from __future__ import annotations

import os
import ssl
import tempfile
import time

import orjson

from ..config.extenders import decode_pem

#: extender/v1's MaxExtenderPriority: the scores an extender gives are 0..10.
MAX_EXTENDER_PRIORITY = 10
#: The framework's MaxNodeScore: an extender's score is scaled to it, as kube's prioritizeNodes does.
MAX_NODE_SCORE = 100
#: Largest answer read from an extender (a NodeList of every node is far smaller).
MAX_ANSWER_BYTES = 64 << 20
#: Connections kept per extender (binder commit workers and a shard's cycle share them).
POOL_SIZE = 16


class ExtenderError(RuntimeError):
    """An extender call that failed: transport, HTTP status, an undecodable or contradictory
    answer, or the `Error` the extender itself returned."""


def _get(doc, key: str):
    """doc[key] as Go's JSON decoder finds it: the exact key, else one equal ignoring case."""
    if not isinstance(doc, dict):
        return None
    if key in doc:
        return doc[key]
    low = key.lower()
    for k, v in doc.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def requested_resource_names(pod_doc: dict) -> set[str]:
    """Names of every resource a pod's containers and init containers request or limit."""
    spec = (pod_doc or {}).get("spec") or {}
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            res = (c or {}).get("resources") or {}
            for kind in ("requests", "limits"):
                names.update(res.get(kind) or ())
    return names


class Extender:
    """One configured extender (common.config.ExtenderConfig)."""

    def __init__(self, cfg, observe=None, pool: "urllib3.PoolManager | None" = None):
        self.cfg = cfg
        #: kube's Name(): the extender is known by its URL.
        self.name = cfg.url_prefix
        self.managed = frozenset(r.name for r in cfg.managed_resources)
        self.observe = observe or (lambda extender, verb, result, seconds: None)
        self._files: list[str] = []
        self.pool = pool or self._pool()

    # --- what it is for -----------------------------------------------------------------

    @property
    def ignorable(self) -> bool:
        return self.cfg.ignorable

    @property
    def is_binder(self) -> bool:
        return bool(self.cfg.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.cfg.preempt_verb)

    @property
    def filters(self) -> bool:
        return bool(self.cfg.filter_verb)

    @property
    def prioritizes(self) -> bool:
        return bool(self.cfg.prioritize_verb)

    def is_interested(self, pod_doc: dict | None) -> bool:
        """kube's IsInterested: every pod without managedResources, else pods requesting (or
        limiting) one of them in a container or an init container."""
        if not self.managed:
            return True
        return not self.managed.isdisjoint(requested_resource_names(pod_doc or {}))

    # --- the verbs ----------------------------------------------------------------------

    def filter(self, pod_doc: dict, nodes: list) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(names of the nodes that passed, failed node -> message, failed and unresolvable
        node -> message). `nodes` are parsed Nodes (name, raw document). A node name the
        extender returns that was not sent is an error, as in kube."""
        if not self.filters:
            return [n.name for n in nodes], {}, {}
        answer = self._send(self.cfg.filter_verb, "filter", self._args(pod_doc, nodes))
        sent = {n.name for n in nodes}
        names = _get(answer, "NodeNames") if self.cfg.node_cache_capable else None
        if names is None:
            listed = _get(answer, "Nodes")
            items = _get(listed, "items") if listed is not None else None
            names = [((_get(item, "metadata") or {}).get("name")) for item in items or ()] if listed is not None else []
        if not isinstance(names, list):
            self._fail("filter", f"answer's NodeNames is {type(names).__name__}, not a list")
        for name in names:
            if name not in sent:
                self._fail("filter", f"extender {self.name!r} claims a filtered node {name!r} which is not "
                           "found in the input node list")
        return names, _messages(_get(answer, "FailedNodes")), _messages(_get(answer, "FailedAndUnresolvableNodes"))

    def prioritize(self, pod_doc: dict, nodes: list) -> tuple[dict[str, int], int]:
        """({node: score 0..10}, weight); an extender without prioritizeVerb scores every
        node 0 with weight 0, as kube's."""
        if not self.prioritizes:
            return {n.name: 0 for n in nodes}, 0
        answer = self._send(self.cfg.prioritize_verb, "prioritize", self._args(pod_doc, nodes))
        if not isinstance(answer, list):
            self._fail("prioritize", "answer is not a HostPriorityList (a JSON list)")
        scores = {}
        for item in answer:
            host, score = _get(item, "Host"), _get(item, "Score")
            if not isinstance(host, str) or not isinstance(score, int) or isinstance(score, bool):
                self._fail("prioritize", f"HostPriority {item!r} needs a string Host and an integer Score")
            scores[host] = score
        return scores, self.cfg.weight

    def process_preemption(self, pod_doc: dict, victims: dict) -> dict[str, tuple[list[str], int]]:
        """kube's ProcessPreemption. `victims`: node name -> (victim pods' documents, number
        of PDB violations); a nodeCacheCapable extender gets their UIDs only. Returns node ->
        (victim UIDs, PDB violations), the candidates the extender keeps."""
        if self.cfg.node_cache_capable:
            args = {"Pod": pod_doc, "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": _uid(p)} for p in pods], "NumPDBViolations": n}
                for node, (pods, n) in victims.items()}}
        else:
            args = {"Pod": pod_doc, "NodeNameToVictims": {
                node: {"Pods": list(pods), "NumPDBViolations": n} for node, (pods, n) in victims.items()}}
        answer = self._send(self.cfg.preempt_verb, "preempt", args)
        out = {}
        for node, meta in (_get(answer, "NodeNameToMetaVictims") or {}).items():
            pods = _get(meta, "Pods") or ()
            out[node] = ([str(_get(p, "UID") or "") for p in pods], int(_get(meta, "NumPDBViolations") or 0))
        return out

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """kube's extender Bind: the extender writes the binding; raises ExtenderError."""
        self._send(self.cfg.bind_verb, "bind", {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})

    # --- transport ----------------------------------------------------------------------

    def _args(self, pod_doc: dict, nodes: list) -> dict:
        """ExtenderArgs: the pod, and node names (nodeCacheCapable) or a NodeList."""
        if self.cfg.node_cache_capable:
            return {"Pod": pod_doc, "NodeNames": [n.name for n in nodes]}
        return {"Pod": pod_doc, "Nodes": {"metadata": {}, "items": [n.raw for n in nodes]}}

    def url(self, verb: str) -> str:
        return self.cfg.url_prefix.rstrip("/") + "/" + verb

    def _send(self, verb: str, kind: str, args: dict):
        import urllib3  # loaded by _pool (or the caller's pool) already

        url = self.url(verb)
        t0 = time.perf_counter()
        result = "error"
        try:
            try:
                resp = self.pool.request("POST", url, body=orjson.dumps(args), headers={"Content-Type": "application/json"},
                                         timeout=urllib3.Timeout(total=self.cfg.http_timeout_seconds), retries=False,
                                         preload_content=False)
            except urllib3.exceptions.HTTPError as e:
                self._fail(kind, f"{verb} at {url}: {e}")
            try:
                if resp.status != 200:
                    self._fail(kind, f"failed {verb} with extender at URL {url}, code {resp.status}")
                body = resp.read(MAX_ANSWER_BYTES + 1)
            except urllib3.exceptions.HTTPError as e:
                self._fail(kind, f"{verb} at {url}: {e}")
            finally:
                resp.release_conn()
            if len(body) > MAX_ANSWER_BYTES:
                self._fail(kind, f"{verb} at {url}: answer larger than {MAX_ANSWER_BYTES} bytes")
            try:
                answer = orjson.loads(body)
            except orjson.JSONDecodeError as e:
                self._fail(kind, f"{verb} at {url}: answer is not JSON: {e}")
            if isinstance(answer, dict) and _get(answer, "Error"):  # ExtenderFilterResult's, ExtenderBindingResult's
                self._fail(kind, str(_get(answer, "Error")))
            result = "success"
            return answer
        finally:
            self.observe(self.name, kind, result, time.perf_counter() - t0)

    def _fail(self, kind: str, message: str):
        raise ExtenderError(f"extender {self.name} {kind}: {message}")

    def _pool(self) -> "urllib3.PoolManager":
        """A pool with the extender's TLS: kube's makeTransport (enableHTTPS without a CA
        does not verify the extender's certificate; tlsConfig's data wins over its files)."""
        import urllib3  # here, not with the module (see the module's doc)

        tls, kw = self.cfg.tls_config, {}
        ca_data = decode_pem(tls.ca_data) if tls.ca_data else None
        has_ca = bool(tls.ca_file or ca_data)
        insecure = tls.insecure or (self.cfg.enable_https and not has_ca)
        kw["cert_reqs"] = ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED
        if insecure:
            kw["assert_hostname"] = False
        elif ca_data:
            kw["ca_cert_data"] = ca_data.decode()
        elif tls.ca_file:
            kw["ca_certs"] = tls.ca_file
        cert = self._file(tls.cert_data) if tls.cert_data else tls.cert_file
        key = self._file(tls.key_data) if tls.key_data else tls.key_file
        if cert:
            kw["cert_file"], kw["key_file"] = cert, key or None
        if tls.server_name:
            kw["server_hostname"] = tls.server_name
        return urllib3.PoolManager(num_pools=4, maxsize=POOL_SIZE, block=False, **kw)

    def _file(self, data: str) -> str:
        """A private file holding base64 `data`'s bytes (urllib3 loads client keys from files)."""
        fd, path = tempfile.mkstemp(prefix="shardsched-extender-", suffix=".pem")
        with os.fdopen(fd, "wb") as fh:
            fh.write(decode_pem(data) or b"")
        self._files.append(path)
        return path

    def close(self) -> None:
        self.pool.clear()
        for path in self._files:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._files.clear()


def _messages(doc) -> dict[str, str]:
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def _uid(pod_doc: dict) -> str:
    return str(((pod_doc or {}).get("metadata") or {}).get("uid") or "")


def build(configs, observe=None) -> list[Extender]:
    """The clients of a configuration's extenders, in its order."""
    return [Extender(c, observe) for c in configs]
