"""DynamicResources with kube-scheduler v1.37's semantics and messages (dynamicresources_test.go's
cases where shardsched has them), through `simulate`: the shard's plugin, simulate's store
committer writing the allocation before the binding, and the ResourceClaim controller's part."""
from __future__ import annotations

import random

import pytest

from builders import (Cluster, allocation, claim_pod, claim_template, device_class, device_request, gpu, make_config,
                      node, resource_claim, resource_slice)
from common.model.objects import parse_object, parse_pod
from shard.framework import CycleState
from shard.simulate import run


def _simulate(docs):
    report, _ = run(docs, make_config())
    return report["pods"]


def _pod(report, name):
    return report[f"default/{name}"]


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_kubes_message():
    """Seen failing before this plugin: the pod was bound though its claim did not exist (and
    the next test's third pod was bound with no device left)."""
    got = _pod(_simulate([node("n1"), claim_pod("p", claims=["missing"])]), "p")
    assert got["status"] != "Bound"
    assert got["message"] == 'resourceclaim.resource.k8s.io "missing" not found'


def test_a_template_claim_is_made_allocated_and_reserved_before_the_binding():
    store_docs = [node("n1"), device_class(), resource_slice("n1"), claim_template("one-gpu"),
                  claim_pod("p", templates=[("gpu", "one-gpu")]), claim_pod("q", templates=[("gpu", "one-gpu")])]
    report = _simulate(store_docs)
    assert _pod(report, "p")["node"] == "n1" and _pod(report, "q")["node"] == "n1"


