"""common.runtime.links: the doorbell a role's loop waits on, and the inbox that rings it."""
from __future__ import annotations

import threading

from common.runtime.links import Doorbell, Inbox


def test_a_wait_ends_at_a_ring_from_another_thread():
    bell = Doorbell()
    waiting = threading.Event()
    got = []

    def wait():
        waiting.set()
        got.append(bell.wait(3600.0))

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    waiting.wait(60)
    bell.ring()
    t.join(120)
    assert not t.is_alive() and got == [True]


def test_a_ring_before_the_wait_is_kept_for_it_and_taken_once():
    bell = Doorbell()
    bell.ring()
    bell.ring()
    assert bell.wait(3600.0) is True
    assert bell.wait(0.0) is False  # taken: the next wait waits (here, not at all)


def test_a_wait_without_a_ring_ends_at_its_timeout():
    assert Doorbell().wait(0.01) is False


def test_the_inbox_rings_for_each_message_and_keeps_their_order():
    bell = Doorbell()
    inbox = Inbox(bell.ring)
    inbox.put(("pods", None, 1))
    inbox.put(("binder", None, 2))
    assert bell.wait(3600.0) is True
    assert [inbox.get_nowait(), inbox.get_nowait()] == [("pods", None, 1), ("binder", None, 2)]
    assert inbox.empty()


def test_a_message_put_quietly_waits_for_the_next_pass_without_ringing():
    bell = Doorbell()
    inbox = Inbox(bell.ring)
    inbox.put_quietly(("binder", None, 1))
    assert bell.wait(0.0) is False and inbox.get_nowait() == ("binder", None, 1)
