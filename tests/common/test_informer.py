"""common.informer: list, then follow; relist when history is gone; a bad object never
stops the objects after it."""
from __future__ import annotations

import logging

from common.informer import Informer
from common.store.memory import MemoryStore
from builders import api_pod as pod


def test_an_object_the_handler_fails_on_is_skipped_and_the_rest_flow(caplog):
    store = MemoryStore()
    store.create(pod("listed-bad"))
    store.create(pod("listed-good"))
    seen = []

    def on_event(type_, kind, obj):
        if obj["metadata"]["name"].endswith("bad"):
            raise TypeError("cannot read this one")
        seen.append((type_, obj["metadata"]["name"]))

    informer = Informer(store, ("Pod",), on_event)
    with caplog.at_level(logging.WARNING):
        informer.start()
        store.create(pod("watched-bad"))
        store.create(pod("watched-good"))
        informer.sync()
        assert informer.sync() == 0  # the bad one is not tried again
    assert seen == [("ADDED", "listed-good"), ("ADDED", "watched-good")]
    assert informer.skipped == 2
    messages = [r.getMessage() for r in caplog.records]
    assert any("Pod default/listed-bad" in m for m in messages)
    assert any("Pod default/watched-bad" in m for m in messages)
