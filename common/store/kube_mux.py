"""Many requests answered at once, driven by the one thread that asks for them.

Why: a binder's bindings went out one per pool thread, each a blocking http.client
request. Every request then costs two thread hand-offs (the submit, the future's result),
a thread waking to send and again to read, each needing the GIL while the binder's other
threads want it too, and http.client's header parsing through the email package. Against
the test API server that was 245 µs of the caller's CPU per binding, against 77 µs here
(`python -m benchmarks.kube_binds`: 2,000 bindings, 64 a call, medians of three; 370-410 µs
with 64 threads at once). Here the calling thread writes each request on a
kept-alive connection of its own and waits for all the answers at once with a selector,
reading each as it arrives: one thread, no hand-offs, a plain header scan.

What a request is: the bytes of one HTTP/1.1 request. The caller gives `chains`: lists of
requests that must go one after another (two bindings of the same pod: the second must
see the first), each chain on one connection at a time; different chains run side by side,
`width` at most. A connection comes from `take(fresh)` (a kept-alive one unless `fresh`) and
goes back through `give_back(conn, reusable)`. A kept-alive one (from the pool, or after
an answer) that the server ended meanwhile fails before any byte of the answer arrives: the
request is sent once more on a new connection, as `kube_http._Requests.send` does. Any other failure (the server gone, no
answer in `timeout_s`, an answer this module cannot read) is that request's result, and the
rest of its chain is not sent (each gets the same error); the other chains go on.
"""
from __future__ import annotations

import http.client
import selectors
import socket
import time
from collections import deque
from typing import Callable

#: a kept-alive connection the server closed while it was idle fails with one of these
#: before any answer (an end of file is RemoteDisconnected): its request is sent again,
#: once, on a new one
STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, http.client.RemoteDisconnected)


class _Lane:
    """One connection's part: the chain it is working through, the answer being read."""

    __slots__ = ("conn", "chain", "pos", "buf", "deadline", "reused")

    def __init__(self, conn, reused: bool):
        self.conn, self.reused = conn, reused
        self.chain, self.pos, self.buf, self.deadline = -1, 0, b"", 0.0


