"""kube-controller-manager's ResourceClaim controller for the embedded bench.

A pod whose claim comes from a ResourceClaimTemplate cannot be scheduled until a claim has
been made for it and named in its status (kube-scheduler's PreEnqueue waits for that, and so
does shardsched's). On a cluster the controller manager does it; the embedded Redis has none,
so `bench --workload dra` runs the repository's stand-in (common/claim_controller.py) in a
process of its own, as a cluster runs the controller beside the scheduler: it follows the
store's events (each pass applies the events since the last and makes the writes they call
for), its passes and writes are counted, its CPU shows as its own process, and the throughput
measured includes the time claims take to be made, as it would on a cluster.
"""
from __future__ import annotations

import logging

from .side_process import SideProcess

log = logging.getLogger(__name__)

#: How long a pass waits for the store's next event.
WAIT_S = 0.5


class ClaimsProcess(SideProcess):
    def __init__(self, url: str):
        super().__init__("claims", _run, (url,), {"passes": 0, "writes": 0, "errors": 1})


def _run(url: str, ready, stop, out) -> None:
    """Passes of the controller until told to stop; a pass that fails is logged, counted and
    followed by the next (what it had to do is kept for it)."""
    from common.claim_controller import ClaimController
    from common.store import open_store

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s claims %(name)s: %(message)s")
    store = open_store(url)
    controller = ClaimController(store)
    counts = {"passes": 0, "writes": 0, "errors": 0}
    ready.set()
    while not stop.is_set():
        try:
            wrote = controller.step(WAIT_S)
        except Exception:
            log.exception("a pass of the claim controller failed")
            counts["errors"] += 1
            wrote = 0
            stop.wait(WAIT_S)
        counts["passes"] += 1
        counts["writes"] += wrote
    store.close()
    out.send(counts)
