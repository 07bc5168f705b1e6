"""Taking over from kube-scheduler, and back, on the test API server (the README's "Migrating
from kube-scheduler").

kube-scheduler runs as kubeadm runs it: leader election on (the Lease kube-system/kube-scheduler)
and a kubeconfig of the user system:kube-scheduler (a client certificate of the cluster's CA).
The procedure then: stop it (its Lease is released), start shardsched as default-scheduler from
deploy/static-pods/, while pods keep coming, and later the way back. kwok's kubelets cannot run
static pods, so the manifests are rendered as the README says, checked by the API server (a
server-side dry run as Pods in kube-system), and the commands they contain are run as processes
with the same files under a temporary /etc/kubernetes: only the node's address (loopback) and
the ports (free ones: other tests share the machine) differ from a control-plane node.

Every pod must be bound exactly once: a pod watch held throughout sees it bound to one node,
once, and it has at most one Scheduled event, naming that node, from the scheduler that held
the default-scheduler role at the time (only a pod kube-scheduler bound as it stopped may
have none: kube-scheduler does not flush its events on exit).
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import yaml

import builders
from benchmarks import kube_vs
from benchmarks.kube_cluster import free_port
from common.store.kube_store import KubeStore
from kube_cluster import Teardown, control_plane, kwok_nodes, wait_for

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "deploy" / "static-pods"
ROLES = ("binder", "shard", "dispatcher")  # started in this order here; a kubelet keeps none
NS = "takeover"
TIMEOUT_S = 180  # a busy machine: generous


def render(role: str, index: int) -> dict:
    """The README's `sed "s/SHARDSCHED_INDEX/$I/g"` of a static-pod manifest."""
    text = (STATIC / f"shardsched-{role}.yaml").read_text().replace("SHARDSCHED_INDEX", str(index))
    return yaml.safe_load(text)


def command_of(pod: dict, etc: Path, node_ip: str = "127.0.0.1") -> list[str]:
    """The argv the kubelet would run for the pod's one container, as a process here: `$(VAR)`
    from its env (the node's address), /etc/kubernetes/ under `etc` (every mount is a hostPath
    at the same path inside and out, which this checks), `python` the venv's, and the ports
    free ones."""
    spec = pod["spec"]
    (c,) = spec["containers"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    for m in c["volumeMounts"]:
        if m["name"] in host_paths:
            assert m["mountPath"] == host_paths[m["name"]], m
            assert m["mountPath"].startswith("/etc/kubernetes/"), m
    env = {e["name"]: node_ip for e in c.get("env", []) if e["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"}
    argv = []
    for arg in c["command"] + c["args"]:
        arg = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], arg)
        argv.append(arg.replace("/etc/kubernetes/", f"{etc}/"))
    argv[0] = str(ROOT / ".venv" / "bin" / "python")
    for flag in ("--port", "--metrics-port"):
        argv[argv.index(flag) + 1] = str(free_port())
    return argv


def scheduled_events(cluster) -> dict[str, list[tuple[str, str]]]:
    """pod name -> [(reportingController, note)] of its Scheduled events."""
    out: dict[str, list[tuple[str, str]]] = {}
    items = json.loads(cluster.kubectl("get", "events.events.k8s.io", "-n", NS, "-o", "json").stdout)["items"]
    for e in items:
        if e.get("reason") == "Scheduled":
            count = (e.get("series") or {}).get("count", 1)
            out.setdefault(e["regarding"]["name"], []).extend([(e["reportingController"], e["note"])] * count)
    return out


def holder(cluster, ns: str, name: str) -> str:
    """The Lease's holderIdentity: "" once released (kube-scheduler empties it; shardsched's
    dispatcher deletes its Lease)."""
    got = cluster.kubectl("get", "lease", "-n", ns, name, "-o", "json", "--ignore-not-found")
    return json.loads(got.stdout)["spec"].get("holderIdentity", "") if got.stdout.strip() else ""


def create_pods(store: KubeStore, prefix: str, n: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(n)]
    for name in names:
        store.create(builders.pod(name, "100m", "64Mi", ns=NS, scheduler=None, uid=None, status=False,
                                  images=(builders.PAUSE,), spec={"terminationGracePeriodSeconds": 0}))
    return names


def bound(store: KubeStore, names: list[str]) -> dict[str, str]:
    pods = {p["metadata"]["name"]: p for p in store.list("Pod")[0] if p["metadata"].get("namespace") == NS}
    return {n: pods[n]["spec"]["nodeName"] for n in names if n in pods and pods[n]["spec"].get("nodeName")}


def wait_bound(store: KubeStore, names: list[str], who: str) -> dict[str, str]:
    def everyone() -> dict[str, str] | None:
        got = bound(store, names)
        return got if len(got) == len(names) else None

    return wait_for(lambda: f"{who}: bound {len(bound(store, names))}/{len(names)} pods", everyone, TIMEOUT_S)


