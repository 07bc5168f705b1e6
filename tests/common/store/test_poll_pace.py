"""common.store.base.PollPace: a reader that waits for events lets them gather between two
polls (so a paced rate reads several per poll), yet never delays a busy reader, never waits
past its timeout, and reads the first event after a quiet spell at once. A fake clock and
sleep make every case exact."""
from __future__ import annotations

import pytest

from common.store.base import PollPace
from common.store.memory import MemoryStore
from builders import api_pod as pod


class FakeTime:
    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(round(s, 6))
        self.now += s


def test_a_waiting_poll_right_after_another_sleeps_out_the_rest_of_the_linger():
    t = FakeTime()
    pace = PollPace(0.005, t.clock, t.sleep)
    assert pace.wait(0.02) == 0.02      # the first poll: nothing to wait for
    t.now += 0.001                      # the owner's pass took 1 ms
    assert pace.wait(0.02) == pytest.approx(0.016)
    assert t.slept == [0.004]
    assert (pace.lingered, round(pace.lingered_s, 6)) == (1, 0.004)


def test_a_busy_poll_and_a_poll_after_a_quiet_spell_do_not_sleep():
    t = FakeTime()
    pace = PollPace(0.005, t.clock, t.sleep)
    pace.wait(0.02)
    assert pace.wait(0.0) == 0.0        # the owner has work: whatever is there, now
    t.now += 0.010                      # longer than the linger since the last poll
    assert pace.wait(0.02) == 0.02
    assert t.slept == []


def test_the_linger_never_outlasts_the_timeout():
    t = FakeTime()
    pace = PollPace(0.005, t.clock, t.sleep)
    pace.wait(0.02)
    assert pace.wait(0.002) == 0.0
    assert t.slept == [0.002]


def test_a_linger_of_zero_reads_each_event_as_it_comes_and_a_negative_one_is_refused():
    t = FakeTime()
    pace = PollPace(0.0, t.clock, t.sleep)
    pace.wait(0.02)
    assert pace.wait(0.02) == 0.02 and t.slept == []
    with pytest.raises(ValueError, match="watch linger"):
        PollPace(-0.001)


def test_events_written_during_the_linger_come_in_the_same_read():
    """What the pace is for: the writes of the moments the reader sleeps arrive together."""
    store = MemoryStore()
    rv = store.list("Pod")[1]
    t = FakeTime()
    written = iter(range(3))

    def sleep(s):
        t.sleep(s)
        for i in written:  # the writer's pods land while the reader lingers
            store.create(pod(f"p{i}"))

    pace = PollPace(0.005, t.clock, sleep)
    assert store.read(rv, timeout=0.0, pace=pace) == ([], None)  # a poll a moment ago
    events, _ = store.read(rv, timeout=0.02, pace=pace)
    assert [e.obj["metadata"]["name"] for e in events] == ["p0", "p1", "p2"]
    assert pace.lingered == 1
