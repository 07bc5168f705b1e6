"""What only the Redis backend can meet: records that do not follow its layout (written by
hand, by another program, or a bug), and a server whose history went back in time (restarted
from an older snapshot, or without persistence). A bad record is skipped, logged with its id
and counted, and everything else keeps flowing; a history that went back makes readers
relist instead of waiting for events that will never come."""
from __future__ import annotations

import logging
import time
import uuid

import pytest
import orjson
import redis as redis_py

from common.errors import ResourceVersionTooOld
from common.store.redis_store import RedisStore
from builders import api_pod as pod, node


@pytest.fixture
def store(redis_url):
    s = RedisStore(redis_url, prefix=f"test-{uuid.uuid4().hex[:12]}:")
    yield s
    s.close()


@pytest.fixture
def r(redis_url):
    """A plain client of the same server, to write what no store method would."""
    client = redis_py.Redis.from_url(redis_url)
    yield client
    client.close()


def last_rv(store, r) -> str:
    return r.xrevrange(store._stream, count=1)[0][0].decode()


POISON = {
    "not an event": {"garbage": "x"},
    "invalid JSON": {"prev": "0-0", "t": "ADDED", "k": "Pod", "n": "default/bad", "o": "{not json"},
    "metadata a list": {"prev": "0-0", "t": "ADDED", "k": "Pod", "n": "default/bad",
                        "o": '{"kind": "Pod", "metadata": []}'},
    "an unknown kind": {"prev": "0-0", "t": "ADDED", "k": "Secret", "n": "default/bad",
                        "o": '{"kind": "Secret", "metadata": {"name": "bad"}}'},
    "an unknown event type": {"prev": "0-0", "t": "EXPLODED", "k": "Pod", "n": "default/bad",
                              "o": '{"kind": "Pod", "metadata": {"name": "bad", "namespace": "default"}}'},
}


@pytest.mark.parametrize("case", sorted(POISON))
def test_a_malformed_stream_entry_is_skipped_logged_and_counted(store, r, case, caplog):
    store.create(pod("before"))
    since = last_rv(store, r)
    bad_id = r.xadd(store._stream, POISON[case]).decode()
    store.create(pod("after"))
    with caplog.at_level(logging.WARNING):
        events = store.poll(since, timeout=0.5)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("ADDED", "after")]
    assert store.skipped_records == 1
    assert any(bad_id in r.getMessage() for r in caplog.records)
    # the reader moved past it: nothing is read twice, nothing is counted twice
    assert store.poll(events[-1].rv, timeout=0.1) == [] and store.skipped_records == 1


def test_an_object_without_its_state_record_is_skipped_by_list_and_get(store, r, caplog):
    store.create(pod("good"))
    store.create(pod("orphan"))
    r.hdel(f"{store._prefix}st:Pod", "default/orphan")
    with caplog.at_level(logging.WARNING):
        objs, _ = store.list("Pod")
        assert store.get("Pod", "default/orphan") is None
    assert [o["metadata"]["name"] for o in objs] == ["good"]
    assert store.get("Pod", "default/good")["metadata"]["name"] == "good"
    assert store.skipped_records == 2
    assert any("default/orphan" in r.getMessage() for r in caplog.records)


def test_list_iter_reports_an_object_without_its_state_record_too(store, r, caplog):
    """list_iter takes only the objects' count in its snapshot, not their keys: a count the
    state records do not match still finds and reports the object that has none."""
    for name in ("a", "orphan", "b"):
        store.create(pod(name))
    r.hdel(f"{store._prefix}st:Pod", "default/orphan")
    with caplog.at_level(logging.WARNING):
        objs, _ = store.list_iter("Pod")
        names = [o["metadata"]["name"] for o in objs]
    assert sorted(names) == ["a", "b"] == sorted(o["metadata"]["name"] for o in store.list("Pod")[0])
    assert store.skipped_records == 2  # once by list_iter, once by list
    assert sum("default/orphan" in rec.getMessage() for rec in caplog.records) == 2


def test_a_history_reset_makes_readers_relist(store, r):
    """The server came back empty (no persistence): a reader's position is gone, whether or
    not anything was written since."""
    store.create(pod("a"))
    since = last_rv(store, r)
    r.delete(store._stream, f"{store._prefix}obj:Pod", f"{store._prefix}st:Pod")
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0.1)
    store.create(pod("recreated"))
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0.1)


