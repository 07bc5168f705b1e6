"""Message size limits and keepalive of the gRPC links (common/runtime/wire.py; issue 29, item 4).

A binder used to take messages of up to 256 MiB (three DecisionBatches of 200 MB made it
allocate 600 MB); now a server refuses any request over wire.MAX_REQUEST before reading it,
and the senders cut what they send into messages of at most wire.MESSAGE_BUDGET.
"""
from __future__ import annotations

import grpc
import pytest

from builders import LiveBinder, decision, make_config, node, pod
from common.runtime import wire
from common.store.memory import MemoryStore
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc


def test_a_binder_refuses_a_request_larger_than_the_protocol_needs():
    store = MemoryStore()
    store.create(node("n1"))
    store.create(pod("p1"))
    live = LiveBinder(store, make_config(security={"mode": "none"}))
    try:
        # an attacker's channel, which sends what it likes
        channel = grpc.insecure_channel(live.server.address, options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024), ("grpc.max_receive_message_length", -1)])
        huge = pb.DecisionBatch(shard="x", decisions=[decision("default/" + "p" * (20 * 1024 * 1024), "n1")])
        assert huge.ByteSize() > wire.MAX_REQUEST
        responses = rpc.BinderStub(channel).Decide(iter([huge]), timeout=10)
        with pytest.raises(grpc.RpcError) as e:
            list(responses)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in e.value.details()
        channel.close()
        live.sync()
        # and it goes on serving the streams that keep to the limit
        got = live.decide(decision("default/p1", "n1"))
        assert got["default/p1"].bound
    finally:
        live.close()


def test_split_keeps_every_message_within_the_budget_in_order():
    decisions = [decision(f"ns-{i:05d}/" + "x" * 250, "node-" + "y" * 240) for i in range(20_000)]
    runs = wire.split(decisions)
    assert len(runs) > 1
    assert [d for run in runs for d in run] == decisions
    for run in runs:
        assert pb.DecisionBatch(shard="0", decisions=run).ByteSize() <= wire.MESSAGE_BUDGET
    assert wire.split([]) == [[]]


def test_every_channel_and_server_keeps_its_links_alive():
    for options in (wire.CHANNEL_OPTIONS, wire.SERVER_OPTIONS):
        names = dict(options)
        assert names["grpc.keepalive_time_ms"] <= 2000
        assert names["grpc.keepalive_timeout_ms"] <= 5000
        assert names["grpc.keepalive_permit_without_calls"] == 1
    # the servers accept pings as often as the channels send them
    assert (dict(wire.SERVER_OPTIONS)["grpc.http2.min_recv_ping_interval_without_data_ms"]
            < dict(wire.CHANNEL_OPTIONS)["grpc.keepalive_time_ms"])
