"""common.runtime.intake: roles declare the kinds they keep; the intake applies a store's events to
them by kind, reports what cannot be read, and lets a poison record be skipped and counted
while the others apply."""
from __future__ import annotations

import logging

import pytest

from builders import api_pod, node, overflowing_pod, pdb, priority_class, pvc
from common.model.changes import node_unchanged
from common.runtime.intake import Intake, Kind, same_version, status_update, volume_kinds
from common.model.objects import parse_object
from common.store.memory import MemoryStore
from common.scheduling.volumes import VolumeState


def test_the_watch_kinds_come_from_the_declarations_in_create_order():
    intake = Intake([Kind("Pod", keep={}), Kind("Node", keep={}), Kind("PriorityClass", keep={}),
                     Kind("Pod", handle=lambda type_, obj: None)])
    assert intake.kinds == ("PriorityClass", "Node", "Pod")
    assert intake.informer(MemoryStore()).kinds == intake.kinds


def test_kept_objects_are_parsed_kept_by_key_and_dropped_with_then_after_each():
    classes, budgets, woken = {}, {}, []
    intake = Intake([Kind("PriorityClass", keep=classes),
                     Kind("PodDisruptionBudget", keep=budgets, then=lambda: woken.append("pdb"))],
                    priority_classes=classes)
    intake.apply("ADDED", "PriorityClass", priority_class("high", 1000))
    intake.apply("ADDED", "PodDisruptionBudget", pdb("web", {"app": "web"}, min_available=1))
    assert classes["high"].value == 1000 and budgets["default/web"].name == "web"
    intake.apply("MODIFIED", "PodDisruptionBudget", pdb("web", {"app": "web"}, min_available=2))
    assert budgets["default/web"].min_available.value == 2
    intake.apply("DELETED", "PodDisruptionBudget", pdb("web", {"app": "web"}))
    assert budgets == {} and woken == ["pdb"] * 3
    intake.apply("ADDED", "Service", {"kind": "Service", "metadata": {"name": "s"}})  # nobody keeps it


def test_pods_are_parsed_against_the_kept_priority_classes():
    classes, pods = {}, {}
    intake = Intake([Kind("PriorityClass", keep=classes), Kind("Pod", keep=pods)], priority_classes=classes)
    intake.apply("ADDED", "PriorityClass", priority_class("high", 1000))
    intake.apply("ADDED", "Pod", api_pod("web", priorityClassName="high"))
    assert pods["default/web"].priority == 1000


def test_storage_kinds_go_to_a_volume_state_put_and_dropped_by_key():
    volumes, woken = VolumeState(), []
    intake = Intake(volume_kinds(volumes, then=lambda: woken.append(1)))
    assert set(intake.kinds) == {"StorageClass", "CSINode", "PersistentVolume", "PersistentVolumeClaim"}
    intake.apply("ADDED", "PersistentVolumeClaim", pvc("data"))
    assert set(volumes.claims) == {"default/data"}
    intake.apply("DELETED", "PersistentVolumeClaim", pvc("data"))
    assert volumes.claims == {} and len(woken) == 2


def test_an_unchanged_update_is_skipped_before_the_handler():
    nodes, seen = {}, []

    def handle(type_, obj):
        seen.append((type_, obj["metadata"]["name"]))
        if type_ != "DELETED":
            nodes[obj["metadata"]["name"]] = parse_object(obj)

    intake = Intake([Kind("Node", handle=handle, current=nodes.get, unchanged=node_unchanged)])
    intake.apply("ADDED", "Node", node("n1"))
    heartbeat = node("n1", ready=True)  # a condition, which no plugin reads
    intake.apply("MODIFIED", "Node", heartbeat)
    intake.apply("MODIFIED", "Node", node("n1", cpu="8"))
    intake.apply("DELETED", "Node", node("n1", cpu="8"))
    assert seen == [("ADDED", "n1"), ("MODIFIED", "n1"), ("DELETED", "n1")]


def test_every_declaration_of_a_kind_runs_in_order():
    order = []
    intake = Intake([Kind("Pod", handle=lambda t, o: order.append("first")),
                     Kind("Pod", handle=lambda t, o: order.append("second"))])
    intake.apply("ADDED", "Pod", api_pod("web"))
    assert order == ["first", "second"]


def test_an_unreadable_object_is_reported_once_and_left_out(caplog):
    pods = {}
    intake = Intake([Kind("Pod", keep=pods)])
    with caplog.at_level(logging.WARNING, logger="common.runtime.intake"):
        intake.apply("ADDED", "Pod", overflowing_pod())
        intake.apply("MODIFIED", "Pod", overflowing_pod())
        intake.apply("ADDED", "Pod", api_pod("ok"))
    assert set(pods) == {"default/ok"}
    assert set(intake.errors) == {"Pod default/huge"}
    assert "the pod's total memory" in intake.errors["Pod default/huge"].message
    assert len([r for r in caplog.records if "cannot read" in r.getMessage()]) == 1


def test_a_poison_record_is_counted_and_skipped_while_the_others_apply(caplog):
    """A record the parse trips over in a way no check foresaw (another writer got it wrong)
    is skipped and counted by the informer (the roles' skipped_objects); the objects listed
    and watched around it apply."""
    store = MemoryStore()
    for name in ("a", "poison", "b"):
        store.create(api_pod(name))
    pods = {}

    def parse(obj):
        if obj["metadata"]["name"].startswith("poison"):
            raise KeyError("containers")
        return parse_object(obj)

    intake = Intake([Kind("Pod", keep=pods, parse=parse)])
    informer = intake.informer(store)
    with caplog.at_level(logging.WARNING):
        informer.start()
        store.create(api_pod("poison-2"))
        store.create(api_pod("c"))
        informer.sync()
    assert set(pods) == {"default/a", "default/b", "default/c"}
    assert informer.skipped == 2 and intake.errors == {}
    assert any("Pod default/poison-2" in r.getMessage() for r in caplog.records)


