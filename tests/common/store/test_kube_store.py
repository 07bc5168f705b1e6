"""What only the `kube` backend has, on the real kube-apiserver of tests/kube_cluster.py:
410 Gone from the server, watches resumed after the server ends them, PodDisruptionBudgets
refusing an eviction, Leases as real coordination.k8s.io objects, a dead server.
(The behaviour every backend shares is tests/common/store/test_store_contract.py.)"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest

from common.errors import ResourceVersionTooOld, StoreUnavailable
from common.store import kube_store, open_store
from common.store.kube_store import KubeStore
from kube_cluster import free_port, write_kubeconfig
from builders import labelled_api_pod as pod


@pytest.fixture
def store(kube_cluster):
    s = KubeStore(str(kube_cluster.kubeconfig))
    yield s
    for p in s.list("Pod")[0]:
        if p["metadata"]["namespace"] == "default":
            s.delete("Pod", f"default/{p['metadata']['name']}")
    for p in s.list("PodDisruptionBudget")[0]:
        s.delete("PodDisruptionBudget", f"{p['metadata']['namespace']}/{p['metadata']['name']}")
    s.close()


def test_an_old_resource_version_the_watch_cache_holds_is_resumed_from(store):
    """kube-apiserver v1.37's watch cache answers a watch from a resourceVersion it still
    holds (the last 75 s at least) with the events since (v1.33's answered 410 Gone for an
    older list's version): a resumed watch misses nothing. (410 Gone and the relist it
    causes: the next test.) Not from rv 1 of the session's server, as this test first did:
    once the session's tests have written more pod events than the cache's window holds, the
    oldest go (the fresh clone of 2026-11-27 13:05 failed so: "too old resource version: 1
    (1009)")."""
    _, older = store.list("Pod")
    store.create(pod("before-the-list"))
    _, rv = store.list("Pod")
    store.create(pod("after-the-list"))
    names = [e.obj["metadata"]["name"] for e in store.poll(older, timeout=5, kinds=["Pod"])]
    assert [n for n in names if n.endswith("-the-list")] == ["before-the-list", "after-the-list"]
    assert [e.obj["metadata"]["name"] for e in store.poll(rv, timeout=5, kinds=["Pod"])] == ["after-the-list"]


def test_each_kind_is_watched_from_its_own_lists_version(store, kube_cluster):
    """Each kind has its own watch cache on the API server, which may start after another
    kind's list (a CRD's starts when it is established): watched from the oldest list's
    version, such a kind got 410 Gone and the informer relisted everything at each start."""
    _, pod_rv = store.list("Pod")
    kube_cluster.kubectl("delete", "crd", "podgroups.scheduling.x-k8s.io", "--wait=true")
    kube_cluster.install_crds()  # a new watch cache for PodGroups, from now on
    _, group_rv = store.list("PodGroup")
    with pytest.raises(ResourceVersionTooOld):
        store.poll(pod_rv, timeout=5, kinds=["Pod", "PodGroup"])
    store.create(pod("after-the-lists"))
    events = store.poll(pod_rv, timeout=5, kinds=["Pod", "PodGroup"],
                        positions={"Pod": pod_rv, "PodGroup": group_rv})
    assert [e.obj["metadata"]["name"] for e in events] == ["after-the-lists"]


def test_watch_resumes_when_the_server_ends_the_stream(store, monkeypatch):
    """With a 1 s server-side watch timeout the stream ends again and again; resuming from
    the last resourceVersion seen loses and repeats nothing."""
    monkeypatch.setattr(kube_store, "_WATCH_S", 1)
    _, rv = store.list("Pod")
    seen = []
    for i in range(6):
        store.create(pod(f"r{i}"))
        time.sleep(0.5)
        events = store.poll(rv, timeout=2, kinds=["Pod"])
        rv = events[-1].rv
        seen += [e.obj["metadata"]["name"] for e in events]
    assert seen == [f"r{i}" for i in range(6)]


def test_bindings_still_on_their_way_do_not_hold_back_a_reader(kube_cluster, store, monkeypatch):
    """Read-your-writes waits for the writes answered before a read began; a binder always
    has bindings on their way (the read waited for each, up to the request timeout, and
    new ones kept coming: a binder's view froze). Here a binding is always in flight, each
    slowed down on its way, while another client creates a pod: the read returns it."""
    reader = KubeStore(str(kube_cluster.kubeconfig), request_timeout=600)
    _, rv = reader.list("Pod")
    call, stop = reader._call, threading.Event()

    def slow(method, path, *args, **kwargs):
        if path.endswith("/binding"):
            time.sleep(0.5)
        return call(method, path, *args, **kwargs)
    monkeypatch.setattr(reader, "_call", slow)

    def bind_forever():
        i = 0
        while not stop.is_set():
            i += 1
            reader.bind_many([(f"default/ghost-{i}", "nowhere", None)])
    binding = threading.Thread(target=bind_forever, daemon=True)
    binding.start()
    got = []
    polling = threading.Thread(target=lambda: got.extend(reader.poll(rv, timeout=60, kinds=["Pod"])), daemon=True)
    try:
        time.sleep(1)
        polling.start()
        store.create(pod("created-meanwhile"))
        polling.join(180)
        assert not polling.is_alive(), "the read waited for bindings still on their way"
        assert [e.obj["metadata"]["name"] for e in got] == ["created-meanwhile"]
    finally:
        stop.set()
        binding.join(30)
        reader.close()


def test_a_list_read_page_by_page_misses_and_repeats_nothing(store, monkeypatch):
    """list_iter reads pages of _LIST_PAGE objects as the reader reaches them (here 2 at a
    time), all of one list at the first page's resourceVersion: a pod created between pages
    is not listed but comes through the watch from that version."""
    monkeypatch.setattr(kube_store, "_LIST_PAGE", 2)
    monkeypatch.setattr(kube_store, "_WHOLE_FROM_CACHE", 3)  # a cached list this long is paged too
    for i in range(5):
        store.create(pod(f"paged-{i}"))
    call, pages = store._call, []

    def counted(method, path, *args, **kwargs):
        if method == "GET" and path == "/api/v1/pods":
            pages.append(path)
        return call(method, path, *args, **kwargs)
    monkeypatch.setattr(store, "_call", counted)
    for cached in (False, True):
        pages.clear()
        objs, rv = store.list_iter("Pod", cached=cached)
        names = [next(objs)["metadata"]["name"]]
        store.create(pod(f"between-{int(cached)}"))
        names += [o["metadata"]["name"] for o in objs]
        assert sorted(n for n in names if n.startswith("paged-")) == [f"paged-{i}" for i in range(5)]
        assert f"between-{int(cached)}" not in names and len(names) == len(set(names))
        later = [e.obj["metadata"]["name"] for e in store.poll(rv, timeout=5, kinds=["Pod"])]
        assert f"between-{int(cached)}" in later
        assert len(pages) >= 3, "a list read whole, not in pages"  # 5 pods and more, 2 a page


def test_a_small_cached_list_is_read_whole_from_the_watch_cache(store, monkeypatch):
    """An informer's list (`cached`) of at most _WHOLE_FROM_CACHE objects is one answer of the
    API server's watch cache (resourceVersion=0, as client-go lists) after a one-object
    consistent list that counts them: paged consistent lists came from etcd on the test
    control plane (its etcd is too old for the cache to serve them), three times the API
    server's CPU, four processes at once at start-up. Nothing is missed or repeated, and what
    comes after the list comes through the watch."""
    for i in range(5):
        store.create(pod(f"small-{i}"))
    call, queries = store._call, []

    def recorded(method, path, *args, **kwargs):
        if method == "GET" and path == "/api/v1/pods":
            queries.append(dict(kwargs.get("query") or []))
        return call(method, path, *args, **kwargs)
    monkeypatch.setattr(store, "_call", recorded)
    objs, rv = store.list_iter("Pod", cached=True)
    store.create(pod("small-after"))
    names = [o["metadata"]["name"] for o in objs]
    assert sorted(n for n in names if n.startswith("small-")) == [f"small-{i}" for i in range(5)]
    assert len(names) == len(set(names))
    assert queries[-1] == {"resourceVersion": "0"} and len(queries) == 2
    later = [e.obj["metadata"]["name"] for e in store.poll(rv, timeout=5, kinds=["Pod"])]
    assert "small-after" in later

    queries.clear()
    monkeypatch.setattr(kube_store, "_WHOLE_FROM_CACHE", 3)  # more than that: consistent pages
    objs, _ = store.list_iter("Pod", cached=True)
    assert len({o["metadata"]["name"] for o in objs}) == len(names) + 1
    assert all(q.get("resourceVersion") != "0" for q in queries)


def test_pods_and_nodes_come_without_managed_fields_and_otherwise_whole(store):
    """No role reads managedFields, half of what decoding a pod cost: the store cuts them out
    of pods and nodes before decoding, in the watch, lists and gets alike; everything else is
    as the API server has it."""
    _, rv = store.list("Pod")
    store.create(pod("lean", labels={"app": "x"}))
    whole = store._call("GET", "/api/v1/namespaces/default/pods/lean")
    assert whole["metadata"]["managedFields"]
    expected = dict(whole, metadata={k: v for k, v in whole["metadata"].items() if k != "managedFields"})
    [event] = [e for e in store.poll(rv, timeout=5, kinds=["Pod"]) if e.obj["metadata"]["name"] == "lean"]
    listed = [o for o in store.list_iter("Pod")[0] if o["metadata"]["name"] == "lean"]
    assert event.obj == expected and listed == [expected] and store.get("Pod", "default/lean") == expected
    assert [o for o in store.list("Pod")[0] if o["metadata"]["name"] == "lean"] == [expected]
    assert all("managedFields" not in n["metadata"] for n in store.list_iter("Node")[0])


def test_an_eviction_refused_by_a_disruption_budget_is_an_outcome(store):
    uid = store.create(pod("guarded", {"app": "guarded"}))["metadata"]["uid"]
    store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": "guard", "namespace": "default"},
                  "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    store.bind("default/guarded", "n1", uid)
    # play kubelet: the API server lets a Pending pod go regardless of budgets
    store._call("PATCH", "/api/v1/namespaces/default/pods/guarded/status", content_type="application/merge-patch+json",
                body={"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    assert store.evict_many([("default/guarded", uid)]) == ["DisruptionBudget"]
    assert store.get("Pod", "default/guarded") is not None


def test_leases_are_coordination_leases_and_expire_by_renew_time(store):
    store.put_lease("binder", "7", "10.0.0.7:7300", ttl_s=15)
    lease = store._call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{store.lease_namespace}/leases/"
                               "shardsched-binder-7")
    assert lease["spec"]["holderIdentity"] == "10.0.0.7:7300"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert store.list_leases("binder") == {"7": "10.0.0.7:7300"}
    # another writer (say an older version) renewed it long ago, without our annotation
    lease["metadata"]["annotations"] = {}
    lease["spec"]["renewTime"] = "2020-01-01T00:00:00.000000Z"
    store._call("PUT", f"/apis/coordination.k8s.io/v1/namespaces/{store.lease_namespace}/leases/"
                       "shardsched-binder-7", body=lease)
    assert store.list_leases("binder") == {}
    store.drop_lease("binder", "7")
    store.drop_lease("binder", "7")  # already gone: no error


def test_the_leader_lease_is_the_lease_named_after_the_resource_name(store):
    """client-go's convention, so that RBAC can grant exactly that name: the Lease is
    `leaderElection.resourceName`, its holderIdentity the leader; a takeover counts a
    transition; the old leader's release never removes the new holder's lease."""
    from common.runtime.leader_election import ELECTION_ROLE

    name = "shardsched-dispatcher-test"
    path = f"/apis/coordination.k8s.io/v1/namespaces/{store.lease_namespace}/leases/{name}"
    try:
        # 2 s: the GET and the second attempt fit inside it on a busy machine
        assert store.acquire_lease(ELECTION_ROLE, name, "10.0.0.1:7100", 2.0)
        lease = store._call("GET", path)
        assert lease["spec"]["holderIdentity"] == "10.0.0.1:7100" and lease["spec"]["leaseTransitions"] == 0
        assert not store.acquire_lease(ELECTION_ROLE, name, "10.0.0.2:7100", 2.0)
        time.sleep(2.2)
        assert store.acquire_lease(ELECTION_ROLE, name, "10.0.0.2:7100", 15)
        assert store._call("GET", path)["spec"]["leaseTransitions"] == 1
        store.drop_lease(ELECTION_ROLE, name, "10.0.0.1:7100")
        assert store.list_leases(ELECTION_ROLE)[name] == "10.0.0.2:7100"
    finally:
        store.drop_lease(ELECTION_ROLE, name)


def test_an_unreachable_server_is_one_clear_error_and_never_hangs(tmp_path, kube_cluster):
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, f"https://127.0.0.1:{free_port()}", kube_cluster.dir / "ca.crt", "token")
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match="cannot reach the API server at https://127.0.0.1"):
        open_store(f"kube://{path}", request_timeout=2)
    assert time.monotonic() - start < 10
    with pytest.raises(StoreUnavailable, match="cannot load kubeconfig"):
        open_store(f"kube://{tmp_path}/missing")


