"""NodePorts: host ports (protocol, host IP, the 0.0.0.0 wildcard) in use on a node; after
kube-scheduler's own plugin test.

Every filter case runs through `Cluster.filter`, which also checks that the vectorised and
per-node forms of the plugin agree on every node.
"""
from __future__ import annotations

import pytest

from shard.framework import SKIP, Status
from builders import UNSCHEDULABLE, Cluster, node, pod

PORTS = "node(s) didn't have free ports for the requested pod ports"


@pytest.mark.parametrize("existing, wanted, fits", [
    ((), [(8080, "TCP")], True),
    ([(8080, "UDP", "127.0.0.1")], [(8080, "UDP", "127.0.0.2")], True),     # other address
    ([(8080, "UDP", "127.0.0.1")], [(8080, "UDP", "127.0.0.1")], False),    # same address
    ([(8080, "UDP", "127.0.0.1")], [(8080, "TCP", "127.0.0.1")], True),     # other protocol
    ([(8080, "TCP", "127.0.0.1")], [(8081, "TCP", "127.0.0.1")], True),     # other port
    ([(8001, "TCP", "0.0.0.0")], [(8001, "TCP", "127.0.0.1")], False),      # wildcard in use
    ([(8001, "TCP", "127.0.0.1")], [(8001, "TCP", "0.0.0.0")], False),      # wildcard wanted
    ([(8001, "TCP")], [(8001, "")], False),                                 # defaults: TCP, 0.0.0.0
    ([(8001, "UDP")], [(8001, "TCP"), (9000, "UDP")], True),
    ([(8001, "UDP")], [(9000, "UDP"), (8001, "UDP", "10.0.0.1")], False),  # any one conflict
])
def test_node_ports(existing, wanted, fits):
    running = [pod("old", node_name="n1", ports=existing)] if existing else []
    c = Cluster([node("n1"), node("n2")], running)
    out = c.filter("NodePorts", pod("p", ports=wanted))
    assert out["n2"] is None
    assert out["n1"] == (None if fits else (UNSCHEDULABLE, PORTS))


def test_node_ports_freed_when_pod_leaves():
    c = Cluster([node("n1")], [pod("old", node_name="n1", ports=[8080])])
    assert c.filter("NodePorts", pod("p", ports=[8080]))["n1"] is not None
    c.cache.remove_pod("default/old")
    c.sched.refresh()
    assert c.filter("NodePorts", pod("p", ports=[8080]))["n1"] is None


def test_node_ports_prefilter_skips_pods_without_host_ports():
    c = Cluster([node("n1")])
    st = c.pre_filter("NodePorts", pod("p"))
    assert isinstance(st, Status) and st.code == SKIP