def test_a_history_rolled_back_to_an_older_snapshot_makes_readers_relist(store, r):
    """The server came back from an older snapshot: the events a reader had seen after it are
    gone, and the new ones (whose ids are newer still) do not follow what it had seen."""
    store.create(pod("a"))
    snapshot = last_rv(store, r)
    store.create(pod("b"))
    since = last_rv(store, r)
    r.xdel(store._stream, since)  # back to the snapshot
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0.1)
    store.create(pod("c"))
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0.1)
    assert [e.obj["metadata"]["name"] for e in store.poll(snapshot, timeout=0.1)] == ["c"]


def test_a_paged_list_leaves_out_what_was_written_after_its_snapshot_and_the_watch_brings_it(
        store, r, monkeypatch):
    """list_iter reads the objects in pages after one snapshot of the state records: an
    object written or deleted in between is not listed (in its newer version, which would
    come before the older events the watch replays); the watch from the list's rv brings it."""
    import common.store.redis_store as redis_store
    monkeypatch.setattr(redis_store, "_LIST_PAGE", 2)
    for name in ("a", "b", "c", "d", "e"):
        store.create(pod(name))
    objs, rv = store.list_iter("Pod")  # the snapshot is taken; pages are read as it goes
    store.bind("default/d", "n1")
    store.delete("Pod", "default/e")
    assert sorted(o["metadata"]["name"] for o in objs) == ["a", "b", "c"]
    events = store.poll(rv, timeout=0.5)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("MODIFIED", "d"), ("DELETED", "e")]
    assert events[0].obj["spec"]["nodeName"] == "n1"


def commands(r) -> dict[str, int]:
    """The server's calls per command since the last CONFIG RESETSTAT ("xread" -> calls)."""
    return {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in r.info("commandstats").items()}


def test_a_poll_that_finds_its_events_is_one_read(store, r):
    """At a paced rate every poll brings a few events, so its fixed cost is most of what a
    process pays per event: events that follow the reader's position (each entry names its
    predecessor) come in one XREAD, whether they were waiting or arrive while it waits."""
    store.create(pod("a"))
    since = last_rv(store, r)
    store.create(pod("b"))
    store.create(pod("c"))
    r.config_resetstat()
    events = store.poll(since, timeout=1.0)
    calls = commands(r)
    assert [e.obj["metadata"]["name"] for e in events] == ["b", "c"]
    assert calls.pop("xread") == 1 and "xrange" not in calls and "multi" not in calls, calls


def test_an_empty_poll_still_notices_a_history_rolled_back(store, r):
    """A reader that finds nothing new, waiting or not, is still told when its position is
    gone (the fast path's chain check needs an entry to look at)."""
    store.create(pod("a"))
    since = last_rv(store, r)
    r.xdel(store._stream, since)
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0)
    with pytest.raises(ResourceVersionTooOld, match="rolled back"):
        store.poll(since, timeout=0.1)


def test_a_reader_passes_over_events_undecoded_and_moves_past_them(store, r):
    """`read(skip=...)` asks the reader about every event of its kinds before decoding it,
    with the object's key and whether the event shows the pod bound (the binding's patch, or
    a whole document with spec.nodeName); what it passes over is never decoded (a record
    that would not decode is not even counted) and the read position moves past it."""
    store.create(pod("a"))
    since = last_rv(store, r)
    store.bind("default/a", "n1")
    running = store.get("Pod", "default/a")
    running["status"] = {"phase": "Running"}
    store.update_status(running)
    store.create(pod("b"))
    r.xadd(store._stream, {"prev": last_rv(store, r), "t": "MODIFIED", "k": "Pod", "n": "default/junk",
                           "o": '{"spec":{"nodeName":"n1"}, not json'})
    asked = []

    def skip(kind, type_, key, bound, data):
        asked.append((type_, key, bound))
        return bound

    events, read_to = store.read(since, timeout=0.5, kinds=("Pod",), skip=skip)
    assert asked == [("MODIFIED", "default/a", True), ("MODIFIED", "default/a", True),
                     ("ADDED", "default/b", False), ("MODIFIED", "default/junk", True)]
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("ADDED", "b")]
    assert read_to == last_rv(store, r) and store.skipped_records == 0


