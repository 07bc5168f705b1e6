"""The binder's Decide stream (binder/server.py): what a shard receives."""
from __future__ import annotations

import threading

from binder.server import Stream
from proto import shardsched_pb2 as pb


def outcome(key: str, bound: bool = True) -> pb.Outcome:
    return pb.Outcome(pod_key=key, node="n1", bound=bound, reason="" if bound else "NodeResourcesFit: Insufficient cpu")


def test_outcomes_handed_over_meanwhile_go_as_one_message_in_order():
    """While the stream is busy sending, commit workers keep handing over outcomes; the next
    message carries all of them, in the order they came, and the end comes after them."""
    stream = Stream("0")
    stream.reply([outcome("default/a")])
    stream.reply([])
    stream.reply([outcome("default/b", False), outcome("default/c")])
    stream.end()
    batch = stream.take()
    assert [(o.pod_key, o.bound) for o in batch.outcomes] == [("default/a", True), ("default/b", False),
                                                             ("default/c", True)]
    assert stream.take() is None and stream.take() is None


def test_a_stream_waits_for_its_next_outcome():
    stream = Stream("0")
    got = []
    reader = threading.Thread(target=lambda: got.append(stream.take()))
    reader.start()
    stream.reply([outcome("default/a")])
    reader.join(30)
    assert [o.pod_key for o in got[0].outcomes] == ["default/a"]