def test_client_qps_and_burst_pace_requests_to_the_api_server(kube_cluster):
    """store.qps / store.burst (a KubeSchedulerConfiguration's clientConnection): after the
    burst, requests go out at qps at most, as client-go's token bucket sends them."""
    s = open_store(f"kube://{kube_cluster.kubeconfig}", qps=20, burst=2)
    try:
        start = time.monotonic()
        for _ in range(12):
            s.list("PriorityClass")
        # the store's /version call and the first list take the burst; 11 lists wait 1/20 s each
        assert time.monotonic() - start >= 0.5
    finally:
        s.close()


class _FakeApiServer:
    """A stand-in API server on loopback, for what the real one will not do on demand: each GET
    is answered with `answer(path) -> (status, body)`; the paths asked for are kept, and
    `kubeconfig(dir)` writes a kubeconfig that points at it."""

    def __init__(self, answer):
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                paths.append(self.path)
                code, body = answer(self.path)
                data = orjson.dumps(body)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def kubeconfig(self, directory) -> str:
        path = directory / "kubeconfig"
        path.write_text(orjson.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{self.httpd.server_address[1]}"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}).decode())
        return str(path)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _one_page_then_expired(path: str) -> tuple[int, dict]:
    """One paged list: /version, then the first page of pods (one pod and a continue token),
    and 410 Expired for the continue request, as an API server answers once etcd has
    compacted past the list's revision."""
    if path.startswith("/api/v1/pods") and "continue=" in path:
        return 410, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
                     "message": "The provided continue parameter is too old to display a consistent list result."}
    if path.startswith("/api/v1/pods"):
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "100", "continue": "page-2"},
                     "items": [{**pod("first"), "metadata": {**pod("first")["metadata"], "resourceVersion": "90"}}]}
    return 200, {"major": "1", "minor": "37"}