def test_a_reader_catching_up_gets_each_objects_last_event_and_the_rest_undecoded(store, r):
    """`read(latest=True)` (a shard catching up after its list) leaves out every event a later
    one it read supersedes, before decoding it: a superseded record that would not decode is
    neither decoded nor counted, and the read position moves past all of them."""
    store.create(pod("a"))
    since = last_rv(store, r)
    r.xadd(store._stream, {"prev": since, "t": "MODIFIED", "k": "Pod", "n": "default/a", "o": "{not json"})
    store.bind("default/a", "n1")
    running = store.get("Pod", "default/a")
    running["status"] = {"phase": "Running"}
    store.update_status(running)
    store.create(pod("b"))
    store.create(pod("c"))
    store.delete("Pod", "default/b")
    events, read_to = store.read(since, timeout=0.5, kinds=("Pod",), latest=True)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"), ("ADDED", "c"), ("DELETED", "b")]
    assert events[0].obj["spec"]["nodeName"] == "n1" and events[0].obj["status"]["phase"] == "Running"
    assert read_to == last_rv(store, r) and store.skipped_records == 0
    # without it, every event comes (and the bad record is counted)
    assert len(store.read(since, timeout=0.5, kinds=("Pod",))[0]) == 5 and store.skipped_records == 1


def test_writing_events_is_one_round_trip_and_expired_ones_still_go(store, r):
    """A binder writes a batch of Scheduled events every few decisions: a batch is one
    pipeline; expired Events are looked for in a second round trip at most every 10 s."""
    import time as time_mod

    def ev(name):
        return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "reason": "Scheduled",
                "metadata": {"namespace": "default", "name": name}}

    old_key = f"{store._prefix}events:time"
    r.zadd(old_key, {"default/stale": time_mod.time() - 7200})
    r.hset(f"{store._prefix}events:obj", "default/stale", "{}")
    store.write_events([ev("a")])  # the first batch looks for expired ones
    assert r.hget(f"{store._prefix}events:obj", "default/stale") is None
    r.config_resetstat()
    store.write_events([ev("b"), ev("c")])
    assert "zrangebyscore" not in commands(r)
    assert {e["metadata"]["name"] for e in store.list_events()} == {"a", "b", "c"}


def test_a_list_read_ahead_raises_a_failed_page_where_it_comes_and_stops_when_closed():
    """A list's pages are read by a thread ahead of the caller (redis_store._read_ahead):
    what came before a page that failed is delivered, then its error; a caller that stops
    early stops the reader too."""
    import threading

    from common.errors import StoreUnavailable
    from common.store.redis_store import _read_ahead

    read = []

    def pages(keys):
        for i in range(0, len(keys), 2):
            chunk = keys[i:i + 2]
            read.append(chunk[0])
            if chunk[0] == 4:
                raise StoreUnavailable("cannot reach redis at test")
            yield [k * 10 for k in chunk]
    got = []
    with pytest.raises(StoreUnavailable):
        for values in _read_ahead(pages(list(range(10))), "test"):
            got += values
    assert got == [0, 10, 20, 30]
    read.clear()
    ahead = _read_ahead(pages(list(range(0, 4)) + list(range(5, 200))), "test")
    next(ahead)
    ahead.close()
    for t in threading.enumerate():
        if t.name == "read-ahead test":
            t.join(timeout=30)
            assert not t.is_alive()
    assert len(read) < 100  # stopped, not read to the end


def test_the_stream_keeps_a_window_of_time_however_many_events_it_holds(redis_url):
    """A list of a million running pods takes over a minute while a busy cluster writes
    thousands of events a second; the watch from the list's snapshot needs all of them. The
    stream used to keep a count (100,000 events: 30-60 s of such a cluster), and a shard
    restarted in the 1,000,000-pod bench relisted again and again, never ready. It keeps a
    window of time now: every event younger than it, and none much older."""
    prefix = f"test-{uuid.uuid4().hex[:12]}:"
    s = RedisStore(redis_url, prefix=prefix, history_seconds=2.0)
    try:
        s.create(pod("first"))
        since = s.poll("0-0", timeout=0)[-1].rv
        assert s.create_many(pod(f"burst-{i}") for i in range(3000)) == []
        assert len(s.poll(since, timeout=0, max_events=10_000)) == 3000, "all younger than the window"
        time.sleep(2.5)
        # the next writes trim what is older than the window (Redis drops whole nodes of 100)
        assert s.create_many(pod(f"later-{i}") for i in range(300)) == []
        with pytest.raises(ResourceVersionTooOld):
            s.poll(since, timeout=0)
    finally:
        s.close()


