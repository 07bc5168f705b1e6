"""Structured logs carry kube's keys: a line about a pod names it under `pod`, its node under
`node` and the plugin that turned it down under `plugin` (klog's keys), as JSON fields with
`--log-format json` and as key="value" pairs after the message in text."""
from __future__ import annotations

import io
import logging

import orjson
import pytest

from builders import LiveBinder, decision, make_config, node, pod
from common.runtime import logs
from common.store.memory import MemoryStore


@pytest.fixture
def captured():
    """Yields a function that sets the process's logging up in a format, writing to a buffer."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    buffers = []

    def setup(fmt: str) -> io.StringIO:
        buf = io.StringIO()
        logs.setup("binder-0", verbosity=4, fmt=fmt, stream=buf)
        buffers.append(buf)
        return buf

    yield setup
    root.handlers[:], level = saved
    root.setLevel(level)


def refused_line(buf: io.StringIO) -> str:
    return next(line for line in buf.getvalue().splitlines() if "refused" in line)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_refused_decision_names_pod_node_and_plugin(captured, fmt):
    buf = captured(fmt)
    store = MemoryStore()
    store.create(node("n1", cpu="1"))
    store.create(pod("big", cpu="4"))
    binder = LiveBinder(store, make_config())
    try:
        binder.sync()
        uid = store.get("Pod", "default/big")["metadata"]["uid"]
        assert not binder.decide(decision("default/big", "n1", uid=uid))["default/big"].bound
    finally:
        binder.close()
    line = refused_line(buf)
    if fmt == "json":
        doc = orjson.loads(line)
        assert (doc["pod"], doc["node"], doc["plugin"]) == ("default/big", "n1", "NodeResourcesFit"), doc
        assert doc["component"] == "binder-0" and "refused" in doc["msg"]
    else:
        assert line.endswith(' pod="default/big" node="n1" plugin="NodeResourcesFit"'), line
