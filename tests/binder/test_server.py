"""binder/server.py's set-up from its configuration."""
from __future__ import annotations

from binder.server import BinderServer
from common.store.memory import MemoryStore
from builders import make_config


def test_the_configured_watch_linger_paces_the_binders_informer():
    """store.watchLingerSeconds reaches the binder's watch."""
    binder = BinderServer(make_config(store={"watchLingerSeconds": 0.01}), MemoryStore(), 0, port=0, metrics_port=0)
    assert binder.informer.pace.linger_s == 0.01
