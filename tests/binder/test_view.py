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
