"""The ResourceClaim controller's part (common/claim_controller.py) on a store without one:
claims made from templates, reservations of pods that ended dropped, deallocation."""
from __future__ import annotations

from common.claim_controller import POD_CLAIM_NAME, ClaimController, generated_name
from common.store.memory import MemoryStore
from builders import allocation, claim_pod, claim_template, resource_claim


def _store(*docs):
    store = MemoryStore()
    for d in docs:
        store.create(d)
    return store


def test_a_pod_gets_a_claim_from_its_template_and_its_status_names_it():
    store = _store(claim_template("one-gpu"), claim_pod("p", templates=[("gpu", "one-gpu")]))
    ctl = ClaimController(store)
    assert ctl.step() == 2
    name = generated_name("p", "gpu", "uid-default-p")
    assert name.startswith("p-gpu-") and len(name) == len("p-gpu-") + 5
    claim = store.get("ResourceClaim", f"default/{name}")
    assert claim["metadata"]["annotations"][POD_CLAIM_NAME] == "gpu"
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "uid-default-p"
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu"
    assert store.get("Pod", "default/p")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": name}]
    assert ctl.step() == 0  # settled


def test_a_pod_waits_for_its_template():
    store = _store(claim_pod("p", templates=[("gpu", "later")]))
    assert ClaimController(store).step() == 0
    assert "resourceClaimStatuses" not in store.get("Pod", "default/p")["status"]


def test_a_claim_is_deallocated_once_its_pods_are_done_and_a_generated_one_deleted():
    shared = resource_claim("shared", allocation=allocation("n1", "gpu-0"), reserved_for=["a", "b"])
    store = _store(shared, claim_pod("a", claims=["shared"], node_name="n1"),
                   claim_pod("b", claims=["shared"], node_name="n1"), claim_template("t"),
                   claim_pod("c", templates=[("gpu", "t")], node_name="n1"))
    ctl = ClaimController(store)
    ctl.step()
    store.delete("Pod", "default/a")
    ctl.step()
    status = store.get("ResourceClaim", "default/shared")["status"]
    assert [r["name"] for r in status["reservedFor"]] == ["b"] and status["allocation"]
    done = store.get("Pod", "default/b")
    done["status"]["phase"] = "Succeeded"
    store.update_status(done)
    store.delete("Pod", "default/c")
    ctl.step()
    assert store.get("ResourceClaim", "default/shared")["status"] == {}
    assert store.list("ResourceClaim")[0][0]["metadata"]["name"] == "shared"  # c's generated claim is gone


class _Counting(MemoryStore):
    """A memory store that counts reads and lets a test write between the controller's reads
    and its writes (another writer racing it)."""

    def __init__(self):
        super().__init__()
        self.gets = 0
        self.before_status_writes = None

    def get(self, kind, key):
        self.gets += 1
        return super().get(kind, key)

    def update_status_many(self, objs):
        hook, self.before_status_writes = self.before_status_writes, None
        if hook is not None:
            hook()
        return super().update_status_many(objs)


def test_claims_are_made_from_the_events_without_a_read_per_pod():
    """The watch-driven controller: two writes a pod (the claim, the pod's status), no read."""
    store = _Counting()
    store.create(claim_template("one-gpu"))
    ctl = ClaimController(store)
    assert ctl.step() == 0
    for i in range(5):
        store.create(claim_pod(f"p{i}", templates=[("gpu", "one-gpu")]))
    assert ctl.step() == 10
    assert store.gets == 0
    assert all(store.get("Pod", f"default/p{i}")["status"]["resourceClaimStatuses"] for i in range(5))
    assert len(store.list("ResourceClaim")[0]) == 5
    assert ctl.step() == 0


def test_a_pod_that_changed_meanwhile_gets_its_status_on_its_next_event():
    """The status is written over the document the watch showed: a pod updated since is a
    Conflict, and its newer version's event brings the write again (the claim is not made
    twice)."""
    store = _Counting()
    store.create(claim_template("one-gpu"))
    store.create(claim_pod("p", templates=[("gpu", "one-gpu")]))
    ctl = ClaimController(store)

    def relabel():
        pod = store.get("Pod", "default/p")
        pod["metadata"].setdefault("labels", {})["x"] = "y"
        store.update(pod)
    store.before_status_writes = relabel
    assert ctl.step() == 1  # the claim only
    assert "resourceClaimStatuses" not in (store.get("Pod", "default/p").get("status") or {})
    assert ctl.step() == 1  # the status, after the pod's event
    pod = store.get("Pod", "default/p")
    assert pod["metadata"]["labels"]["x"] == "y"
    assert pod["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": generated_name("p", "gpu", "uid-default-p")}]
    assert len(store.list("ResourceClaim")[0]) == 1


def test_a_template_made_after_its_pods_lets_the_controller_make_their_claims():
    store = _store(claim_pod("p", templates=[("gpu", "later")]))
    ctl = ClaimController(store)
    assert ctl.step() == 0
    store.create(claim_template("later"))
    assert ctl.step() == 2
    assert store.get("Pod", "default/p")["status"]["resourceClaimStatuses"][0]["name"] == "gpu"