def test_a_paged_list_whose_continue_token_expired_says_the_caller_must_list_again(tmp_path):
    """An informer relists on ResourceVersionTooOld; the API server's 410 for an expired
    continue token came out as an ApiError, which nothing above the store handles."""
    server = _FakeApiServer(_one_page_then_expired)
    try:
        store = KubeStore(server.kubeconfig(tmp_path), request_timeout=5)
        objs, rv = store.list_iter("Pod")
        assert rv == "100" and next(objs)["metadata"]["name"] == "first"
        with pytest.raises(ResourceVersionTooOld, match="Pod.*continue.*Expired"):
            next(objs)
        assert [p for p in server.paths if "continue=page-2" in p]
        store.close()
    finally:
        server.close()


def _compact_etcd(etcd_url: str) -> int:
    """Compact the control plane's etcd at its current revision (etcd's JSON gateway: Debian's
    etcd ships no etcdctl); returns the revision."""
    import base64
    import urllib.request

    def post(path, body):
        req = urllib.request.Request(etcd_url + path, data=orjson.dumps(body),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return orjson.loads(resp.read())
    rev = int(post("/v3/kv/range", {"key": base64.b64encode(b"/registry/none").decode()})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": rev, "physical": True})
    return rev


def test_an_informer_lists_again_when_etcd_is_compacted_under_its_paged_list(store, kube_cluster, monkeypatch):
    """On the real API server: a paged list (500 pods a round trip; one here) whose revision
    etcd compacts while it is read gets 410 Expired for its next page, unless the API server
    can serve the page from its watch cache (since v1.34 it keeps snapshots for 75 s, usable
    once its cache of pods has seen up to the list's revision: here a Lease is written after
    the pods, so the list's revision is none of theirs, and this etcd sends no progress
    notifications). The informer lists again and follows. (That it first forgets what the
    cut list delivered: tests/common/runtime/test_informer.py.)"""
    from common.runtime.informer import Informer

    monkeypatch.setattr(kube_store, "_LIST_PAGE", 1)
    monkeypatch.setattr(kube_store, "_WHOLE_FROM_CACHE", 0)  # paged, not read whole from the cache
    names = [f"expiring-{i}" for i in range(3)]
    for name in names:
        store.create(pod(name))
    # A pod event of another test's pods (kwok still writing their statuses) after the list's
    # revision would let the cache serve the pages after all: then the list is tried again.
    for _ in range(3):
        kept, relists, compacted = {}, [], []

        def on_event(type_, kind, obj):
            meta = obj["metadata"]
            if meta["namespace"] != "default" or not meta["name"].startswith("expiring-"):
                return
            if type_ == "DELETED":
                kept.pop(meta["name"], None)
                return
            kept[meta["name"]] = obj
            if not compacted:  # the first pod delivered: etcd compacted past the list's revision
                store.put_lease("expiring-list", "0", "nowhere", 30)
                compacted.append(_compact_etcd(kube_cluster.etcd_url))

        def on_relist():
            relists.append(sorted(kept))
            kept.clear()
        store.put_lease("expiring-list", "0", "nowhere", 30)
        informer = Informer(store, ("Pod",), on_event, on_relist)
        informer.start()
        if relists:
            break
    assert compacted and len(relists) == 1 and 1 <= len(relists[0]) < len(names)  # (a page may be read ahead)
    assert sorted(kept) == names
    store.create(pod("expiring-after"))
    deadline = time.monotonic() + 30
    while "expiring-after" not in kept:
        assert time.monotonic() < deadline, "the informer did not follow after listing again"
        informer.sync(timeout=0.5)


def test_a_pods_status_only_write_comes_with_its_status_hint(store):
    """On the real API server: a kubelet's status write of a pod the watch saw just before
    carries the hint the binder and the shards take it from (common.store.kube_status_writes),
    so they need not decode it; a write that changes anything else carries none."""
    _, rv = store.list("Pod")
    store.create(pod("hinted"))
    store.bind("default/hinted", "node-a")
    obj = store.get("Pod", "default/hinted")
    obj["status"] = {**(obj.get("status") or {}), "phase": "Running", "startTime": "2026-11-27T09:00:00Z"}
    store.update_status(obj)
    obj = store.get("Pod", "default/hinted")
    obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "relabelled": "yes"}
    store.update(obj)
    events, deadline = [], time.monotonic() + 30
    while len(events) < 4:
        assert time.monotonic() < deadline, f"only {len(events)} of the pod's 4 events came"
        events += [e for e in store.poll(events[-1].rv if events else rv, timeout=1, kinds=["Pod"])
                   if e.key == "default/hinted"]
    created, bound, running, relabelled = events
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"]
    assert created.status is None and bound.status is None and relabelled.status is None
    assert orjson.loads(running.status) == ["Running", "2026-11-27T09:00:00Z", ""]
    assert running.obj["status"]["phase"] == "Running"  # the document still decodes for who wants it


def _watches_refused(path: str) -> tuple[int, dict]:
    """An API server whose pod list is empty and whose every watch is refused with a 500."""
    if "watch=true" in path:
        return 500, {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd is down"}
    return 200, {"kind": "PodList", "metadata": {"resourceVersion": "5"}, "items": []}


def test_a_watch_that_keeps_failing_is_logged_naming_its_kind_and_the_error(tmp_path, caplog):
    """A broken watch is retried with a growing pause, and said: the first failure of a
    streak and then the 10th, 100th ... are logged (a dead API server is not a log line a
    second per kind), each with the kind, the count and the server's answer. It was retried
    and never logged before 2026-11-27."""
    server = _FakeApiServer(_watches_refused)
    store = KubeStore(server.kubeconfig(tmp_path))
    watches = lambda: sum(1 for p in server.paths if "watch=true" in p)
    try:
        with caplog.at_level("WARNING", logger="common.store.kube_store"):
            _, rv = store.list("Pod")
            deadline = time.monotonic() + 120
            while watches() < 3 and time.monotonic() < deadline:
                assert store.poll(rv, timeout=0.2, kinds=["Pod"]) == []
    finally:
        store.close()
        server.close()
    served = watches()
    assert served >= 3
    said = [r.getMessage() for r in caplog.records if "watch of Pod" in r.getMessage()]
    assert 1 <= len(said) <= sum(1 for n in (1, 10, 100) if n <= served), said
    assert "failed 1 time in a row" in said[0] and "500 InternalError: etcd is down" in said[0], said


def _native_groups_not_served(path: str) -> tuple[int, dict]:
    """An API server without kube's own PodGroups (the feature gate off): 404 for them."""
    if path.startswith("/apis/scheduling.k8s.io"):
        return 404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "the server could not find the requested resource"}
    return 200, {"kind": "PodList", "metadata": {"resourceVersion": "5"}, "items": []}


def test_the_watch_of_a_kind_the_server_does_not_serve_is_retried_without_a_warning_each_streak(tmp_path, caplog):
    """An optional kind the server does not serve is said once ("does not serve ... until it
    does") and its watch keeps asking, to pick it up once served: each refusal is expected,
    and is not logged again as a failing watch (the 1st, 10th, 100th ... of a streak, every
    2 s for as long as the process runs, as kube_vs's logs showed on 2026-11-27)."""
    from common.model.podgroup import NATIVE_KIND

    server = _FakeApiServer(_native_groups_not_served)
    store = KubeStore(server.kubeconfig(tmp_path))
    refused = lambda: sum(1 for p in server.paths if p.startswith("/apis/scheduling.k8s.io") and "watch=true" in p)
    try:
        with caplog.at_level("WARNING", logger="common.store.kube_store"):
            _, rv = store.list(NATIVE_KIND)
            deadline = time.monotonic() + 120
            while refused() < 3 and time.monotonic() < deadline:
                assert store.poll(rv, timeout=0.2, kinds=[NATIVE_KIND]) == []
    finally:
        store.close()
        server.close()
    assert refused() >= 3
    said = [r.getMessage() for r in caplog.records]
    assert [m for m in said if "does not serve" in m] and not [m for m in said if "the watch of" in m], said
