"""Pod groups through the multi-process runtime on a real redis-server, with kill -9 faults.

Dispatcher, shards and binders run as processes (common/tools/local_cluster.py). Groups of pods are
created while single pods flow; a shard and the binder are killed with -9 on the way. In the
end every group that fits is bound whole, the one that cannot fit has no pod bound, no
binding intent is left on any group, and `verify` holds (partial-group included). A binder
made to die half way through a group commit (a failpoint) shows the partial state really
happens, and that its successor finishes it.
"""
from __future__ import annotations

import io
import threading
import time

from rich.console import Console

from common.tools import top
from common.cli import main
from common.model.podgroup import INTENT_ANNOTATION
from builders import group_pod, numbered_pod, pod_group
from test_runtime import TIMEOUT_S, assert_consistent, cluster_env, runtime_config, wait_bound  # noqa: F401

UNFIT = "giant"  # a group one of whose members fits no node


def group_objects(name: str, size: int, cpu: str = "250m", **group) -> list[dict]:
    return [pod_group(name, size, uid=None, **group)] + \
        [group_pod(f"{name}-{i}", name, cpu, uid=None, status=False) for i in range(size)]


def gang_config(binders: int = 1, args: dict | None = None):
    """Coscheduling's `args` (default: a 10 s wait at Permit)."""
    args = {"permitWaitingTimeSeconds": 10} if args is None else args
    cfg = runtime_config(shards=2, binders=binders, profiles=[
        {"schedulerName": "shardsched", "pluginConfig": [{"name": "Coscheduling", "args": args}]}])
    return cfg.replace(binders={"lease_duration_seconds": 2})


def placed_per_group(store) -> dict:
    """group -> (members bound, members)."""
    out = {}
    for p in store.list("Pod")[0]:
        group = (p["metadata"].get("labels") or {}).get("scheduling.x-k8s.io/pod-group")
        if group:
            bound, total = out.get(group, (0, 0))
            out[group] = (bound + bool(p["spec"].get("nodeName")), total + 1)
    return out


def assert_all_or_nothing(store) -> None:
    for group, (bound, total) in placed_per_group(store).items():
        assert bound in (0, total), f"pod group {group}: {bound} of {total} bound"
    for g in store.list("PodGroup")[0]:
        assert INTENT_ANNOTATION not in (g["metadata"].get("annotations") or {}), g["metadata"]["name"]
    assert_consistent(store)


def test_groups_are_bound_whole_through_kill_9_of_a_shard_and_the_binder(cluster_env):
    """Groups of 3 to 16 pods are created one after the other, with single pods, while shard 0
    and then the binder are killed: each kill strikes while some group is not placed yet."""
    url, store, start = cluster_env
    cluster = start(gang_config())
    sizes = [4, 12, 6, 8, 16, 5, 10, 7, 9, 3] * 3
    assert not store.create_many(group_objects(UNFIT, 3, cpu="100") + [numbered_pod(i) for i in range(200)])

    def create():
        for g, n in enumerate(sizes):
            store.create_many(group_objects(f"g{g}", n) + [numbered_pod(200 + g)])
            time.sleep(0.05)

    creator = threading.Thread(target=create, daemon=True)
    creator.start()
    struck = []
    for role, after in (("shard", 3), ("binder", 12)):
        deadline = time.monotonic() + TIMEOUT_S
        while sum(1 for g, (b, t) in placed_per_group(store).items() if b == t and g != UNFIT) < after:
            assert time.monotonic() < deadline, f"fewer than {after} groups placed"
            time.sleep(0.02)
        cluster.kill(role, 0)
        if role == "binder":
            cluster.start_one("binder", 0)
        struck.append(bool(creator.is_alive() or any(
            b < t for g, (b, t) in placed_per_group(store).items() if g != UNFIT)))
    creator.join(TIMEOUT_S)
    assert all(struck), "a kill came after every group was placed"
    wait_bound(store, sum(sizes) + 200 + len(sizes), timeout=TIMEOUT_S)
    time.sleep(1.0)  # anything still in flight lands, or not
    assert_all_or_nothing(store)
    groups = placed_per_group(store)
    assert groups[UNFIT][0] == 0 and all(b == t for g, (b, t) in groups.items() if g != UNFIT)
    deadline = time.monotonic() + 10  # the dispatcher writes the status within a second
    while {g["metadata"]["name"]: (g.get("status") or {}).get("phase") for g in store.list("PodGroup")[0]
           if g["metadata"]["name"] != UNFIT} != {f"g{i}": "Running" for i in range(len(sizes))}:
        assert time.monotonic() < deadline, "PodGroup status not kept current"
        time.sleep(0.2)


