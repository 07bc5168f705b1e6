"""Dynamic Resource Allocation's kinds parsed (common/model/dra.py): what the allocator and
the plugin read, and errors naming the object and the field."""
from __future__ import annotations

import pytest

from common.errors import ObjectError
from common.model.objects import parse_object
from builders import (allocation, claim_pod, claim_template, device_class, device_request, gpu, resource_claim,
                      resource_slice)


def test_a_slice_keeps_its_devices_attributes_in_the_drivers_domain():
    s = parse_object(resource_slice("n1", [gpu(0, model="H100"), gpu(1)]))
    assert (s.driver, s.pool, s.node_name) == ("gpu.example.com", "n1", "n1")
    d = s.devices[0]
    assert d.id == ("gpu.example.com", "n1", "gpu-0")
    assert d.cel["attributes"]["gpu.example.com"]["model"] == "H100"
    assert d.attribute("resource.kubernetes.io/pcieRoot") == "pci0"
    assert d.attribute("gpu.example.com/index") == 0
    assert d.capacity["gpu.example.com"]["memory"] == 80 * 2**30
    assert s.available_on("n1", {}) and not s.available_on("n2", {})


def test_a_claim_reads_requests_constraints_allocation_and_reservations():
    c = parse_object(resource_claim("c", device_request("a", count=2), device_request("b", mode="All"),
                                    match=[("resource.kubernetes.io/pcieRoot", ["a"])],
                                    allocation=allocation("n1", "gpu-0"), reserved_for=["p"]))
    assert [(r.name, r.class_name, r.mode, r.count) for r in c.requests] == [
        ("a", "gpu", "ExactCount", 2), ("b", "gpu", "All", 1)]
    assert c.constraints[0].requests == ("a",)
    assert c.allocation.devices() == [("gpu.example.com", "n1", "gpu-0")]
    assert c.allocation.allows("n1", {}) and not c.allocation.allows("n2", {})
    assert c.reserved_for_pod("uid-default-p")


def test_first_available_alternatives_are_named_request_slash_subrequest():
    c = parse_object(resource_claim("c", device_request("g", first_available=[("big", "gpu", 2), ("small", "gpu", 1)])))
    assert [a.name for a in c.requests[0].alternatives] == ["g/big", "g/small"]


@pytest.mark.parametrize("doc, field", [
    (resource_claim("c", {"name": "r"}), "spec.devices.requests[0]"),
    (resource_claim("c", device_request(mode="Some")), "spec.devices.requests[0].exactly.allocationMode"),
    (resource_claim("c", match=[("model", None)]), "spec.devices.constraints[0].matchAttribute"),
    (resource_slice("n1", [{"name": "d", "attributes": {"x": {"int": 1, "string": "a"}}}]),
     "spec.devices[0].attributes.x"),
    (device_class("gpu", selectors=[None]), "spec.selectors[1].cel.expression"),
])
def test_bad_input_names_the_object_and_the_field(doc, field):
    with pytest.raises(ObjectError) as e:
        parse_object(doc)
    assert field in str(e.value) and doc["metadata"]["name"] in str(e.value)


def test_a_template_is_checked_as_the_claims_made_from_it():
    assert parse_object(claim_template("t")).spec["devices"]["requests"][0]["name"] == "gpu"
    with pytest.raises(ObjectError, match="spec.spec.devices.requests"):
        parse_object(claim_template("t", {"name": "x"}))


def test_a_pod_keeps_its_claims_and_their_generated_names():
    p = parse_object(claim_pod("p", claims=["shared"], templates=[("gpu", "one-gpu")], statuses={"gpu": "p-gpu-x1"}))
    assert [(c.name, c.claim_name, c.template_name) for c in p.resource_claims] == [
        ("shared", "shared", ""), ("gpu", "", "one-gpu")]
    assert p.claim_statuses == {"gpu": "p-gpu-x1"}
    d = claim_pod("q")
    d["spec"]["resourceClaims"] = [{"name": "x"}]
    with pytest.raises(ObjectError, match=r"spec.resourceClaims\[0\]"):
        parse_object(d)
