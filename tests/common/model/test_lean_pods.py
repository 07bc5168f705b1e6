"""What a process keeps of a running pod (common.model.objects.Pod, common.model.interning):
no document for a bound pod parsed lean, shared read-only labels, annotations and owner
references, and status-only updates judged (and applied) on what the pod keeps."""
from __future__ import annotations

import copy

import pytest

from common.errors import ObjectError
from common.model.interning import FrozenMap
from common.model.objects import Pod, parse_pod, parse_priority_class
from common.runtime.intake import status_hinted, status_update
from builders import pod


def running(name: str, node: str = "n1", **kw) -> dict:
    d = pod(name, "100m", labels={"app": "web", "tier": "front"}, node_name=node, owner="ReplicaSet/web-abc",
            phase="Running", **kw)
    d["metadata"]["annotations"] = {"team": "a"}
    return d


def test_a_bound_pod_parsed_lean_keeps_no_document_a_pending_one_and_a_plain_parse_do():
    assert parse_pod(running("a"), lean=True).raw is None
    assert parse_pod(running("a")).raw is not None  # tools and the CLI read the document
    pending = pod("p", "100m")
    assert parse_pod(pending, lean=True).raw is pending  # its queue and cycle read it


def test_equal_labels_annotations_and_owners_of_two_pods_are_one_read_only_object():
    a, b = parse_pod(running("a"), lean=True), parse_pod(running("b", "n2"), lean=True)
    assert a.labels is b.labels and a.labels == {"app": "web", "tier": "front"}
    assert a.annotations is b.annotations
    assert a.owner_refs is b.owner_refs and a.controller().name == "web-abc"
    assert a.namespace is b.namespace
    assert isinstance(a.labels, dict) and isinstance(a.labels, FrozenMap)
    with pytest.raises(TypeError):
        a.labels["app"] = "db"
    with pytest.raises(TypeError):
        a.labels.update(app="db")
    assert copy.deepcopy(a.labels) is a.labels and dict(a.labels) == a.labels
    other = parse_pod(pod("c", "100m", labels={"app": "db"}, node_name="n1"), lean=True)
    assert other.labels is not a.labels and other.labels == {"app": "db"}


def test_a_status_only_update_of_a_bound_pod_is_recognised_on_what_it_keeps():
    d = running("a")
    known = parse_pod(d, lean=True)
    update = copy.deepcopy(d)
    update["status"]["podIP"] = "10.0.0.9"
    update["metadata"]["resourceVersion"] = "99"
    assert known.status_only(update)
    # nothing it keeps changed: the same object, nothing allocated or kept for the update
    assert status_update(known, update) is known
    update["status"]["phase"] = "Failed"
    assert not known.status_only(update)  # terminal now: it frees its room
    for change in (lambda u: u["spec"].update(priority=5),
                   lambda u: u["spec"].update(nodeName="n2"),
                   lambda u: u["metadata"].update(labels={"app": "db"}),
                   lambda u: u["metadata"].update(annotations={}),
                   lambda u: u["metadata"].update(uid="other"),
                   lambda u: u["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z")):
        u = copy.deepcopy(d)
        change(u)
        assert not known.status_only(u)


def test_a_status_update_that_changes_what_the_pod_keeps_gives_a_new_bound_pod_without_a_document():
    d = running("a")
    d["status"]["phase"] = "Pending"
    known = parse_pod(d, lean=True)
    update = copy.deepcopy(d)
    update["status"].update(phase="Running", startTime="2026-01-01T00:00:10Z")
    update["metadata"]["resourceVersion"] = "7"
    new = status_update(known, update)
    assert new is not known and new.phase == "Running" and new.resource_version == ""  # (none kept)
    assert new.raw is None and new.labels is known.labels and new.requests is known.requests
    assert known.phase == "Pending"  # the kept version is never changed in place


def test_a_status_hint_gives_the_pod_the_same_write_read_in_full_gives():
    """The hint path (a status-only write taken from the store's status hint) and the full
    read of the same write (status_update) keep the same pod; a start time that is not one
    is declined by the hint (the write is then read in full, which names the field)."""
    d = running("a")
    d["status"]["phase"] = "Pending"
    known = parse_pod(d, lean=True)
    for phase, started, nominated in (("Running", "2026-01-01T00:00:10Z", ""), ("", "", "n2"),
                                      ("Running", "", ""), ("Pending", "2026-01-01T00:00:10Z", "n3")):
        update = copy.deepcopy(d)
        update["status"].update(phase=phase, startTime=started, nominatedNodeName=nominated)
        full = status_update(known, update)
        hinted = status_hinted(known, f'["{phase}","{started}","{nominated}"]'.encode())
        assert full is not None and hinted is not None
        assert [getattr(hinted, n) for n in Pod.__slots__] == [getattr(full, n) for n in Pod.__slots__]
        assert (hinted is known) == (full is known)
    assert status_hinted(known, b'["Running","yesterday",""]') is None
    with pytest.raises(ObjectError, match="status.startTime"):
        known.with_status({"spec": {"nodeName": "n1"}, "status": {"startTime": "yesterday"}})
    assert known.phase == "Pending"  # never changed in place