def parse_answer(buf: bytes, at_eof: bool = False):
    """(status, body, close) of the one answer in `buf`, None while it is incomplete;
    http.client.HTTPException when it is not HTTP/1.x. The body is framed by
    Content-Length, chunked transfer, or (neither) the end of the connection (`at_eof`)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if at_eof:
            raise http.client.RemoteDisconnected("the connection ended in the middle of an answer")
        return None
    lines = buf[:end].split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or not code.isdigit():
        raise http.client.BadStatusLine(lines[0][:100].decode(errors="replace"))
    status = int(code)
    length, chunked, close = None, False, version == b"HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            close = b"close" in value.lower()
    start = end + 4
    if status < 200 or status in (204, 304):
        return status, b"", close
    if chunked:
        body = _dechunked(buf, start)
        if body is None and at_eof:
            raise http.client.IncompleteRead(buf[start:])
        return None if body is None else (status, body, close)
    if length is not None:
        if len(buf) - start < length:
            if at_eof:
                raise http.client.IncompleteRead(buf[start:], length - (len(buf) - start))
            return None
        return status, buf[start:start + length], close
    return (status, buf[start:], True) if at_eof else None


def _dechunked(buf: bytes, at: int) -> bytes | None:
    """The body of a chunked answer whose chunks start at `at`, None while incomplete."""
    parts = []
    while True:
        eol = buf.find(b"\r\n", at)
        if eol < 0:
            return None
        size = int(buf[at:eol].split(b";")[0], 16)
        if size == 0:
            # no trailers: an empty line ends it; with trailers, the first empty line after them
            done = buf.find(b"\r\n\r\n", eol) if buf[eol + 2:eol + 4] != b"\r\n" else eol
            return None if done < 0 or len(buf) < done + 4 else b"".join(parts)
        if len(buf) < eol + 2 + size + 2:
            return None
        parts.append(buf[eol + 2:eol + 2 + size])
        at = eol + 2 + size + 2


def run_chains(chains: list[list[bytes]], take: Callable, give_back: Callable, width: int,
               timeout_s: float, pace: Callable[[], None] | None = None) -> list[list]:
    """Each request's (status, body), or the exception it failed with, in `chains`' shape.
    `pace()`, when given, is called before each request is written (a client QPS limit)."""
    results: list[list] = [[None] * len(c) for c in chains]
    waiting = deque(i for i, c in enumerate(chains) if c)
    lanes: dict[int, _Lane] = {}
    sel = selectors.DefaultSelector()

    def send(lane: _Lane) -> None:
        if pace is not None:
            pace()
        lane.buf, lane.deadline = b"", time.monotonic() + timeout_s
        lane.conn.sock.sendall(chains[lane.chain][lane.pos])

    def open_lane(chain: int, pos: int, fresh: bool) -> None:
        """A connection (fresh: a new one) for `chain` from its request `pos`, written."""
        while True:
            try:
                conn, reused = take(fresh)
            except (OSError, http.client.HTTPException) as e:
                # no connection to be had: nor for the chains still waiting
                _fail_chain(results, chains, chain, pos, e)
                while waiting:
                    _fail_chain(results, chains, waiting.popleft(), 0, e)
                return
            lane = _Lane(conn, reused)
            lane.chain, lane.pos = chain, pos
            try:
                conn.sock.settimeout(timeout_s)
                send(lane)
            except OSError as e:
                give_back(conn, False)
                if reused:
                    fresh = True  # closed while idle: once more on a new connection
                    continue
                _fail_chain(results, chains, chain, pos, e)
                return
            lanes[conn.sock.fileno()] = lane
            sel.register(conn.sock, selectors.EVENT_READ, lane)
            return

    def close_lane(lane: _Lane, reusable: bool) -> None:
        sel.unregister(lane.conn.sock)
        del lanes[lane.conn.sock.fileno()]
        give_back(lane.conn, reusable)

    def answered(lane: _Lane, close: bool) -> None:
        """The lane's answer is in: on to the rest of its chain, or to the next chain."""
        lane.pos += 1
        if lane.pos >= len(chains[lane.chain]):
            if not waiting:
                close_lane(lane, not close)
                return
            lane.chain, lane.pos = waiting.popleft(), 0
        if close:  # the server ends this connection: the work goes on on a new one
            close_lane(lane, False)
            open_lane(lane.chain, lane.pos, True)
            return
        lane.reused = True  # kept alive: the server may end it as it would an idle one
        try:
            send(lane)
        except OSError as e:
            failed(lane, e)

    def failed(lane: _Lane, error: Exception) -> None:
        close_lane(lane, False)
        if lane.reused and not lane.buf and isinstance(error, STALE):
            open_lane(lane.chain, lane.pos, True)  # closed while idle: sent once more
            return
        _fail_chain(results, chains, lane.chain, lane.pos, error)
        if waiting:
            open_lane(waiting.popleft(), 0, True)

    while waiting and len(lanes) < width:
        open_lane(waiting.popleft(), 0, False)
    try:
        while lanes or waiting:
            if not lanes:  # every connection failed: the rest on new ones
                open_lane(waiting.popleft(), 0, True)
                continue
            wait = min(lane.deadline for lane in lanes.values()) - time.monotonic()
            for key, _ in sel.select(max(wait, 0.0)):
                lane = key.data
                try:
                    chunk = _recv(lane.conn.sock)
                    lane.buf += chunk
                    answer = _answer(lane.buf, not chunk)
                except (OSError, http.client.HTTPException) as e:
                    failed(lane, e)
                    continue
                if answer is not None:
                    status, body, close = answer
                    results[lane.chain][lane.pos] = (status, body)
                    answered(lane, close)
            now = time.monotonic()
            for lane in [ln for ln in lanes.values() if ln.deadline <= now]:
                failed(lane, socket.timeout(f"no answer within {timeout_s:g} s"))
    finally:
        for lane in list(lanes.values()):
            close_lane(lane, False)
        sel.close()
    return results


def run_one(request: bytes, take: Callable, give_back: Callable, timeout_s: float) -> tuple[int, bytes]:
    """(status, body) of one request, written and read by the calling thread on the blocking
    socket (waiting for one answer needs no selector); raises what it failed with (OSError,
    http.client.HTTPException). `timeout_s` bounds each wait for the server, as http.client's
    does. A kept-alive connection the server ended meanwhile: sent once more on a new one."""
    fresh = False
    while True:
        conn, reused = take(fresh)
        buf = b""
        try:
            sock = conn.sock
            sock.settimeout(timeout_s)
            sock.sendall(request)
            answer = None
            while answer is None:
                chunk = _recv(sock)
                buf += chunk
                answer = _answer(buf, not chunk)
        except (OSError, http.client.HTTPException) as e:
            give_back(conn, False)
            if reused and not buf and isinstance(e, STALE):
                fresh = True  # closed while idle: once more on a new connection
                continue
            raise
        except BaseException:
            give_back(conn, False)
            raise
        status, body, close = answer
        give_back(conn, not close)
        return status, body


def _answer(buf: bytes, at_eof: bool):
    """parse_answer, a malformed number in the answer (a length, a chunk's size) reported as
    the HTTPException any other unreadable answer is."""
    try:
        return parse_answer(buf, at_eof)
    except ValueError as e:
        raise http.client.HTTPException(f"an answer that cannot be read: {e}") from None


def _recv(sock) -> bytes:
    """What the connection has now (b"" at its end), TLS's decrypted leftovers included:
    a selector sees the socket, not what TLS has already read from it."""
    data = sock.recv(65536)
    pending = getattr(sock, "pending", None)
    while data and pending is not None and pending():
        data += sock.recv(pending())
    return data


def _fail_chain(results: list[list], chains: list[list], chain: int, pos: int, error: Exception) -> None:
    for i in range(pos, len(chains[chain])):
        results[chain][i] = error