class KubeScheduler:
    """kube-scheduler as kubeadm's static pod runs it: leader election on, user system:kube-scheduler."""

    def __init__(self, cluster, workdir: Path):
        kubeconfig = cluster.user_kubeconfig(workdir / "scheduler.conf", "system:kube-scheduler")
        self.config = workdir / "kube-scheduler.yaml"
        self.config.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: "{kubeconfig}"}}
leaderElection: {{leaderElect: true}}
""")
        self.cluster, self.workdir, self.proc, self.runs = cluster, workdir, None, 0

    def start(self) -> None:
        self.runs += 1
        log = (self.workdir / f"kube-scheduler-{self.runs}.log").open("wb")
        self.proc = subprocess.Popen([str(self.cluster.bin / "kube-scheduler"), "--config", str(self.config),
                                      "--secure-port", "0"], stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """SIGTERM, as the kubelet stops a static pod whose manifest is moved away."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class StaticPods:
    """The rendered static pods of one control-plane node, run as processes."""

    def __init__(self, cluster, workdir: Path, index: int = 0):
        self.etc = workdir / "etc" / "kubernetes"
        conf = self.etc / "shardsched"
        (conf / "pki").mkdir(parents=True)
        # the README's steps: a kubeconfig per role (kubeadm kubeconfig user; context namespace
        # shardsched), the config, and one certificate for the links (shardsched certs)
        for role in ROLES:
            cluster.user_kubeconfig(self.etc / f"shardsched-{role}.conf", f"shardsched-{role}", namespace="shardsched")
        config = yaml.safe_load((STATIC / "config.yaml").read_text().replace("/etc/kubernetes/", f"{self.etc}/"))
        config["shardsched"]["shards"]["count"] = 1  # one control-plane node here
        (conf / "config.yaml").write_text(yaml.safe_dump(config))
        certs = workdir / "certs"
        subprocess.run([str(ROOT / ".venv/bin/shardsched"), "certs", "--out", str(certs)], check=True,
                       capture_output=True, timeout=120)
        shutil.copy(certs / "ca.crt", conf / "pki" / "ca.crt")
        shutil.copy(certs / "dispatcher.crt", conf / "pki" / "tls.crt")
        shutil.copy(certs / "dispatcher.key", conf / "pki" / "tls.key")
        self.pods = {role: render(role, index) for role in ROLES}
        self.workdir, self.procs = workdir, {}

    def start(self) -> None:
        for role, pod in self.pods.items():
            log = (self.workdir / f"static-{role}.log").open("wb")
            self.procs[role] = subprocess.Popen(command_of(pod, self.etc), stdout=log, stderr=subprocess.STDOUT,
                                                cwd=self.workdir)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def exited(self) -> list[str]:
        return [role for role, p in self.procs.items() if p.poll() is not None]


def test_static_pods_are_valid_pods(tmp_path):
    """Each rendered manifest, for the first and the third control-plane node, is a Pod the API
    server accepts in kube-system (server-side dry run), runs on the node's network without a
    ServiceAccount, probes the port it serves metrics on, and no placeholder is left."""
    with control_plane(tmp_path, kwok=False) as cluster:
        for index in (0, 2):
            for role in ROLES:
                pod = render(role, index)
                assert "SHARDSCHED_INDEX" not in json.dumps(pod)
                assert pod["spec"]["hostNetwork"] is True and "serviceAccountName" not in pod["spec"]
                assert pod["metadata"]["namespace"] == "kube-system"
                (c,) = pod["spec"]["containers"]
                argv = c["args"]
                assert argv[argv.index("--id") + 1] == str(index)
                metrics = int(argv[argv.index("--metrics-port") + 1])
                assert c["readinessProbe"]["httpGet"]["port"] == c["livenessProbe"]["httpGet"]["port"] == metrics
                cluster.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(pod))


class PodWatch:
    """Every binding the API server shows, from a pod watch held throughout (kubectl get
    --watch): a pod bound twice, or moved, would show a second node."""

    def __init__(self, cluster, workdir: Path):
        self.out = (workdir / "pod-watch.json").open("w+")
        self.proc = subprocess.Popen(["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "pods", "-n", NS,
                                      "--watch", "--output-watch-events", "-o", "json"],
                                     stdout=self.out, stderr=subprocess.DEVNULL)

    def nodes(self) -> dict[str, list[str]]:
        """pod name -> the distinct nodes it was seen bound to, in order."""
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.out.seek(0)
        text, at, seen = self.out.read(), 0, {}
        decoder = json.JSONDecoder()
        while rest := text[at:].lstrip():
            event, at = decoder.raw_decode(text, len(text) - len(rest))
            pod = event["object"]
            node = pod["spec"].get("nodeName")
            nodes = seen.setdefault(pod["metadata"]["name"], [])
            if node and node not in nodes:
                nodes.append(node)
        return seen


