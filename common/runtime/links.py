"""One bidirectional gRPC stream to a peer process, with its messages delivered to an inbox.

The dispatcher holds one to each shard (pods out, reports back) and each shard one to each
binder (decisions out, outcomes back). Both owners run a single-threaded loop, so a link
never calls back into it: what arrives is put into the owner's inbox as (kind, link, message),
and the end of the stream as (kind, link, None), for the loop to handle between its steps.

A link to a peer that stops answering without dying (SIGSTOP, a VM stall, a partition without
a reset) ends: keepalive pings on every channel (common/runtime/wire.py) end an established stream
within wire.KEEPALIVE_S + wire.KEEPALIVE_TIMEOUT_S, and a stream not connected within
wire.CONNECT_TIMEOUT_S is cancelled. Each is logged.
"""
from __future__ import annotations

import logging
import queue
import threading

import grpc

from .wire import CONNECT_TIMEOUT_S


log = logging.getLogger(__name__)


class Doorbell:
    """What a role's main loop waits on between passes: rung by its store's watch (new
    events: common.runtime.informer.Informer.wake_with) and by its inbox (a message from a
    peer), so the loop sleeps until there is work or its next timer is due instead of polling
    at a fixed rate. A ring is kept until a wait takes it: one that comes while the loop is
    busy ends the next wait at once, and none is lost between a pass and its wait."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._rung = False

    def ring(self) -> None:
        with self._cond:
            if not self._rung:
                self._rung = True
                self._cond.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a ring; returns whether one came (and takes it)."""
        with self._cond:
            if not self._rung and timeout > 0:
                self._cond.wait(timeout)
            rung, self._rung = self._rung, False
            return rung


class Inbox:
    """A role's inbox: what its links and gRPC handlers hand to its single-threaded loop, in
    order; each message also rings the loop's doorbell (`ring`), so a waiting loop takes it at
    once rather than at its next poll."""

    def __init__(self, ring=None):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._ring = ring

    def put(self, item) -> None:
        self._queue.put(item)
        if self._ring is not None:
            self._ring()

    def put_quietly(self, item) -> None:
        """For a message the loop need not wake for: it is taken with the next pass, which
        the owner's own timers bound (see StreamLink's `wake`)."""
        self._queue.put(item)

    def get_nowait(self):
        return self._queue.get_nowait()

    def get(self, timeout: float | None = None):
        return self._queue.get(timeout=timeout)

    def empty(self) -> bool:
        return self._queue.empty()


class StreamLink:
    def __init__(self, kind: str, peer: str, address: str, open_stream, inbox, security, wake: bool = True):
        """`open_stream(channel, requests)` starts the call and returns its responses;
        `peer` names the other side in logs ("shard 1"); `security` (common.runtime.security)
        makes the channel; `wake`: whether each message rings the owner's doorbell (an
        Inbox's), or only the end of the stream does."""
        self.kind = kind
        self._put = inbox.put if wake else inbox.put_quietly
        self.peer = peer
        self.address = address
        #: Keys sent over this link and not yet settled (pods a shard holds, decisions a binder
        #: has not answered).
        self.held: set[str] = set()
        self.alive = True
        self._out: queue.SimpleQueue = queue.SimpleQueue()
        self._inbox = inbox
        self._channel = security.channel(address)
        self._responses = open_stream(self._channel, self._requests())
        log.info("stream to %s at %s opened", peer, address)
        threading.Thread(target=self._receive, daemon=True, name=f"link-{peer}").start()
        # A peer frozen before it answered the connection would hold the stream for gRPC's
        # 20 s connect timeout; once connected, keepalive (common/runtime/wire.py) notices it.
        self._ready = grpc.channel_ready_future(self._channel)
        timer = threading.Timer(CONNECT_TIMEOUT_S, self._connected_or_give_up)
        timer.daemon = True
        timer.start()

    def _connected_or_give_up(self) -> None:
        if self.alive and not self._ready.done():
            log.warning("stream to %s at %s: not connected within %g s, giving it up", self.peer,
                        self.address, CONNECT_TIMEOUT_S)
            self._responses.cancel()
        self._ready.cancel()

    def _requests(self):
        while True:
            message = self._out.get()
            if message is None:
                return
            yield message

    def _receive(self) -> None:
        try:
            for message in self._responses:
                self._put((self.kind, self, message))
        except grpc.RpcError as e:
            if self.alive:  # not our own close
                log.warning("stream to %s at %s broke: %s", self.peer, self.address,
                            e.details() if hasattr(e, "details") else e)
        self._inbox.put((self.kind, self, None))

    def send(self, message) -> None:
        self._out.put(message)

    def close(self) -> None:
        self.alive = False
        self._out.put(None)
        self._channel.close()
