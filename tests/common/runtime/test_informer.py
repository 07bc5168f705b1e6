"""common.runtime.informer: list, then follow; relist when history is gone; a bad object never
stops the objects after it."""
from __future__ import annotations

import logging
import threading

import orjson

from common.errors import ResourceVersionTooOld
from common.runtime.informer import Informer
from common.store.kube_store import PodEvent
from common.store.memory import MemoryStore
from builders import api_pod as pod, labelled_api_pod


def test_an_object_the_handler_fails_on_is_skipped_and_the_rest_flow(caplog):
    store = MemoryStore()
    store.create(pod("listed-bad"))
    store.create(pod("listed-good"))
    seen = []

    def on_event(type_, kind, obj):
        if obj["metadata"]["name"].endswith("bad"):
            raise TypeError("cannot read this one")
        seen.append((type_, obj["metadata"]["name"]))

    informer = Informer(store, ("Pod",), on_event)
    with caplog.at_level(logging.WARNING):
        informer.start()
        store.create(pod("watched-bad"))
        store.create(pod("watched-good"))
        informer.sync()
        assert informer.sync() == 0  # the bad one is not tried again
    assert seen == [("ADDED", "listed-good"), ("ADDED", "watched-good")]
    assert informer.skipped == 2
    messages = [r.getMessage() for r in caplog.records]
    assert any("Pod default/listed-bad" in m for m in messages)
    assert any("Pod default/watched-bad" in m for m in messages)


class KindsApart:
    """A store that, like the API server, watches each kind apart: a Node event newer than a
    Pod event may arrive first."""

    def __init__(self, batches, list_rvs=None):
        self.batches = list(batches)
        self.list_rvs = list_rvs or {}
        self.lists, self.polls = [], []

    def list(self, kind, cached=False):
        self.lists.append((kind, cached))
        return [], self.list_rvs.get(kind, "5")

    def poll(self, since_rv, timeout=0.0, max_events=10000, kinds=None, positions=None):
        self.polls.append((since_rv, dict(positions or {})))
        return self.batches.pop(0) if self.batches else []


def test_lists_from_cache_and_watches_each_kind_from_its_own_list():
    """An informer's first list may lag (its watch catches up), so it takes the store's
    cheap one; each kind is then watched from its own list's version (on the API server a
    kind's watch cache may start after another kind's list: a CRD's does)."""
    from common.store.base import WatchEvent

    store = KindsApart([[WatchEvent("ADDED", "Pod", {"metadata": {"name": "p", "namespace": "default"}}, "9")]],
                       {"Pod": "7", "PodGroup": "8"})
    informer = Informer(store, ("PodGroup", "Pod"), lambda *a: None)
    informer.start()
    assert store.lists == [("PodGroup", True), ("Pod", True)]
    informer.sync()
    informer.sync()
    assert store.polls == [("7", {"PodGroup": "8", "Pod": "7"}), ("9", {"PodGroup": "8", "Pod": "9"})]


def test_seen_follows_each_kind_apart():
    """The binder and the shards ask whether their watch has shown a pod's version yet: the
    position of the stream as a whole (a newer Node event) does not say so. Answering from
    it made the binder call a pod it had not seen yet "not found", and the shard dropped it
    until the dispatcher sent it again 30 s later."""
    from common.store.base import WatchEvent

    node = WatchEvent("MODIFIED", "Node", {"metadata": {"name": "n1"}}, "11")
    pod_event = WatchEvent("ADDED", "Pod", {"metadata": {"name": "p", "namespace": "default"}}, "10")
    informer = Informer(KindsApart([[node], [pod_event]]), ("Node", "Pod"), lambda *a: None)
    informer.start()
    assert informer.seen("Pod", "5") and not informer.seen("Pod", "10")
    informer.sync()
    assert informer.rv == "11" and not informer.seen("Pod", "10")
    informer.sync()
    assert informer.seen("Pod", "10") and informer.seen("Node", "11")