def test_the_history_window_comes_from_the_config(redis_url):
    from common import config
    from common.store import open_configured

    cfg = config.validate({"store": {"historySeconds": 42}})
    s = open_configured(cfg, redis_url)
    try:
        assert s._history == "a42000"
    finally:
        s.close()


def test_a_status_only_write_carries_its_status_hint_and_nothing_else_does(store, r):
    """An update that changed nothing but the pod's status (its spec, labels, annotations and
    node as before, a bind patch in between included) carries the new phase, startTime and
    nominated node (its event's `status`), its document decoded only when read; a creation,
    a binding, a write that changed a label or the spec besides the status, carry none."""
    store.create(pod("a"))
    since = last_rv(store, r)
    store.bind("default/a", "n1")
    running = store.get("Pod", "default/a")
    running["status"].update(phase="Running", startTime="2026-01-01T00:00:00Z")
    store.update_status(running)
    relabelled = store.get("Pod", "default/a")
    relabelled["metadata"].setdefault("labels", {})["tier"] = "web"
    relabelled["status"]["phase"] = "Succeeded"
    store.update_status(relabelled)
    respecced = store.get("Pod", "default/a")
    respecced["spec"]["priority"] = 7
    store.update_status(respecced)
    events, _ = store.read(since, timeout=0.5, kinds=("Pod",))
    hints = [getattr(e, "status", None) for e in events]
    assert [None if h is None else orjson.loads(h) for h in hints] == [
        None, ["Running", "2026-01-01T00:00:00Z", ""], None, None]
    assert [e.obj["status"]["phase"] for e in events] == ["Running", "Running", "Succeeded", "Succeeded"]
    assert events[3].obj["spec"]["priority"] == 7


def test_an_entry_written_without_the_status_hint_is_still_read(store, r):
    """Entries of the layout before the hint (prev, t, k, n, o[, p]) read as before, with no
    status hint."""
    store.create(pod("a"))
    since = last_rv(store, r)
    doc = orjson.dumps(store.get("Pod", "default/a"))
    r.xadd(store._stream, {"prev": since, "t": "MODIFIED", "k": "Pod", "n": "default/a", "o": doc,
                           "p": '{"node":"n2","phase":"Running"}'})
    asked = []

    def skip(kind, type_, key, bound, data):
        asked.append((key, bound))
        return False

    events, _ = store.read(since, timeout=0.5, kinds=("Pod",), skip=skip)
    assert asked == [("default/a", True)] and getattr(events[0], "status", None) is None
    assert events[0].obj["spec"]["nodeName"] == "n2" and events[0].obj["status"]["phase"] == "Running"


@pytest.fixture
def large_hashes(r):
    """Hashes created while this is on are real hash tables, as a cluster's pods are (Redis
    keeps a hash of up to 128 small fields as one flat listpack, read whole by any command)."""
    before = r.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    r.config_set("hash-max-listpack-entries", 0)
    yield
    r.config_set("hash-max-listpack-entries", before)


def test_a_paged_list_never_has_the_server_answer_the_whole_kind_in_one_command(
        store, r, monkeypatch, large_hashes):
    """Redis answers one command at a time: the list's snapshot used to take every state
    record in one HGETALL, and over a million running pods that one answer held the server
    for seconds, so every other process (the shards scheduling, the binder committing)
    stalled while a restarted shard listed. The state records are scanned a page at a time."""
    import common.store.redis_store as redis_store
    monkeypatch.setattr(redis_store, "_LIST_PAGE", 10)
    store.create_many([pod(f"p{i}") for i in range(60)])
    r.config_resetstat()
    objs, _ = store.list_iter("Pod")
    assert sorted(o["metadata"]["name"] for o in objs) == sorted(f"p{i}" for i in range(60))
    calls = commands(r)
    assert calls.get("hgetall", 0) == 0 and calls.get("hkeys", 0) == 0
    assert calls.get("hscan", 0) >= 3


