"""NodeName: a pod naming its node fits only there, and PreFilter narrows the scan to it; after
kube-scheduler's own plugin test."""
from __future__ import annotations

from shard.framework import SKIP, PreFilterResult, Status
from builders import UNRESOLVABLE, Cluster, node, pod


def test_node_name_fits_only_the_named_node_and_narrows_prefilter():
    c = Cluster([node("n1"), node("n2"), node("n3")])
    p = pod("p", node_name="n2")
    out = c.filter("NodeName", p)
    assert out == {"n1": (UNRESOLVABLE, "node(s) didn't match the requested node name"),
                   "n2": None,
                   "n3": (UNRESOLVABLE, "node(s) didn't match the requested node name")}
    narrowed = c.pre_filter("NodeName", p)
    assert isinstance(narrowed, PreFilterResult) and narrowed.node_names == {"n2"}


def test_node_name_absent_skips():
    c = Cluster([node("n1")])
    st = c.pre_filter("NodeName", pod("p"))
    assert isinstance(st, Status) and st.code == SKIP
    assert c.filter("NodeName", pod("p")) == {"n1": None}
