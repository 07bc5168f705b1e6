"""What every store shares (common/store/base.py): the uids a store gives the objects it
creates (`UidSource`: random version-4 UUIDs, drawn from the system in batches)."""
from __future__ import annotations

import multiprocessing
import threading
import uuid

from builders import pod
from common.store.base import UidSource, prepare


def test_uids_are_distinct_version_4_uuids_across_batches_and_threads():
    source = UidSource(batch=8)  # a refill every 8: many refills under the threads
    got: list[str] = []

    def draw():
        mine = [source() for _ in range(3000)]
        got.extend(mine)

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == len(set(got)) == 12000
    for text in got[:200]:
        u = uuid.UUID(text)
        assert str(u) == text and u.version == 4 and u.variant == uuid.RFC_4122


def _draw(source, out) -> None:
    out.send([source() for _ in range(4)])


def test_a_forked_child_never_hands_out_its_parents_uids():
    source = UidSource(batch=64)
    source()  # the parent holds a batch it has not handed out yet
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_draw, args=(source, there))
    child.start()
    theirs = here.recv()
    child.join(60)
    ours = [source() for _ in range(4)]
    assert not set(theirs) & set(ours)


def test_a_new_object_gets_a_uid_and_keeps_one_it_has():
    _, _, stored = prepare(pod("p", uid=None))
    assert uuid.UUID(stored["metadata"]["uid"]).version == 4
    _, _, kept = prepare(pod("q", uid="given"))
    assert kept["metadata"]["uid"] == "given"