def test_a_paged_list_with_writes_between_its_pages_and_its_watch_make_the_store_once(
        store, r, monkeypatch, large_hashes):
    """Whatever is written while the pages are read (the hash grows and rehashes, so a scan
    may meet a key twice), every object is listed at most once and in its version at the
    snapshot, and the list followed by the watch from its rv is the store as it ends."""
    import common.store.redis_store as redis_store
    monkeypatch.setattr(redis_store, "_LIST_PAGE", 8)
    store.create(node("n1"))
    store.create_many([pod(f"p{i}") for i in range(100)])
    objs, rv = store.list_iter("Pod")
    seen: dict[str, dict] = {}
    for i, o in enumerate(objs):
        name = o["metadata"]["name"]
        assert name not in seen, f"{name} listed twice"
        assert "nodeName" not in o["spec"]  # nothing was bound at the snapshot
        seen[name] = o
        if i % 5 == 0:  # writes between the pages: new pods, bindings, deletions
            store.create_many([pod(f"new{i}-{j}") for j in range(20)])
            store.bind(f"default/p{(i * 7) % 100}", "n1")
            store.delete("Pod", f"default/p{(i * 3 + 1) % 100}")
    assert all(not name.startswith("new") for name in seen)
    for e in store.poll(rv, timeout=0.5, max_events=100_000):
        key = e.obj["metadata"]["name"]
        if e.type == "DELETED":
            seen.pop(key, None)
        else:
            seen[key] = e.obj
    final = {o["metadata"]["name"]: o for o in store.list("Pod")[0]}
    assert seen.keys() == final.keys()
    assert all(seen[k]["spec"].get("nodeName") == final[k]["spec"].get("nodeName") for k in final)


@pytest.mark.parametrize("record", [b"not json", b'{"uid": "u"}', b'{"rv": "yesterday"}', b'["rv"]'])
def test_a_list_skips_an_unreadable_state_record_naming_its_object_and_lists_the_rest(
        store, r, caplog, record, large_hashes):
    """The paged list reads each record's rv to leave what was written after its snapshot
    to the watch: a record it cannot read is reported with its object's key and counted,
    and the other objects are listed."""
    store.create_many([pod(name) for name in ("a", "broken", "b")])
    r.hset(f"{store._prefix}st:Pod", "default/broken", record)
    with caplog.at_level(logging.WARNING):
        objs, _ = store.list_iter("Pod")
        names = sorted(o["metadata"]["name"] for o in objs)
    assert names == ["a", "b"]
    assert store.skipped_records == 1
    assert any("default/broken" in rec.getMessage() for rec in caplog.records)


@pytest.mark.parametrize("case", ["invalid JSON", "metadata a list"])
def test_a_reader_that_holds_creations_undecoded_still_counts_a_malformed_one_when_read(store, r, case):
    """`read(undecoded=True)` hands a pod's creation and binding over undecoded only when
    the document looks like a pod's JSON: the poison records of a creation are decoded,
    skipped and counted at once, as for any reader; the good events around them come with
    the stored bytes (and the binding with its patch) and decode to what an eager read
    gives."""
    store.create(pod("before"))
    since = last_rv(store, r)
    r.xadd(store._stream, POISON[case])
    store.create(pod("after"))
    store.bind("default/after", "n1")
    held, _ = store.read(since, timeout=0.5, kinds=("Pod",), undecoded=True)
    assert store.skipped_records == 1
    eager, _ = store.read(since, timeout=0.5, kinds=("Pod",))
    assert [(e.type, e.patch is None) for e in held] == [("ADDED", True), ("MODIFIED", False)]
    assert [orjson.loads(e.document)["metadata"]["name"] for e in held] == ["after", "after"]
    assert held[1].patch["node"] == "n1" and held[1].patch["phase"] == "Running"
    assert [(e.type, e.rv, e.obj) for e in held] == [(e.type, e.rv, e.obj) for e in eager]