class ListsAreRoundTrips(KindsApart):
    """A store whose lists are round trips (the API server): each answers only once the
    lists of every kind have been asked for, which only an informer that opens them all at
    once ever sees."""

    lists_in_parallel = True

    def __init__(self, kinds):
        super().__init__([])
        self.barrier = threading.Barrier(len(kinds), timeout=30)

    def list(self, kind, cached=False):
        self.barrier.wait()
        return [{"metadata": {"name": kind.lower()}}], {"Pod": "7"}.get(kind, "5")


def test_a_store_whose_lists_are_round_trips_has_them_opened_at_once_and_delivered_in_order():
    """At start-up each process lists about twenty kinds, most of them empty: one after the
    other, their round trips added up to most of a second on a busy machine. Opened at once,
    they are still delivered in the kinds' order (PriorityClasses before the Pods that name
    them), and the informer follows from the oldest list's version."""
    kinds = ("PriorityClass", "Node", "Namespace", "Pod")
    seen = []
    informer = Informer(ListsAreRoundTrips(kinds), kinds, lambda t, kind, obj: seen.append((t, kind)))
    informer.start()
    assert seen == [("ADDED", kind) for kind in kinds]
    assert informer.rv == "5" and informer.kind_rv == {"PriorityClass": "5", "Node": "5", "Namespace": "5",
                                                       "Pod": "7"}


class PodsAnswerLast(KindsApart):
    """A store whose lists are round trips, each of the small kinds answered only once the
    Pod list has been asked for (or after `wait_s`): the Pods' list, the largest and the
    last of the kinds' order, is the one every process's start-up waits for longest."""

    lists_in_parallel = True

    def __init__(self, wait_s: float = 10.0):
        super().__init__([])
        self.wait_s = wait_s
        self.pods_asked = threading.Event()
        self.asked_after_pods: list[bool] = []

    def list(self, kind, cached=False):
        if kind == "Pod":
            self.pods_asked.set()
        else:
            self.asked_after_pods.append(self.pods_asked.wait(self.wait_s))
        return [{"metadata": {"name": kind.lower()}}], "5"


def test_the_pods_list_is_asked_for_first_and_still_delivered_last():
    """About twenty kinds are listed at start, more than the informer's list threads: the
    Pods, last in the kinds' order, waited for a thread behind round trips of empty kinds
    (each a consistent read from etcd) while every process's start waited for the Pods. The
    largest lists are asked for first; delivery keeps the kinds' order."""
    from common.model.objects import CREATE_ORDER
    from common.runtime.informer import LIST_THREADS

    kinds = CREATE_ORDER
    assert len(kinds) > LIST_THREADS and kinds[-1] == "Pod"
    seen = []
    store = PodsAnswerLast()
    Informer(store, kinds, lambda t, kind, obj: seen.append(kind)).start()
    assert all(store.asked_after_pods), "a small kind's list held a thread while the Pods waited"
    assert seen == list(kinds)


def test_a_sync_with_a_doorbell_wakes_on_the_watch_and_on_the_owners_ring():
    """A waiting sync ends when the store's watch brings an event (the store rings), and when
    the owner rings for a message of its own (then with nothing applied); a ring that came
    while the owner was busy ends the next wait at once."""
    from common.runtime.links import Doorbell

    store = MemoryStore()
    seen = []
    informer = Informer(store, ("Pod",), lambda type_, kind, obj: seen.append(obj["metadata"]["name"]))
    bell = Doorbell()
    assert informer.wake_with(bell)
    informer.start()

    def sync_in_thread() -> tuple:
        got = []
        t = threading.Thread(target=lambda: got.append(informer.sync(timeout=3600.0)), daemon=True)
        t.start()
        return got, t

    got, t = sync_in_thread()
    store.create(pod("written"))
    t.join(120)
    assert not t.is_alive() and got == [1] and seen == ["written"]

    got, t = sync_in_thread()
    bell.ring()  # the owner's inbox
    t.join(120)
    assert not t.is_alive() and got == [0]

    bell.ring()  # while busy: the next sync does not wait for it
    assert informer.sync(timeout=3600.0) == 0


def test_a_store_that_cannot_ring_leaves_the_informer_polling():
    from common.runtime.links import Doorbell

    class Silent(MemoryStore):
        def listen(self, ring) -> bool:
            return False

    informer = Informer(Silent(), ("Pod",), lambda *a: None)
    assert not informer.wake_with(Doorbell()) and informer.doorbell is None


