"""What goes over the gRPC links: message size limits derived from what the protocol sends,
and keepalive (common/runtime/links.py, common/runtime/security.py and common/runtime/component.py use these).

Sizes. Every request message is cut by its sender into messages of at most MESSAGE_BUDGET
bytes (`split`): a shard's decisions to a binder, a dispatcher's pods and revocations to a
shard. A pod reference is at most about 750 bytes (a key of namespace (63) and name (253), a
uid, a resourceVersion, a node name (253)), a decision that plus its victims, so a budget of
4 MiB holds thousands of them, more than a pass decides (shard.server.CYCLES_PER_PASS) or a
dispatch batch carries (`dispatcher.batchSize`). A pod group's decision is one message
whatever its size, up to MAX_REQUEST (16 MiB, tens of thousands of members); a larger one is
refused before it is sent. So a server takes requests of at most MAX_REQUEST: three
messages of 200 MB used to make a binder allocate 600 MB, now each is refused with
RESOURCE_EXHAUSTED by gRPC before it is read, and the stream ends.

Replies are lists a peer keeps of its own state: a shard's report lists every pod it holds
(a shard may hold 100,000 pods: under 40 MB of keys), a binder's outcomes answer a message
of decisions, `Status` lists pod groups. They are bounded by MAX_REPLY (64 MiB) on the
caller's side; servers send up to it.

Keepalive. Every channel pings its peer after KEEPALIVE_S without traffic and gives the link
up when no answer comes within KEEPALIVE_TIMEOUT_S (a peer frozen by SIGSTOP, a VM stall or a
network partition without a reset otherwise holds the stream open for ever); pings are sent
without calls in flight too, so a link that is about to be used is checked. Servers accept
pings that often (and no more often: `min_recv_ping_interval_without_data`, gRPC's
enforcement, answers a peer that pings too often with GOAWAY) and ping their callers too.
"""
from __future__ import annotations

MESSAGE_BUDGET = 4 * 1024 * 1024
MAX_REQUEST = 16 * 1024 * 1024
MAX_REPLY = 64 * 1024 * 1024

KEEPALIVE_S = 2.0
KEEPALIVE_TIMEOUT_S = 5.0
#: A stream whose channel has not connected within this is given up (common/runtime/links.py).
CONNECT_TIMEOUT_S = 5.0

_KEEPALIVE = [
    ("grpc.keepalive_time_ms", int(KEEPALIVE_S * 1000)),
    ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT_S * 1000)),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]

#: A channel to a peer: sends requests, receives replies.
CHANNEL_OPTIONS = [("grpc.max_send_message_length", MAX_REQUEST),
                   ("grpc.max_receive_message_length", MAX_REPLY)] + _KEEPALIVE
#: A server: receives requests, sends replies; accepts the channels' pings (no more often
#: than they send them, with a margin) and pings its callers.
SERVER_OPTIONS = [("grpc.max_receive_message_length", MAX_REQUEST),
                  ("grpc.max_send_message_length", MAX_REPLY),
                  ("grpc.http2.min_recv_ping_interval_without_data_ms", int(KEEPALIVE_S * 1000 / 2)),
                  ("grpc.http2.min_ping_interval_without_data_ms", int(KEEPALIVE_S * 1000 / 2)),
                  ("grpc.http2.max_ping_strikes", 2)] + _KEEPALIVE


def size_of(item) -> int:
    """Encoded size of a repeated field's element (a message or a string), with its tag and
    length prefix."""
    n = len(item.encode()) if isinstance(item, str) else item.ByteSize()
    return n + 6


def split(items, budget: int = MESSAGE_BUDGET) -> list[list]:
    """`items` in order, cut into runs of at most `budget` encoded bytes each (an item
    larger than the budget is a run of its own); at least one run, maybe empty."""
    runs, run, used = [], [], 0
    for item in items:
        n = size_of(item)
        if run and used + n > budget:
            runs.append(run)
            run, used = [], 0
        run.append(item)
        used += n
    if run or not runs:
        runs.append(run)
    return runs
