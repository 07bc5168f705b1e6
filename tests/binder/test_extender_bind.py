"""A bindVerb extender (kube's extender Bind): the binder judges each decision first, then the
extender writes the binding instead of the binder; a failed call leaves the pod unbound."""
from __future__ import annotations

import time

from builders import LiveBinder, TestExtender, decision, make_config, node, pod
from common import config
from common.store.memory import MemoryStore


def binder_with(server, store, **fields) -> LiveBinder:
    cfg = make_config()
    ext = config.ExtenderConfig.of({"urlPrefix": server.url, "bindVerb": "bind", **fields})
    return LiveBinder(store, cfg.replace(extenders=(ext,)))


def test_the_extender_binds_what_the_binder_judged_fit():
    store = MemoryStore()
    store.create(node("n1", cpu="2"))
    store.create(pod("fits", cpu="1"))
    store.create(pod("too-big", cpu="3"))
    server = TestExtender(bind_store=lambda b: store.bind(f"{b['PodNamespace']}/{b['PodName']}", b["Node"], b["PodUID"]))
    binder = binder_with(server, store)
    try:
        binder.sync()
        got = binder.decide(decision("default/fits", "n1"), decision("default/too-big", "n1"))
        assert got["default/fits"].bound and not got["default/too-big"].bound
        assert "Insufficient cpu" in got["default/too-big"].reason
        uid = store.get("Pod", "default/fits")["metadata"]["uid"]
        assert server.calls == [("bind", {"PodName": "fits", "PodNamespace": "default", "PodUID": uid, "Node": "n1"})]
        assert store.get("Pod", "default/fits")["spec"]["nodeName"] == "n1"
    finally:
        binder.close()
        server.close()


def test_a_failed_extender_bind_is_no_binding_and_pods_it_does_not_manage_go_to_the_store():
    store = MemoryStore()
    store.create(node("n1", cpu="4"))
    store.create(pod("licensed", cpu="1", extra={"example.com/licence": "1"}))
    store.create(pod("plain", cpu="1"))
    store.create(node("n2", cpu="4", extra={"example.com/licence": "4"}))
    server = TestExtender()
    server.error = "licence server down"
    binder = binder_with(server, store, managedResources=[{"name": "example.com/licence"}])
    try:
        binder.sync()
        got = binder.decide(decision("default/licensed", "n2"), decision("default/plain", "n1"))
        assert not got["default/licensed"].bound
        assert "licence server down" in got["default/licensed"].reason
        assert got["default/plain"].bound and store.get("Pod", "default/plain")["spec"]["nodeName"] == "n1"
        assert [args["PodName"] for _, args in server.calls] == ["licensed"]
        assert not store.get("Pod", "default/licensed")["spec"].get("nodeName")
        deadline = time.monotonic() + 30
        while binder.server.counters["extender_bind_errors"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        binder.close()
        server.close()
