"""NodeUnschedulable: a cordoned node takes only pods tolerating node.kubernetes.io/unschedulable;
after kube-scheduler's own plugin test.

Filter cases run through `Cluster.filter`, which also checks that the vectorised and per-node
forms of the plugin agree on every node (and on the reasons they give).
"""
from __future__ import annotations

import pytest

from builders import UNRESOLVABLE, Cluster, node, pod, toleration

UNSCHED_TOL = toleration("node.kubernetes.io/unschedulable", effect="NoSchedule")


@pytest.mark.parametrize("tolerations, passes", [
    ((), False),
    ((UNSCHED_TOL,), True),
    ((toleration("node.kubernetes.io/unschedulable"),), True),   # any effect
    ((toleration(),), True),                                     # tolerate everything
    ((toleration("node.kubernetes.io/unschedulable", effect="NoExecute"),), False),
    ((toleration("other", effect="NoSchedule"),), False),
])
def test_node_unschedulable(tolerations, passes):
    c = Cluster([node("cordoned", unschedulable=True), node("open")])
    out = c.filter("NodeUnschedulable", pod("p", tolerations=tolerations))
    assert out["open"] is None
    if passes:
        assert out["cordoned"] is None
    else:
        assert out["cordoned"] == (UNRESOLVABLE, "node(s) were unschedulable")