def test_a_binder_killed_half_way_through_a_group_commit_is_finished_by_the_next(cluster_env):
    """Binder 0 kills itself after binding half of a group (failpoint group-bound-part): the
    store really holds a partial group and its intent; binder 0 started again (its lease
    expired) resolves the intent before anything else, and the group is whole."""
    url, store, start = cluster_env
    cluster = start(gang_config(binders=1))
    cluster.kill("binder", 0)
    doomed = cluster.start_one("binder", 0, env={"SHARDSCHED_FAILPOINTS": "group-bound-part=kill"})
    cluster.wait_ready()
    assert not store.create_many(group_objects("job", 8))
    doomed.wait(TIMEOUT_S)
    assert doomed.returncode == -9
    bound, total = placed_per_group(store)["job"]
    assert (bound, total) == (4, 8), "half the group was bound when the binder died"
    assert INTENT_ANNOTATION in store.get("PodGroup", "default/job")["metadata"]["annotations"]
    cluster.start_one("binder", 0)
    wait_bound(store, 8, timeout=TIMEOUT_S)
    time.sleep(0.5)
    assert_all_or_nothing(store)


def test_a_waiting_group_shows_as_a_unit_in_get_and_top(cluster_env, capsys):
    """Two of three members placed, the third fitting nowhere: they wait at Permit (the
    plugin is told not to give up early); `get podgroups -o wide` and `top` show the group
    with its assumed and waiting members; at the timeout they are all let go."""
    url, store, start = cluster_env
    cluster = start(gang_config(args={"permitWaitingTimeSeconds": 60, "podGroupRejectPercentage": 100}))
    objs = group_objects("wait", 3, timeout=6)
    objs[-1]["spec"]["nodeSelector"] = {"nowhere": "true"}
    assert not store.create_many(objs)
    deadline = time.monotonic() + 20
    while True:
        # the cluster's config: its store, and the token the shards' ports ask for
        code, out = main(["get", "podgroups", "-o", "wide", "--config", cluster.config_path]), capsys.readouterr().out
        row = [line.split() for line in out.splitlines() if line.startswith("default")]
        if row and row[0][9:11] == ["2", "2"] and row[0][2] == "Scheduling":  # (the status follows within 0.5 s)
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    assert code == 0 and row[0][:7] == ["default", "wait", "Scheduling", "3", "3", "0", "3"]
    dispatcher = cluster.wait_ready()["dispatcher"]["0"]
    screen = io.StringIO()
    top.run(dispatcher, None, cluster.security, interval=0.1, iterations=1, console=Console(file=screen, width=200))
    unit = [line for line in screen.getvalue().splitlines() if "default/wait" in line]
    assert unit and [c.strip() for c in unit[0].split("│")[3:8]] == ["3", "3", "0", "2", "2"]
    time.sleep(7)  # past scheduleTimeoutSeconds
    assert placed_per_group(store)["wait"] == (0, 3)
    assert_all_or_nothing(store)


def test_kubes_gangs_are_bound_whole_by_the_processes(cluster_env):
    """kube's PodGroups (scheduling.k8s.io) through dispatcher, shards and binder on the
    embedded store: a gang whose pods all exist is bound whole; one short of a pod stays out of
    the queue until its last pod arrives, then is bound whole; a scheduler-plugins group of the
    same name is its own group. No intent is left on either kind."""
    from builders import native_group_pod, native_pod_group
    from common.model.podgroup import NATIVE_KIND

    url, store, start = cluster_env
    start(gang_config())
    objs = [native_pod_group("ring", 4, uid=None), native_pod_group("late", 3, uid=None)]
    objs += [native_group_pod(f"ring-{i}", "ring", "250m", uid=None, status=False) for i in range(4)]
    objs += [native_group_pod(f"late-{i}", "late", "250m", uid=None, status=False) for i in range(2)]
    objs += group_objects("ring", 2)  # scheduler-plugins' ring: pods ring-0.. exist already, so rename
    for d in objs[-2:]:
        d["metadata"]["name"] = "x" + d["metadata"]["name"]
    assert not store.create_many(objs)

    def bound_names():
        return {p["metadata"]["name"] for p in store.list("Pod")[0] if p["spec"].get("nodeName")}

    deadline = time.monotonic() + TIMEOUT_S
    while not {f"ring-{i}" for i in range(4)} | {"xring-0", "xring-1"} <= bound_names():
        assert time.monotonic() < deadline, sorted(bound_names())
        time.sleep(0.2)
    assert not any(n.startswith("late-") for n in bound_names())  # 2 of minCount 3: held back
    assert not store.create_many([native_group_pod("late-2", "late", "250m", uid=None, status=False)])
    while not {f"late-{i}" for i in range(3)} <= bound_names():
        assert time.monotonic() < deadline, sorted(bound_names())
        time.sleep(0.2)
    for g in store.list(NATIVE_KIND)[0]:
        assert INTENT_ANNOTATION not in (g["metadata"].get("annotations") or {}), g["metadata"]["name"]
    assert_all_or_nothing(store)
