"""The binder's view of the store (binder/view.py): what it cannot read is skipped and logged,
never fatal."""
from __future__ import annotations

import logging
import uuid

import pytest

from builders import (after_status_write, binder_view, forge_status_hint, node, overflowing_pod, pod,
                      status_write, too_wide_node)


def test_objects_the_binder_cannot_count_are_skipped_and_logged(caplog):
    huge = overflowing_pod()
    huge["spec"]["nodeName"] = "n1"
    with caplog.at_level(logging.WARNING, logger="binder.view"):
        view = binder_view(node("n1"), huge, too_wide_node(), pod("ok", cpu="1"))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "Pod default/huge: spec.containers[1].resources.requests.memory" in warnings[0]
    assert "Node wide: status.allocatable.example.com/many-" in warnings[1]
    assert set(view.nodes) == {"n1"} and set(view.pending) == {"default/ok"}


def test_the_binder_keeps_no_document_of_a_bound_pod_and_shares_equal_labels():
    view = binder_view(node("n1"), pod("a", cpu="1", labels={"app": "web"}, node_name="n1"),
                       pod("b", cpu="1", labels={"app": "web"}, node_name="n1"), pod("p", cpu="1"))
    a, b = view.acc.counted("default/a"), view.acc.counted("default/b")
    assert a.raw is None and b.raw is None
    assert a.labels is b.labels
    assert view.pending_pod("default/p").raw is not None  # a pending pod keeps its document


def test_a_pending_pod_is_parsed_when_a_decision_names_it_and_a_malformed_one_refused_then(redis_url, caplog):
    """Seen failing before: the binder parsed every pending pod of its scheduler as its list
    or watch showed it (thousands before it could serve, at start). Now it holds them as
    the store gave them: a record another writer got wrong (a pod whose memory requests sum
    past int64) is reported only when a decision names it, and that decision is refused as
    for a pod the binder does not hold, with the object and field named; a decision for a
    good pod is bound as before."""
    import json
    import time

    from builders import LiveBinder, decision, forge_pod_event
    from common.store.redis_store import RedisStore

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(node("n1", cpu="4"))
    store.create(pod("ok", cpu="1"))
    huge = overflowing_pod()
    huge["metadata"].update(uid="uid-default-huge", resourceVersion="1")
    b = LiveBinder(store)
    try:
        with caplog.at_level(logging.WARNING, logger="binder.view"):
            forge_pod_event(store, redis_url, "default/huge", "ADDED", json.dumps(huge))
            deadline = time.monotonic() + 120  # generous: the machine may be busy
            while "default/huge" not in b.server.view.pending and not b.server.view.errors:
                assert time.monotonic() < deadline, "the binder's watch did not show the pod"
                time.sleep(0.02)
            assert not b.server.view.errors and not caplog.records
            out = b.decide(decision("default/ok", "n1"), decision("default/huge", "n1"))
            errors = dict(b.server.view.errors)
    finally:
        b.close()
        store.close()
    assert out["default/ok"].bound and store.get("Pod", "default/ok")["spec"]["nodeName"] == "n1"
    assert not out["default/huge"].bound and out["default/huge"].reason.startswith("PodNotFound")
    assert "spec.containers[1].resources.requests.memory" in str(errors["Pod default/huge"])
    assert any("default/huge" in r.getMessage() for r in caplog.records)


@pytest.fixture
def followed(redis_url):
    """A binder view following an embedded Redis whose n1 holds the bound pod a."""
    from binder.view import BinderView
    from builders import SCHEDULER
    from common.store.redis_store import RedisStore

    store = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    store.create(node("n1", cpu="8"))
    store.create(pod("a", "1", node_name="n1", labels={"app": "web"}))
    view = BinderView((SCHEDULER,))
    informer = view.intake.informer(store)
    informer.start()
    assert view.acc.counted("default/a") is not None
    yield store, view, informer
    store.close()


def test_a_status_only_write_of_a_counted_pod_is_taken_from_its_hint_undecoded(followed, redis_url):
    """Seen failing before: the binder decoded every pod event. A Running write of a pod it
    counts is taken from the store's status hint: the counted pod shows the start time a
    full parse gives, and an entry whose document would not decode is taken all the same."""
    from common.model.objects import parse_pod

    store, view, informer = followed
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z", podIP="10.0.0.7")
    informer.sync()
    counted = view.acc.counted("default/a")
    assert counted.start_time == parse_pod(store.get("Pod", "default/a")).start_time is not None
    forge_status_hint(store, redis_url, "default/a", '["Running","2026-01-02T00:00:00Z",""]')
    informer.sync()
    assert store.skipped_records == 0 and informer.skipped == 0 and not view.errors
    assert view.acc.counted("default/a").start_time > counted.start_time


@pytest.mark.parametrize("then", ["finished", "deleted", "relabelled"])
def test_what_follows_a_status_write_taken_from_its_hint_is_applied(followed, then):
    """After a write taken from its hint: a terminal phase frees the pod's room, a deletion
    drops it, a label change written with a status change (no hint) is counted."""
    store, view, informer = followed
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z")
    informer.sync()
    after_status_write(store, "default/a", then)
    informer.sync()
    counted = view.acc.counted("default/a")
    if then == "relabelled":
        assert counted is not None and dict(counted.labels) == {"app": "db"}
    else:
        assert counted is None


def test_a_status_write_taken_from_its_hint_follows_the_events_read_with_it(followed):
    """Seen failing with the hint taken as the store read it: a label change and then a
    status-only write, read in one sync, leave the counted pod with both."""
    from common.model.objects import parse_pod

    store, view, informer = followed
    obj = store.get("Pod", "default/a")
    obj["metadata"]["labels"]["app"] = "db"
    store.update(obj)
    status_write(store, "default/a", startTime="2026-01-01T00:00:00Z")
    informer.sync()
    counted = view.acc.counted("default/a")
    assert dict(counted.labels) == {"app": "db"}
    assert counted.start_time == parse_pod(store.get("Pod", "default/a")).start_time


def test_the_binding_of_a_pending_pod_is_taken_from_its_patch(followed, redis_url):
    """Seen failing before: the binder decoded every binding it committed to read the node,
    phase and nominated node the binding's patch sets. A binding whose document would not
    decode (its uid readable) is taken from the patch alone; the store's own binding shows
    what parsing the bound document gives."""
    from builders import BINDING_PATCH, forge_pod_event
    from common.model.objects import parse_pod

    store, view, informer = followed
    store.create(pod("p", "1"))
    store.create(pod("q", "1"))
    informer.sync()
    assert {"default/p", "default/q"} <= set(view.pending)
    forge_pod_event(store, redis_url, "default/p", "MODIFIED", '{"metadata":{"uid":"uid-default-p"},}', BINDING_PATCH)
    store.bind("default/q", "n1")
    informer.sync()
    assert store.skipped_records == 0 and informer.skipped == 0 and not view.errors
    p, q = view.acc.counted("default/p"), view.acc.counted("default/q")
    assert (p.node_name, p.phase) == ("n1", "Running") and not ({"default/p", "default/q"} & set(view.pending))
    parsed = parse_pod(store.get("Pod", "default/q"))
    assert ((q.node_name, q.phase, q.nominated_node or None, q.labels, q.requests, q.uid)
            == (parsed.node_name, parsed.phase, parsed.nominated_node or None, parsed.labels, parsed.requests, parsed.uid))