def test_a_sync_with_a_doorbell_does_not_wait_while_a_full_read_left_events_behind():
    """A read that took `max_events` may have left more, rung for before it: the next sync
    reads them rather than waiting for a ring that already came."""
    from common.runtime.links import Doorbell

    store = MemoryStore()
    seen = []
    informer = Informer(store, ("Pod",), lambda type_, kind, obj: seen.append(obj["metadata"]["name"]))
    bell = Doorbell()
    informer.wake_with(bell)
    informer.start()
    assert informer.sync(timeout=0.0) == 0  # the watch is open
    store.create(pod("a"))
    store.create(pod("b"))
    assert informer.sync(timeout=60.0, max_events=1) == 1
    bell.wait(0.0)  # (as if the owner's last ring were taken)
    assert informer.sync(timeout=60.0, max_events=1) == 1
    assert seen == ["a", "b"]


class ApiServerLines(MemoryStore):
    """A memory store whose pod events come as kube://'s do: the server's watch lines,
    undecoded until read (common.store.kube_store.PodEvent)."""

    def poll(self, *args, **kwargs):
        out = []
        for ev in super().poll(*args, **kwargs):
            if ev.kind == "Pod":
                meta = ev.obj["metadata"]
                line = orjson.dumps({"type": ev.type, "object": {"kind": "Pod", "apiVersion": "v1", **ev.obj}})
                ev = PodEvent(ev.type, line, ev.rv, f"{meta['namespace']}/{meta['name']}")
            out.append(ev)
        return out


def holding_creations(store, document_has: bytes | None = None):
    """A started pod informer on `store` whose owner holds every creation undecoded (each
    offered document containing `document_has`, when given): (informer, what was delivered
    decoded as (type, name), the held events by key)."""
    delivered, held = [], {}

    def hold(kind, type_, key, document, event):
        if type_ != "ADDED":
            return False
        if document_has is not None:
            assert document_has in document
        held[key] = event
        return True

    informer = Informer(store, ("Pod",), lambda type_, kind, obj: delivered.append((type_, obj["metadata"]["name"])),
                        take_undecoded=hold)
    informer.start()
    return informer, delivered, held


def test_an_api_server_pods_creation_is_offered_undecoded_and_decoded_only_when_read():
    """Seen failing before: on kube:// every pod event was decoded before any owner saw it,
    so a shard decoded each of another shard's pending pods' creations just to hold them.
    A creation is offered to take_undecoded as the server's bytes; one held is decoded only
    when the owner reads it; an update (no document offered) is decoded and delivered."""
    store = ApiServerLines()
    informer, delivered, held = holding_creations(store, document_has=b'"name":"web"')
    store.create(pod("web"))
    informer.sync()
    assert delivered == [] and list(held) == ["default/web"]
    assert informer.decoded(held["default/web"])["metadata"]["name"] == "web"
    store.update(store.get("Pod", "default/web") | {"status": {"phase": "Pending", "message": "x"}})
    informer.sync()
    assert delivered == [("MODIFIED", "web")]


def test_an_api_server_creation_held_undecoded_that_does_not_decode_is_skipped_and_counted_when_read():
    """A held kube:// creation is decoded only when its owner reads it: bytes that do not
    decode (here JSON nested deeper than the decoder takes) are then skipped, logged and
    counted, and the events after it still flow."""
    store = ApiServerLines()
    informer, delivered, held = holding_creations(store)
    store.create(pod("deep"))
    store.create(pod("web"))
    informer.sync()
    deep = held["default/deep"]
    deep.raw = deep.raw[:-1] + b',"x":' + b"[" * 2000 + b"]" * 2000 + b"}"
    assert informer.decoded(deep) is None and informer.skipped == 1
    assert informer.decoded(held["default/web"])["metadata"]["name"] == "web"
    store.update(store.get("Pod", "default/web") | {"status": {"phase": "Pending", "message": "x"}})
    informer.sync()
    assert delivered == [("MODIFIED", "web")]