def test_a_relist_calls_on_relist_then_lists_the_declared_kinds_again():
    store = MemoryStore(history=2)
    store.create(api_pod("a"))
    pods, relists = {}, []
    intake = Intake([Kind("Pod", keep=pods)])
    informer = intake.informer(store, on_relist=lambda: (relists.append(1), pods.clear()))
    informer.start()
    for name in ("b", "c", "d", "e"):
        store.create(api_pod(name))
    store.delete("Pod", "default/a")
    informer.sync()
    assert relists == [1] and set(pods) == {"default/b", "default/c", "default/d", "default/e"}


def test_status_updates_and_versions_already_applied_are_recognised():
    bound = api_pod("web", nodeName="n1")
    bound["metadata"].update(uid="u1", resourceVersion="5")
    known = parse_object(bound)
    running = {**bound, "metadata": {**bound["metadata"], "resourceVersion": "6"},
               "status": {"phase": "Running"}}
    assert same_version(known, bound) and not same_version(known, running) and not same_version(None, bound)
    assert status_update(known, running).phase == "Running"
    moved = {**running, "spec": {**running["spec"], "nodeName": "n2"}}
    assert status_update(known, moved) is None and status_update(None, running) is None


@pytest.mark.parametrize("declaration", [
    dict(kind="Pod"),
    dict(kind="Pod", keep={}, handle=lambda t, o: None),
    dict(kind="Pod", put=lambda o: None),
    dict(kind="Pod", handle=lambda t, o: None, then=lambda: None),
    dict(kind="Node", keep={}, current=lambda key: None),
])
def test_a_declaration_says_one_way_to_apply_its_kind(declaration):
    with pytest.raises(ValueError):
        Kind(**declaration)


def test_a_kind_the_stores_do_not_hold_is_refused():
    with pytest.raises(ValueError, match="Widget"):
        Intake([Kind("Widget", keep={})])


def test_watched_pods_a_role_does_not_need_are_passed_over_undecoded(kube_cluster):
    """On kube:// a pod's watch event stays the server's bytes until read: a declaration's
    skip_event passes over bound pods it does not hold (the dispatcher's rule), and only
    when every declaration of the kind agrees; the others are decoded and applied."""
    from common.store.kube_store import KubeStore

    store = KubeStore(str(kube_cluster.kubeconfig))
    seen, both = [], []
    held = {"default/held"}

    def not_held(type_, key, bound, raw):
        return bound and key not in held
    alone = Intake([Kind("Pod", handle=lambda t, o: seen.append((t, o["metadata"]["name"])), skip_event=not_held)])
    with_other = Intake([Kind("Pod", handle=lambda t, o: both.append(o["metadata"]["name"]), skip_event=not_held),
                         Kind("Pod", handle=lambda t, o: None)])
    informers = [alone.informer(store), with_other.informer(store)]
    try:
        for inf in informers:
            inf.start()
        for name in ("held", "other"):
            store.create(api_pod(name))
        store.bind_many([("default/held", "n1", None), ("default/other", "n1", None)])
        store.create(api_pod("pending"))
        for inf in informers:
            rounds = 0
            while inf.sync(timeout=2.0) or rounds < 3:  # until 2 s pass without any (3 rounds at least)
                rounds += 1
        names = [n for _, n in seen]
        assert names.count("held") == 2 and names.count("other") == 1 and "pending" in names
        assert both.count("other") == 2  # another declaration of Pod needs every event
    finally:
        for name in ("held", "other", "pending"):
            store.delete("Pod", f"default/{name}")
        store.close()


def test_a_role_that_applies_under_a_lock_has_its_event_skips_run_under_it():
    """take_status applies a status hint (the binder's): it runs holding the lock the role's
    apply takes, so it never races the role's other readers and writers."""
    import threading

    lock = threading.Lock()
    held = []

    def take(type_, key, status):
        held.append(lock.locked())
        return True

    intake = Intake([Kind("Pod", handle=lambda t, o: None, take_status=take)])
    locked = intake.informer(MemoryStore(), lock=lock)
    assert locked.take_status("Pod", "MODIFIED", "default/a", b'["Running","",""]')
    intake.informer(MemoryStore()).take_status("Pod", "MODIFIED", "default/a", b'["Running","",""]')
    assert held == [True, False] and not lock.locked()


def test_an_undecoded_event_is_held_under_the_roles_lock_and_only_for_pods():
    """take_undecoded, like take_status, runs holding the lock the role's apply takes; only
    a Pod declaration may hold events undecoded."""
    import threading

    lock = threading.Lock()
    held = []

    def hold(type_, key, document, event):
        held.append(lock.locked())
        return True

    intake = Intake([Kind("Pod", handle=lambda t, o: None, take_undecoded=hold)])
    assert intake.informer(MemoryStore(), lock=lock).take_undecoded("Pod", "ADDED", "default/a", b"{}", None)
    assert intake.informer(MemoryStore()).take_undecoded("Pod", "ADDED", "default/a", b"{}", None)
    assert held == [True, False] and not lock.locked()
    with pytest.raises(ValueError, match="Node"):
        Kind("Node", handle=lambda t, o: None, take_undecoded=hold)
