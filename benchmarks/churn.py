"""A cluster's background noise for the embedded bench (`shardsched bench --churn`).

On a real cluster the scheduler's watches carry far more than new pods: kubelets (kwok on the
test API server) write every node's status again every few minutes to say it is alive, and
mark each pod Running once it is bound. The embedded Redis has no kubelet, so without this
the bench never pays for those events. Churn plays the kubelet through the store:

* every node's status is written again once per `heartbeat_s` (default: the kubelet's
  nodeStatusReportFrequency of 5 minutes, the interval kwok is given in kube_vs), the
  fleet spread evenly over the period, with a new lastHeartbeatTime and nothing else
  changed;
* every pod seen bound is marked Running and Ready as kwok does: phase, startTime, hostIP, podIP and
  the Initialized/Ready/ContainersReady/PodScheduled conditions, through a status update
  guarded by the resourceVersion it was seen at (a conflict means someone wrote the pod
  since; the next event for it is taken instead), those of one watch read written together.

Node Leases are left out: no shardsched process reads them, so on the embedded store they
would load only Redis. The bench runs it as a process of its own (ChurnProcess).
"""
from __future__ import annotations

import logging
import random
import threading
import time

from common.errors import Conflict
from common.store.base import PollPace
from common.store.podstatus import now_rfc3339
from .side_process import SideProcess

log = logging.getLogger(__name__)

#: The kubelet's nodeStatusReportFrequency: a node's status is written this often when nothing changed.
HEARTBEAT_S = 300.0
#: How often the heartbeat writer wakes up (each wake writes the nodes due by then).
TICK_S = 0.1


def heartbeat(node: dict, when: str) -> dict:
    """`node` with every condition's lastHeartbeatTime set to `when`, as a copy of the parts
    it changes (metadata, status, the conditions); what it leaves as it was is shared with
    `node`, which stays unchanged. (A deep copy of the whole node took longer than its
    write.)"""
    out = dict(node)
    meta = out["metadata"] = dict(node["metadata"])
    meta.pop("resourceVersion", None)  # a kubelet patches its status unconditionally
    status = out["status"] = dict(node["status"])
    if "conditions" in status:
        status["conditions"] = [{**condition, "lastHeartbeatTime": when} for condition in status["conditions"]]
    return out


def running(pod: dict, when: str, pod_ip: str) -> dict:
    """`pod` as kwok leaves a pod it started: Running and Ready on its node. A new document
    and a new status; the rest (metadata, spec) is shared with `pod`, which stays unchanged:
    a deep copy of every bound pod was the churn's largest cost after the store's checks."""
    out = dict(pod)
    status = out["status"] = dict(pod.get("status") or {})
    status.update(phase="Running", startTime=status.get("startTime") or when,
                  hostIP=status.get("hostIP") or "10.0.0.1", podIP=pod_ip)
    status["conditions"] = [{"type": t, "status": "True", "lastTransitionTime": when}
                            for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return out


def started(pod: dict) -> bool:
    """Whether the kubelet already took the pod up: Ready, or finished. (The embedded
    stores set phase Running on binding, so the phase alone does not say.)"""
    status = pod.get("status", {})
    return status.get("phase") in ("Succeeded", "Failed") or any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", ()))


class Churn:
    """The kubelet-like writer: `start()` it once the fleet is written, `stop()` at the end.
    It has its own store connections (one per thread) and counts what it wrote."""

    def __init__(self, open_store, nodes: list[dict], rv: str, heartbeat_s: float = HEARTBEAT_S,
                 seed: int = 0):
        self._open_store = open_store
        self._nodes = list(nodes)
        random.Random(seed).shuffle(self._nodes)
        self._rv = rv
        self.heartbeat_s = heartbeat_s
        self.counts = {"heartbeats": 0, "running": 0, "conflicts": 0, "errors": 0}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._guarded, args=(f,), daemon=True, name=f"churn-{f.__name__}")
                         for f in (self._heartbeats, self._mark_running)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> dict:
        """Stop both writers; returns the counts (and the heartbeat period) for the report."""
        self._stop.set()
        for t in self._threads:
            t.join()
        return {"heartbeat_s": self.heartbeat_s, **self.counts}

    def _guarded(self, writer) -> None:
        store = self._open_store()
        try:
            writer(store)
        except Exception:  # a churn failure must show, yet the bench goes on without noise
            log.exception("churn writer %s stopped", writer.__name__)
            self.counts["errors"] += 1
        finally:
            store.close()

    def _heartbeats(self, store) -> None:
        """Every node once per heartbeat_s, evenly: pass i of the fleet writes node j at
        start + (i + j / n) * heartbeat_s, the nodes due at one wake in one call (a
        kubelet writes its node's status through the status subresource, as
        update_status does)."""
        n = len(self._nodes)
        if not n:
            return
        start, done = time.monotonic(), 0
        while not self._stop.wait(TICK_S):
            due = int((time.monotonic() - start) / self.heartbeat_s * n)
            when = now_rfc3339()
            batch = [heartbeat(self._nodes[i % n], when) for i in range(done, due)]
            for reason in store.update_status_many(batch) if batch else ():
                self.counts["heartbeats" if reason is None else "conflicts"] += 1  # (conflict: the node was deleted)
            done = max(done, due)

    def _mark_running(self, store) -> None:
        """Each pod event that shows a pod bound and not yet started gets kwok's Running status."""
        serial = 0
        marked: set[str] = set()

        def passes_over(kind: str, type_: str, key: str, bound: bool, data: bytes) -> bool:
            # undecoded (the store's EventSkip): what binds no pod, and its own writes
            return not bound or type_ == "DELETED" or key in marked

        pace = PollPace()  # a few bindings per read and per write, not one
        while not self._stop.is_set():
            batch, keys = [], []
            events, read_to = store.read(self._rv, timeout=0.2, kinds=("Pod",), skip=passes_over, pace=pace)
            self._rv = read_to or self._rv
            for ev in events:
                pod = ev.obj
                if ev.type == "DELETED" or not pod["spec"].get("nodeName") or started(pod):
                    continue
                serial += 1
                batch.append(running(pod, now_rfc3339(), f"10.{serial >> 16 & 255}.{serial >> 8 & 255}.{serial & 255}"))
                keys.append(f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}")
            for key, reason in zip(keys, store.update_status_many(batch) if batch else ()):
                self.counts["running" if reason is None else "conflicts"] += 1
                if reason is None:
                    marked.add(key)


class ChurnProcess(SideProcess):
    """Churn in a process of its own, as kubelets are not in the scheduler's: inside the
    bench's process it shared one interpreter lock with the load generator and the observer,
    fell behind the bindings and had marked only about half of 50,000 pods Running by the
    end. Its CPU shows as its own process, as kwok's does on the test API server."""

    def __init__(self, url: str, rv: str, heartbeat_s: float = HEARTBEAT_S, seed: int = 0):
        super().__init__("churn", _run_churn, (url, rv, heartbeat_s, seed),
                         {"heartbeat_s": heartbeat_s, "heartbeats": 0, "running": 0, "conflicts": 0, "errors": 1})


def _run_churn(url: str, rv: str, heartbeat_s: float, seed: int, ready, stop, out) -> None:
    """The churn process: the fleet as stored, then Churn until told to stop."""
    from common.store import open_store

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s churn %(name)s: %(message)s")
    store = open_store(url)
    nodes, _ = store.list("Node")
    store.close()
    churn = Churn(lambda: open_store(url), nodes, rv, heartbeat_s, seed)
    churn.start()
    ready.set()
    stop.wait()
    out.send(churn.stop())
