"""DynamicResources with kube-scheduler v1.37's semantics and messages (dynamicresources_test.go's
cases where shardsched has them), through `simulate`: the shard's plugin, simulate's store
committer writing the allocation before the binding, and the ResourceClaim controller's part."""
from __future__ import annotations

from builders import (allocation, claim_pod, claim_template, device_class, device_request, gpu, make_config, node,
                      resource_claim, resource_slice)
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
    # as kube v1.37 words it (its PostFilter's "still not schedulable", then DefaultPreemption's)
    assert waiting["message"] == ("0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
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
