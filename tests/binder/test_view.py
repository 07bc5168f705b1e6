"""The binder's view of the store (binder/view.py): what it cannot read is skipped and logged,
never fatal."""
from __future__ import annotations

import logging

from builders import binder_view, node, overflowing_pod, pod, too_wide_node


def test_objects_the_binder_cannot_count_are_skipped_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="binder.view"):
        view = binder_view(node("n1"), overflowing_pod(), too_wide_node(), pod("ok", cpu="1"))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "Pod default/huge: spec.containers[1].resources.requests.memory" in warnings[0]
    assert "Node wide: status.allocatable.example.com/many-" in warnings[1]
    assert set(view.nodes) == {"n1"} and set(view.pending) == {"default/ok"}


def test_the_binder_keeps_no_document_of_a_bound_pod_and_shares_equal_labels():
    view = binder_view(node("n1"), pod("a", cpu="1", labels={"app": "web"}, node_name="n1"),
                       pod("b", cpu="1", labels={"app": "web"}, node_name="n1"), pod("p", cpu="1"))
    a, b = view.acc.counted("default/a"), view.acc.counted("default/b")
    assert a.raw is None and b.raw is None
    assert a.labels is b.labels
    assert view.pending["default/p"].raw is not None  # a pending pod keeps its document
