"""kube v1.37's native gangs, side by side on a real kube-apiserver: shardsched (dispatcher,
shard and binder as processes with `--store kube://`, each as its deploy/ ServiceAccount) and
kube-scheduler v1.37 (built from the same release), both with the GenericWorkload feature gate,
each schedule the same PodGroups (scheduling.k8s.io/v1beta1) and pods in their own namespace,
at the same time, on the same nodes, and must end the same way:

* a gang that fits is bound whole;
* a gang whose minCount is more than the nodes can take has no pod bound, and its members'
  PodScheduled conditions say the same words;
* a gang short of pods stays out of the queue (no pod bound, the same condition) until its
  last pod is created, then is bound whole;
* a pod whose PodGroup does not exist is not scheduled, with the same condition.

The control plane is this module's own: the session's runs without the feature gate.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from builders import PAUSE, native_group_pod, native_pod_group
from common.store.kube_store import KubeStore
from common.tools.verify import summary, verify_store
from kube_cluster import Teardown, control_plane, kwok_nodes, shardsched_on, wait_for

from benchmarks import kube_vs
from benchmarks.kube_cluster import GENERIC_WORKLOAD

ROOT = Path(__file__).resolve().parent.parent
NODES = 3   # 32 cpu each (`shardsched fleet`): one "big" pod (20 cpu) fits per node
SCHEDULERS = {"gang-shardsched": "shardsched", "gang-kube": "default-scheduler"}
TIMEOUT_S = 120
#: how long a pending pod's condition must stay unchanged to count as settled
STEADY_S = 5


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory):
    """A control plane of its own, with GenericWorkload on."""
    with control_plane(tmp_path_factory.mktemp("gangs"), **GENERIC_WORKLOAD) as cluster:
        yield cluster


def _gang(group: str, ns: str, size: int, cpu: str) -> list[dict]:
    return [native_group_pod(f"{group}-{i}", group, cpu, ns=ns, images=(PAUSE,), uid=None, status=False,
                             scheduler=SCHEDULERS[ns], spec={"terminationGracePeriodSeconds": 0})
            for i in range(size)]


def _wait(what, done, timeout: float = TIMEOUT_S):
    return wait_for(what, done, timeout)

def _state(store, key: str) -> tuple:
    """(node, PodScheduled status, reason, message) of a pod, as the API server has it."""
    obj = store.get("Pod", key) or {}
    cond = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
                {})
    return ((obj.get("spec") or {}).get("nodeName"), cond.get("status"), cond.get("reason"), cond.get("message"))


def _group(name: str) -> str:
    return name.rsplit("-", 1)[0] if name[-1].isdigit() else name


def _settled(store, names: list[str], ready) -> dict:
    """namespace -> group -> its pods' states, sorted (which member of a gang a scheduler
    tried last may differ between the two, and between its retries), once every state
    satisfies `ready(group, state)` and the whole has stayed the same for STEADY_S (a pending pod's
    condition is rewritten while a scheduler retries it)."""
    seen: dict = {"states": None, "since": 0.0}

    def steady():
        states = {ns: {} for ns in SCHEDULERS}
        for ns in SCHEDULERS:
            for name in names:
                states[ns].setdefault(_group(name), []).append(_state(store, f"{ns}/{name}"))
            for group in states[ns].values():
                group.sort(key=repr)
        now = time.monotonic()
        if states != seen["states"]:
            seen.update(states=states, since=now)
        ok = all(ready(name, s) for per in states.values() for name, group in per.items() for s in group)
        return states if ok and now - seen["since"] >= STEADY_S else None
    return _wait(lambda: f"not settled: {seen['states']}", steady)


def _all_bound(states: dict) -> bool:
    return all(s[0] for per in states.values() for group in per.values() for s in group)


def test_native_gangs_as_kube_scheduler(gang_cluster, tmp_path):
    store = KubeStore(str(gang_cluster.kubeconfig))
    with Teardown(tmp_path, gang_cluster.dir) as undo:
        undo.callback(store.close)
        kwok_nodes(store, NODES, "gang-node")
        for ns in SCHEDULERS:
            kube_vs.create_namespace(store, ns)
        undo.started(shardsched_on(gang_cluster, store, tmp_path, 1))
        undo.kube_scheduler(gang_cluster, tmp_path)

        for ns in SCHEDULERS:
            for obj in (native_pod_group("fits", 3, ns=ns, uid=None), *_gang("fits", ns, 3, "1"),
                        native_pod_group("unfit", NODES + 1, ns=ns, uid=None), *_gang("unfit", ns, NODES + 1, "20"),
                        native_pod_group("short", 3, ns=ns, uid=None), *_gang("short", ns, 2, "1"),
                        native_group_pod("orphan", "absent", "1", ns=ns, images=(PAUSE,), uid=None, status=False,
                                         scheduler=SCHEDULERS[ns])):
                store.create(obj)

        fits = _settled(store, [f"fits-{i}" for i in range(3)], lambda group, s: s[0])
        assert _all_bound(fits), fits

        unfit = [f"unfit-{i}" for i in range(NODES + 1)]
        held = ["orphan", "short-0", "short-1"]
        states = _settled(store, held + unfit,
                          lambda group, s: s[0] is None and (s[2] == "Unschedulable") == (group == "unfit"))
        shardsched, kube = (states[ns] for ns in SCHEDULERS)
        assert shardsched == kube, states
        # PreEnqueue holds a pod without a word on it (no PodScheduled condition): a missing
        # PodGroup, a gang short of minCount
        assert kube["orphan"] == [(None,) * 4] and kube["short"] == [(None,) * 4] * 2
        # a gang given up on: the member that failed says why, the placed ones why the gang did
        group = (f"pod group is unschedulable, minCount ({NODES + 1}) cannot be satisfied: {NODES} scheduled, "
                 f"0 remaining, pod group preemption: No preemption victims found for incoming preemptor")
        assert sorted(s[3] for s in kube["unfit"]) == [f"0/{NODES} nodes are available: {NODES} Insufficient cpu.",
                                                       *[group] * NODES]

        for ns in SCHEDULERS:
            store.create(_gang("short", ns, 3, "1")[2])
        short = _settled(store, [f"short-{i}" for i in range(3)], lambda group, s: s[0])
        assert _all_bound(short), short

        report = verify_store(store)
        assert report["ok"] and not report["unparsable"], summary(report)
