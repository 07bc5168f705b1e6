"""Scheduler extenders side by side on a real kube-apiserver: kube-scheduler v1.37 and
shardsched (dispatcher, shard and binder as processes with `--store kube://`) are configured
with the same extender, a small HTTP server in this test (builders.TestExtender) that refuses
one node by name and favours another, and schedule the same pods in their own namespaces on
the same kwok nodes. They must place them on the same node, both calling the extender with
whole Nodes, and give byte-identical PodScheduled messages for a pod the extender refuses
everywhere."""
from __future__ import annotations

from builders import PAUSE, REFUSE_LABEL, TestExtender, pod
from common.store.kube_store import KubeStore
from common.tools.verify import summary, verify_store
from kube_cluster import Teardown, kwok_nodes, shardsched_on, unschedulable_message, wait_for

from benchmarks import kube_vs

NODES = 4
PREFIX = "ext-node"
SCHEDULERS = {"ext-shardsched": "shardsched", "ext-kube": "default-scheduler"}
PODS = 4
TIMEOUT_S = 90


def _pod(name: str, ns: str, labels: dict | None = None) -> dict:
    return pod(name, "100m", ns=ns, images=(PAUSE,), uid=None, status=False, scheduler=SCHEDULERS[ns],
               labels=labels, spec={"terminationGracePeriodSeconds": 0})


def _node_of(store, key: str) -> str:
    return wait_for(f"{key} was never bound", lambda: ((store.get("Pod", key) or {}).get("spec") or {}).get("nodeName"),
                    TIMEOUT_S)


def _unschedulable_message(store, key: str) -> str:
    return unschedulable_message(store, key, TIMEOUT_S)


def test_the_same_extender_gives_the_same_placements_and_messages(kube_cluster, tmp_path):
    ext = TestExtender(reject=f"{PREFIX}-0", favour=f"{PREFIX}-2")
    extender = {"urlPrefix": ext.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1}
    store = KubeStore(str(kube_cluster.kubeconfig))
    with Teardown(tmp_path) as undo:
        undo.callback(ext.close)
        undo.callback(store.close)
        undo.callback(_clean, store)
        kwok_nodes(store, NODES, PREFIX)
        n = len(store.list("Node")[0])
        for ns in SCHEDULERS:
            kube_vs.create_namespace(store, ns)
        undo.started(shardsched_on(kube_cluster, store, tmp_path, 1, sections={"extenders": [extender]}))
        undo.kube_scheduler(kube_cluster, tmp_path, extra_config=(
            f'extenders:\n- {{urlPrefix: "{ext.url}", filterVerb: filter, prioritizeVerb: prioritize, weight: 1}}\n'))
        for ns in SCHEDULERS:
            for i in range(PODS):
                store.create(_pod(f"web-{i}", ns))
            store.create(_pod("refused", ns, labels={REFUSE_LABEL: "all"}))

        placed = {ns: sorted(_node_of(store, f"{ns}/web-{i}") for i in range(PODS)) for ns in SCHEDULERS}
        assert placed == {ns: [f"{PREFIX}-2"] * PODS for ns in SCHEDULERS}, placed

        want = (f"0/{n} nodes are available: {n} rejected by the test extender. preemption: 0/{n} nodes are "
                f"available: {n} No preemption victims found for incoming pod.")
        got = {ns: _unschedulable_message(store, f"{ns}/refused") for ns in SCHEDULERS}
        assert got == {ns: want for ns in SCHEDULERS}, got

        by_namespace = {ns: set() for ns in SCHEDULERS}
        for verb, args in list(ext.calls):
            meta = args["Pod"]["metadata"]
            if meta.get("namespace") in by_namespace:
                by_namespace[meta["namespace"]].add(verb)
                assert "Nodes" in args and not args.get("NodeNames"), (verb, meta)
        assert by_namespace == {ns: {"filter", "prioritize"} for ns in SCHEDULERS}
        report = verify_store(store)
        assert report["ok"] and not report["unparsable"], summary(report)


def _clean(store) -> None:
    for ns in SCHEDULERS:
        kube_vs.clear_pods(store, ns)
    for i in range(NODES):
        store.delete("Node", f"{PREFIX}-{i}")