def test_the_copies_of_a_bound_pod_carry_every_slot_of_it():
    """Pod._copy names the slots one by one: one added to Pod and not to it would be lost
    by every binding and status write a process applies."""
    known = parse_pod(running("a"), lean=True)
    for n in Pod.__slots__:
        if n not in ("node_name", "phase", "start_time", "nominated_node", "raw", "resource_version"):
            setattr(known, n, object())  # a value nothing else holds
    copies = (known.bound_copy({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
              known.with_status({"spec": {"nodeName": "n1"}, "status": {"startTime": "2026-01-01T00:00:10Z"}}),
              known.with_hinted_status("Running", 5.0, None))
    for c in copies:
        assert c is not known
        assert all(getattr(c, n) is getattr(known, n) for n in Pod.__slots__
                   if n not in ("phase", "start_time", "nominated_node"))


def test_the_pods_of_one_spec_share_what_it_parses_to_and_keep_their_own_identity():
    """Replicas hold one SharedSpec between them (requests, tolerations, terms, ...), read
    through the pod's attributes; name, uid, node, priority and times stay each pod's own.
    A bound pod parsed lean keeps no resourceVersion, a pending one does (its decision
    carries it)."""
    a, b = parse_pod(running("a", "n1"), lean=True), parse_pod(running("b", "n2"), lean=True)
    assert a.shared is b.shared
    assert a.requests is b.requests and a.tolerations is b.tolerations and a.scheduler_name == "shardsched"
    assert (a.name, a.key, a.node_name) == ("a", "default/a", "n1")
    assert (b.name, b.key, b.node_name) == ("b", "default/b", "n2")
    assert a.resource_version == "" and b.resource_version == ""
    pending = pod("p", "100m")
    pending["metadata"]["resourceVersion"] = "12"
    assert parse_pod(pending, lean=True).resource_version == "12"
    other = running("c")
    other["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"
    assert parse_pod(other, lean=True).shared is not a.shared


def test_a_pods_own_priority_is_resolved_apart_from_its_spec():
    """resolve_priority sets the pod's priority, never the SharedSpec its replicas share."""
    from common.model.objects import resolve_priority

    d = running("a")
    d["spec"].pop("priority", None)
    d["spec"]["priorityClassName"] = "high"
    a = parse_pod(d, lean=True)
    a.priority = None
    resolve_priority(a, {"high": type("PC", (), {"value": 1000, "preemption_policy": "Never", "global_default": False})()})
    assert a.priority == 1000 and a.preemption_policy == "Never"
    b = parse_pod(copy.deepcopy(d), lean=True)
    assert b.shared is a.shared and a.shared.priority is None and b.priority == 0


def _kept(p) -> dict:
    """What a parsed pod holds, slot by slot (the shared spec by identity)."""
    return {name: getattr(p, name) for name in type(p).__slots__}


def _variants() -> list[dict]:
    """Bound pods in the shapes a list brings: owners, annotations, times, priorities,
    deletion, a nomination, an absent status."""
    base = running("v")
    base["status"]["startTime"] = "2026-01-02T03:04:05Z"
    base["metadata"]["creationTimestamp"] = "2026-01-02T03:00:00Z"
    out = [base]
    for change in (lambda d: d["metadata"].update(namespace="", annotations=None, ownerReferences=None),
                   lambda d: d["spec"].update(priorityClassName="high"),
                   lambda d: d["spec"].update(priorityClassName="system-node-critical"),
                   lambda d: d["metadata"].update(deletionTimestamp="2026-01-02T03:05:00Z"),
                   lambda d: d["status"].update(phase="", nominatedNodeName="n9"),
                   lambda d: d.pop("status"),
                   lambda d: d["metadata"]["ownerReferences"][0].update(uid=None, controller=None)):
        d = copy.deepcopy(base)
        change(d)
        out.append(d)
    return out


@pytest.mark.parametrize("i", range(8))
def test_a_bound_pod_read_lean_holds_what_the_full_parse_of_it_holds(i):
    """Every role lists every running pod at start; the lean reading skips the per-field
    error paths, never a check, and keeps exactly what the full parse keeps."""
    classes = {"high": parse_priority_class(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000})}
    d = _variants()[i]
    full = parse_pod(copy.deepcopy(d), classes, lean=True)  # first: parses the spec (memo)
    again = parse_pod(copy.deepcopy(d), classes, lean=True)  # the lean reading
    assert _kept(again) == _kept(full) and again.shared is full.shared
    assert again.raw is None and again.resource_version == ""


@pytest.mark.parametrize("change, field", [
    (lambda d: d["metadata"].update(namespace=0), "metadata.namespace"),
    (lambda d: d["metadata"].update(labels=[]), "metadata.labels"),
    (lambda d: d["metadata"]["labels"].update(app=3), "metadata.labels.app"),
    (lambda d: d["metadata"].update(annotations={"a": None}), "metadata.annotations.a"),
    (lambda d: d["metadata"].update(uid=7), "metadata.uid"),
    (lambda d: d["metadata"].update(ownerReferences={}), "metadata.ownerReferences"),
    (lambda d: d["metadata"]["ownerReferences"][0].pop("kind"), "metadata.ownerReferences[0].kind"),
    (lambda d: d["metadata"].update(creationTimestamp="yesterday"), "metadata.creationTimestamp"),
    (lambda d: d["status"].update(startTime=12), "status.startTime"),
    (lambda d: d["status"].update(phase=["Running"]), "status.phase"),
    (lambda d: d.update(status=[]), "status"),
    (lambda d: d["spec"].update(priorityClassName="nope"), "spec.priorityClassName"),
])
def test_a_bound_pod_the_lean_reading_cannot_take_is_refused_naming_its_field(change, field):
    """A poison record among the running pods is refused as the full parse refuses it
    (the object and the field named), also when its spec was parsed before."""
    parse_pod(running("ok"), {}, lean=True)  # the spec is known
    d = running("bad")
    change(d)
    with pytest.raises(ObjectError) as e:
        parse_pod(d, {}, lean=True)
    assert e.value.obj == "Pod default/bad" and e.value.field == field