def test_no_device_is_given_twice_and_the_third_pod_waits_with_kubes_message():
    docs = [node("n1"), device_class(), resource_slice("n1")]  # 2 gpus
    docs += [resource_claim(f"c{i}") for i in range(3)]
    docs += [claim_pod(f"p{i}", claims=[f"c{i}"]) for i in range(3)]
    report = _simulate(docs)
    bound = [k for k, v in report.items() if v["status"] == "Bound"]
    assert len(bound) == 2
    waiting = next(v for v in report.values() if v["status"] != "Bound")
    # as kube v1.37 words it (no "still not schedulable" for a claim still to allocate)
    assert waiting["message"] == ("0/1 nodes are available: 1 cannot allocate all claims. "
                                  "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_an_allocated_claim_pins_the_pod_to_its_node():
    docs = [node("n1"), node("n2"), device_class(), resource_slice("n1"), resource_slice("n2"),
            resource_claim("c", allocation=allocation("n2", "gpu-0")), claim_pod("p", claims=["c"])]
    assert _pod(_simulate(docs), "p")["node"] == "n2"


def test_a_missing_device_class_keeps_the_pod_off_every_node():
    docs = [node("n1"), resource_slice("n1"), resource_claim("c", device_request(cls="nope")),
            claim_pod("p", claims=["c"])]
    got = _pod(_simulate(docs), "p")
    assert got["status"] != "Bound" and "request gpu: device class nope does not exist" in got["message"]


def test_selectors_and_match_attribute_choose_the_node():
    a100 = 'device.attributes["gpu.example.com"].model == "A100"'
    docs = [node("n1"), node("n2"), device_class(selectors=[a100]),
            resource_slice("n1", [gpu(0, model="T4"), gpu(1, model="T4")]),
            resource_slice("n2", [gpu(0, model="A100"), gpu(5, model="A100")]),
            resource_claim("c", device_request(count=2), match=[("resource.kubernetes.io/pcieRoot", None)]),
            claim_pod("p", claims=["c"])]
    # n2's two A100s sit on different PCIe roots (pci0, pci1): no node fits
    got = _pod(_simulate(docs), "p")
    assert got["status"] != "Bound" and "cannot allocate all claims" in got["message"]
    docs[3] = resource_slice("n2", [gpu(0, model="A100"), gpu(1, model="A100")])
    assert _pod(_simulate(docs), "p")["node"] == "n2"


# --- the vectorised Filter against the per-node allocator ---------------------------------------

A100 = 'device.attributes["gpu.example.com"].model == "A100"'
BROKEN = 'device.attributes["gpu.example.com"].missing == 1'  # a CEL runtime error on every device


def _random_devices(rng, names):
    """Classes, slices (mostly node-local, sometimes a shared allNodes pool) and claims that
    hold some of their devices already."""
    docs = [device_class(), device_class("a100", selectors=[A100])]
    if rng.random() < 0.2:
        docs.append(device_class("bad", selectors=[BROKEN]))
    held = []
    for nm in names:
        if rng.random() < 0.85:
            gpus = [gpu(j, model=rng.choice(["A100", "T4"]), root=rng.choice(["pci0", "pci1"]))
                    for j in range(rng.randint(0, 5))]
            docs.append(resource_slice(nm, gpus))
            held += [(nm, g["name"]) for g in gpus if rng.random() < 0.3]
    if rng.random() < 0.2:
        docs.append(resource_slice("shared", [gpu(j) for j in range(2)], pool="shared", allNodes=True))
    docs += [resource_claim(f"held{k}", allocation=allocation(nm, dev), reserved_for=["someone"])
             for k, (nm, dev) in enumerate(held)]
    return docs


def _random_request(rng, i, classes):
    name = f"r{i}"
    roll = rng.random()
    if roll < 0.1:
        return device_request(name, first_available=[("a", "a100", rng.randint(1, 2)), ("b", "gpu", 1)])
    if roll < 0.2:
        return device_request(name, cls=rng.choice(classes), mode="All")
    return device_request(name, cls=rng.choice(classes), count=rng.choice([None, 1, 2, 3]),
                          selectors=[A100] if rng.random() < 0.2 else (), admin=rng.random() < 0.05)


def _random_claims(rng, k, classes) -> list:
    out = []
    for j in range(rng.choice([1, 1, 1, 2])):
        requests = [_random_request(rng, i, classes) for i in range(rng.choice([1, 1, 2]))]
        match = [("resource.kubernetes.io/pcieRoot", None)] if rng.random() < 0.3 else None
        out.append(resource_claim(f"c{k}-{j}", *requests, match=match))
    return out


@pytest.mark.parametrize("seed", range(80))
def test_the_vectorised_filter_agrees_with_the_per_node_allocator(seed):
    """On random nodes, devices, held devices and claims, the vectorised Filter (free-device
    counts, allocation deferred to Reserve for the simplest claims) passes exactly the nodes the
    per-node allocator does (Cluster.filter compares them, node by node), also after devices were
    given and given back; the allocation a deferred Reserve makes is the per-node Filter's."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 12))]
    docs = _random_devices(rng, names)
    classes = [d["metadata"]["name"] for d in docs if d["kind"] == "DeviceClass"]
    c = Cluster([node(nm) for nm in names], devices=docs)
    plugin, devices = c.plugin("DynamicResources"), c.sched.devices
    for k in range(8):
        claims = _random_claims(rng, k, classes)
        for d in claims:
            devices.set(parse_object(d))
        p = claim_pod(f"p{k}", claims=[d["metadata"]["name"] for d in claims])
        c.filter("DynamicResources", p)
        result = c.schedule(p)
        if not result.scheduled:
            continue
        pod_ = parse_pod(p)
        reference = CycleState()
        plugin.pre_filter(reference, pod_)
        assert plugin.filter(reference, pod_, c.table.infos[c.table.row_of[result.node]]) is None
        assert plugin.reserve(result.state, pod_, result.node) is None
        assert result.state["DynamicResources"].by_node[result.node] == reference["DynamicResources"].by_node[result.node]
        if rng.random() < 0.3:  # not bound: its devices are given back
            plugin.unreserve(result.state, pod_, result.node)
        elif rng.random() < 0.5:  # written back by the binder
            for d, got in zip(claims, reference["DynamicResources"].by_node[result.node]):
                devices.set(parse_object({**d, "status": {"allocation": got}}))
        if rng.random() < 0.2 and k:  # an earlier claim deleted: its devices are free again
            devices.remove("ResourceClaim", f"default/c{rng.randrange(k)}-0")