def switch(store: KubeStore, cluster, kube: KubeScheduler, static: StaticPods) -> dict[str, list[str]]:
    """The procedure, with pods created throughout; the pods of each phase by name."""
    phases = {"before": create_pods(store, "before", 10)}
    wait_bound(store, phases["before"], "kube-scheduler")
    assert holder(cluster, "kube-system", "kube-scheduler")
    wait_for(lambda: f"kube-scheduler's events: {scheduled_events(cluster)}",
             lambda: all(scheduled_events(cluster).get(n) for n in phases["before"]), TIMEOUT_S)
    # created while kube-scheduler stops, while nothing schedules, while shardsched starts
    phases["racing"] = create_pods(store, "racing", 10)
    t_stop = time.monotonic()
    kube.stop()
    t_stopped = time.monotonic()
    assert kube.proc.returncode == 0
    assert not holder(cluster, "kube-system", "kube-scheduler"), "kube-scheduler's Lease not released"
    phases["between"] = create_pods(store, "between", 10)
    t_start = time.monotonic()
    static.start()
    phases["during"] = create_pods(store, "during", 10)
    wait_bound(store, phases["racing"] + phases["between"] + phases["during"], "shardsched")
    t_switched = time.monotonic()
    phases["after"] = create_pods(store, "after", 10)
    wait_bound(store, phases["after"], "shardsched")
    assert not static.exited()
    assert holder(cluster, "shardsched", "shardsched-dispatcher") and holder(cluster, "shardsched", "shardsched-shard-0")
    # the way back
    t_back = time.monotonic()
    static.stop()
    assert [p.returncode for p in static.procs.values()] == [0, 0, 0]
    assert not holder(cluster, "shardsched", "shardsched-dispatcher"), "shardsched's Lease not released"
    kube.start()
    phases["back"] = create_pods(store, "back", 10)
    wait_bound(store, phases["back"], "kube-scheduler again")
    # figures for the README (printed, not asserted: a busy machine stretches them)
    print(f"takeover: kube-scheduler stopped in {t_stopped - t_stop:.1f} s; shardsched started and bound the "
          f"{len(phases['racing']) + len(phases['between']) + len(phases['during'])} waiting pods in "
          f"{t_switched - t_start:.1f} s; the way back took {time.monotonic() - t_back:.1f} s to the last binding")
    return phases


def assert_bound_once(cluster, phases: dict[str, list[str]], seen: dict[str, list[str]]) -> None:
    """Each pod bound to one node, once; at most one Scheduled event for it, naming that node,
    from the scheduler of its phase. A pod kube-scheduler bound as it stopped may have none:
    kube-scheduler's event broadcaster does not flush on exit (so only the racing pods may go
    without; everyone else's are waited for)."""
    who = {"before": {"default-scheduler"}, "back": {"default-scheduler"},
           "racing": {"default-scheduler", "shardsched"},
           "between": {"shardsched"}, "during": {"shardsched"}, "after": {"shardsched"}}
    everyone = [n for names in phases.values() for n in names]
    assert {n: seen.get(n) for n in everyone if len(seen.get(n, ())) != 1} == {}
    settled = [n for phase, names in phases.items() if phase != "racing" for n in names]
    wait_for(lambda: f"Scheduled events: {scheduled_events(cluster)}",
             lambda: all(scheduled_events(cluster).get(n) for n in settled), TIMEOUT_S)
    time.sleep(5)  # a second binding's event would follow its first
    events = scheduled_events(cluster)
    for phase, names in phases.items():
        for name in names:
            assert len(events.get(name, ())) <= 1, (name, events[name])
            for reporter, note in events.get(name, ()):
                assert reporter in who[phase], (name, reporter)
                assert note.endswith(f"{NS}/{name} to {seen[name][0]}"), (name, note, seen[name])


def test_take_over_from_kube_scheduler_and_back(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with control_plane(tmp_path) as cluster:
        rendered = subprocess.run(["kubectl", "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(STATIC)],
                                  capture_output=True, text=True, check=True).stdout
        cluster.kubectl("apply", "-f", "-", input=rendered)
        store = KubeStore(str(cluster.kubeconfig))
        kwok_nodes(store, 3, "takeover")
        kube_vs.create_namespace(store, NS)
        kube, static, watch = KubeScheduler(cluster, work), StaticPods(cluster, work), PodWatch(cluster, work)
        with Teardown(work, tmp_path) as undo:
            undo.callback(kube.stop)
            undo.callback(static.stop)
            undo.callback(watch.proc.kill)
            kube.start()
            phases = switch(store, cluster, kube, static)
            assert_bound_once(cluster, phases, watch.nodes())
            # as the README's step 7 checks, with the binder's kubeconfig
            check = subprocess.run([str(ROOT / ".venv/bin/shardsched"), "verify", "--store",
                                    f"kube://{static.etc}/shardsched-binder.conf"], capture_output=True, text=True,
                                   timeout=300)
            assert check.returncode == 0, check.stdout + check.stderr
