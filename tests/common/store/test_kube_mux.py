"""Reading HTTP/1.1 answers as they arrive (common/store/kube_mux.py): framed by
Content-Length, by chunks, or by the end of the connection; incomplete until the last byte;
anything else refused by name."""
from __future__ import annotations

import http.client

import pytest

from common.store.kube_mux import parse_answer

STATUS = b'{"kind":"Status","code":201}'


def answer(head: bytes, body: bytes = b"") -> bytes:
    return head.replace(b"\n", b"\r\n") + b"\r\n" + body


def test_an_answer_with_a_length_is_complete_at_its_last_byte_and_not_before():
    whole = answer(b"HTTP/1.1 201 Created\nContent-Type: application/json\nContent-Length: %d\n" % len(STATUS),
                   STATUS)
    for cut in range(len(whole)):
        assert parse_answer(whole[:cut]) is None
    assert parse_answer(whole) == (201, STATUS, False)


def test_a_chunked_answer_is_put_together_and_complete_only_at_its_end():
    chunks = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
    whole = answer(b"HTTP/1.1 409 Conflict\nTransfer-Encoding: chunked\n", chunks)
    for cut in range(len(whole)):
        assert parse_answer(whole[:cut]) is None
    assert parse_answer(whole) == (409, b"hello, world", False)
    trailers = answer(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", b"2\r\nok\r\n0\r\nX-Trailer: 1\r\n\r\n")
    assert parse_answer(trailers[:-2]) is None and parse_answer(trailers) == (200, b"ok", False)


def test_the_server_closing_the_connection_is_said_and_read():
    closing = answer(b"HTTP/1.1 201 Created\nConnection: close\nContent-Length: 2\n", b"{}")
    assert parse_answer(closing) == (201, b"{}", True)
    assert parse_answer(answer(b"HTTP/1.0 200 OK\nContent-Length: 0\n")) == (200, b"", True)
    unframed = answer(b"HTTP/1.1 200 OK\n", b"until the end")
    assert parse_answer(unframed) is None
    assert parse_answer(unframed, at_eof=True) == (200, b"until the end", True)
    assert parse_answer(answer(b"HTTP/1.1 204 No Content\n")) == (204, b"", False)


def test_an_answer_cut_short_or_not_http_is_an_error_naming_what_came():
    with pytest.raises(http.client.RemoteDisconnected):
        parse_answer(b"", at_eof=True)
    with pytest.raises(http.client.IncompleteRead):
        parse_answer(answer(b"HTTP/1.1 201 Created\nContent-Length: 10\n", b"{}"), at_eof=True)
    with pytest.raises(http.client.BadStatusLine, match="SSH-2.0-OpenSSH"):
        parse_answer(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
