"""DynamicResources' PreBind writes (common/scheduling/dra_binding.py): each claim's allocation
and the pod's reservation written over the writer's view of the claim, a chunk's in one batch;
a claim written since is read again and written once more, or refuses the decision."""
from __future__ import annotations

from common.model.objects import parse_object
from common.scheduling.dra_binding import write_claims, write_claims_many
from common.store.memory import MemoryStore
from builders import allocation, claim_pod, resource_claim


class _Counting(MemoryStore):
    def __init__(self):
        super().__init__()
        self.gets = 0
        self.batches = 0

    def get(self, kind, key):
        self.gets += 1
        return super().get(kind, key)

    def update_status_many(self, objs):
        self.batches += 1
        return super().update_status_many(objs)


def _seen(store, name):
    """The claim as a watch showed it (with its resourceVersion), parsed."""
    return parse_object(MemoryStore.get(store, "ResourceClaim", f"default/{name}"))


def test_a_chunks_claims_are_written_in_one_batch_without_a_read():
    store = _Counting()
    for i in range(3):
        store.create(resource_claim(f"c{i}"))
    items = [(parse_object(claim_pod(f"p{i}", claims=[f"c{i}"])),
              ([_seen(store, f"c{i}")], [(_seen(store, f"c{i}"), allocation("n1", f"gpu-{i}"))])) for i in range(3)]
    assert write_claims_many(store, items) == [None, None, None]
    assert store.gets == 0 and store.batches == 1
    for i in range(3):
        status = MemoryStore.get(store, "ResourceClaim", f"default/c{i}")["status"]
        assert status["allocation"]["devices"]["results"][0]["device"] == f"gpu-{i}"
        assert [r["name"] for r in status["reservedFor"]] == [f"p{i}"]


def test_a_claim_written_since_the_view_is_read_again():
    """Another pod was reserved on the shared claim meanwhile: the first write is a Conflict,
    the claim is read again and the reservation added to what it holds now."""
    store = _Counting()
    store.create(resource_claim("shared", allocation=allocation("n1", "gpu-0"), reserved_for=["a"]))
    seen = _seen(store, "shared")
    current = MemoryStore.get(store, "ResourceClaim", "default/shared")
    current["status"]["reservedFor"].append({"resource": "pods", "name": "b", "uid": "uid-default-b"})
    store.update_status(current)
    pod = parse_object(claim_pod("c", claims=["shared"]))
    assert write_claims(store, pod, ([seen], [])) is None
    assert store.gets == 1
    status = MemoryStore.get(store, "ResourceClaim", "default/shared")["status"]
    assert [r["name"] for r in status["reservedFor"]] == ["a", "b", "c"]


def test_a_claim_allocated_elsewhere_since_the_view_refuses_the_decision():
    store = _Counting()
    store.create(resource_claim("mine"))
    seen = _seen(store, "mine")
    current = MemoryStore.get(store, "ResourceClaim", "default/mine")
    current["status"] = {"allocation": allocation("n2", "gpu-5"),
                         "reservedFor": [{"resource": "pods", "name": "q", "uid": "uid-default-q"}]}
    store.update_status(current)
    pod = parse_object(claim_pod("p", claims=["mine"]))
    why = write_claims(store, pod, ([seen], [(seen, allocation("n1", "gpu-0"))]))
    assert why == "claim default/mine got allocated elsewhere in the meantime"
    assert MemoryStore.get(store, "ResourceClaim", "default/mine")["status"]["allocation"]["devices"]["results"][0][
        "device"] == "gpu-5"