class ListExpiresOnce(MemoryStore):
    """A store whose first Pod list ends part-way through in ResourceVersionTooOld, as a paged
    list on the API server does when its continue token outlives etcd's compaction (410
    Expired); a pod is deleted meanwhile, so the next list no longer has it."""

    def __init__(self, times: int = 1):
        super().__init__()
        self.pod_lists, self.times = 0, times

    def list_iter(self, kind, cached=False, skip=None):
        objs, rv = super().list_iter(kind, cached, skip)
        if kind != "Pod":
            return objs, rv
        self.pod_lists += 1
        if self.pod_lists > self.times:
            return objs, rv

        def cut_short():
            first = next(objs)
            yield first
            self.delete("Pod", f"default/{first['metadata']['name']}")
            raise ResourceVersionTooOld("the list's continue token expired (410 Expired)")
        return cut_short(), rv


def test_a_list_that_expires_part_way_through_is_forgotten_and_listed_again(caplog):
    """A million pods are listed 500 at a time, a round trip each: from a busy API server
    that can outlast etcd's compaction (5 minutes), and then the next page is refused. The
    process used to die of it at start-up (and its restart met the same fate). What the cut
    list delivered may be gone since, and no watch event would ever say so: the owner
    forgets it (its relist callback), and the informer lists again, then follows."""
    store = ListExpiresOnce()
    for name in ("a", "b", "c"):
        store.create(pod(name))
    kept, relists = {}, []

    def on_event(type_, kind, obj):
        if type_ == "DELETED":
            kept.pop(obj["metadata"]["name"], None)
        else:
            kept[obj["metadata"]["name"]] = obj

    def on_relist():
        relists.append(sorted(kept))
        kept.clear()
    informer = Informer(store, ("Pod",), on_event, on_relist)
    with caplog.at_level(logging.WARNING):
        informer.start()
    assert store.pod_lists == 2 and relists == [["a"]]
    assert sorted(kept) == ["b", "c"]
    assert any("listing again" in r.getMessage() for r in caplog.records)
    store.create(pod("d"))
    informer.sync()
    assert sorted(kept) == ["b", "c", "d"]


def test_lists_that_keep_expiring_are_asked_for_again_backing_off(monkeypatch):
    """The first list again comes at once (an expired list took minutes); after that the
    informer waits, longer each time, as client-go's reflector does."""
    from common.runtime import informer as informer_mod

    waits = []
    monkeypatch.setattr(informer_mod.time, "sleep", waits.append)
    store = ListExpiresOnce(times=4)
    for name in ("a", "b", "c", "d", "e"):
        store.create(pod(name))
    kept = {}
    informer = Informer(store, ("Pod",), lambda t, kind, obj: kept.__setitem__(obj["metadata"]["name"], t),
                        kept.clear)
    informer.start()
    assert store.pod_lists == 5 and sorted(kept) == ["e"]
    assert waits == [1.0, 2.0, 4.0]


class _Event:
    """A pod's event as a store hands it over: its document, and a status hint when the store
    told it was a status-only write."""

    def __init__(self, type_, obj, rv, status=None):
        self.type, self.kind, self.obj, self.rv, self.status = type_, "Pod", obj, rv, status
        self.key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def test_a_catch_up_that_keeps_each_pods_last_event_never_takes_a_status_hint():
    """A status hint is what changed since the pod's previous event. A shard catching up
    after its list keeps only each pod's last event: a relabelling followed by a status-only
    write left the hint alone, and the shard held the old labels."""
    relabelled = labelled_api_pod("p", {"app": "new"})
    events = [_Event("MODIFIED", relabelled, "8"), _Event("MODIFIED", relabelled, "9", status=b'["Running","",""]')]
    held, hinted = {}, []
    informer = Informer(KindsApart([events]), ("Pod",), lambda t, kind, obj: held.__setitem__(
        obj["metadata"]["name"], obj["metadata"]["labels"]), take_status=lambda *a: hinted.append(a) or True)
    informer.rv, informer.kind_rv = "7", {"Pod": "7"}
    informer.sync(latest=True)
    assert held == {"p": {"app": "new"}} and hinted == []
