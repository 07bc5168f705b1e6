"""deploy/: `kubectl kustomize` renders it, and every object passes the API server's own
schema validation (server-side dry run with strict field validation against the test
kube-apiserver: unknown or mistyped fields fail). The pods pass Pod Security `restricted`
(a server-side dry run of each workload's pod in the namespace, which enforces it). The RBAC
objects are applied for real and each component's ServiceAccount is checked to be allowed
exactly what it needs. The NetworkPolicies admit exactly the components' own traffic and the
metrics scraper, and the ServiceMonitor component scrapes every component."""
from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("Deployment", "StatefulSet")
COMPONENTS = ("dispatcher", "shard", "binder")


def rendered(path: Path = ROOT / "deploy") -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def workloads(objs) -> dict[str, dict]:
    """Component name -> its Deployment or StatefulSet."""
    return {o["metadata"]["name"].removeprefix("shardsched-"): o for o in objs if o["kind"] in WORKLOADS}


def pod_of(workload: dict, name: str) -> dict:
    """The pod a controller would create from the workload's template."""
    template = copy.deepcopy(workload["spec"]["template"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {**template["metadata"], "name": name, "namespace": workload["metadata"]["namespace"]},
            "spec": template["spec"]}


def test_kustomize_renders_the_expected_objects():
    objs = rendered()
    kinds = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objs)
    for expected in ("Namespace/shardsched", "StatefulSet/shardsched-dispatcher", "Deployment/shardsched-binder",
                     "StatefulSet/shardsched-shard", "Service/shardsched-dispatcher", "Service/shardsched-shard",
                     "ClusterRole/shardsched-shard", "Role/shardsched-dispatcher-leases",
                     "PodDisruptionBudget/shardsched-dispatcher", "PodDisruptionBudget/shardsched-shard",
                     "PodDisruptionBudget/shardsched-binder", "NetworkPolicy/shardsched-default-deny",
                     "CustomResourceDefinition/podgroups.scheduling.x-k8s.io"):
        assert expected in kinds
    assert not any(o["kind"] == "ServiceMonitor" for o in objs), "the base must not need the operator's CRD"
    config = next(o for o in objs if o["kind"] == "ConfigMap")
    cfg = yaml.safe_load(config["data"]["config.yaml"])
    assert cfg["store"]["url"] == "kube://"
    done = subprocess.run([str(ROOT / ".venv/bin/shardsched"), "config", "validate", "/dev/stdin"],
                          input=config["data"]["config.yaml"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    shard = workloads(objs)["shard"]
    env = shard["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "SHARD_ID", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}} in env


def test_every_workload_is_hardened_and_probes_health():
    objs = rendered()
    found = workloads(objs)
    assert set(found) == set(COMPONENTS)
    assert found["binder"]["kind"] == "Deployment" and found["binder"]["spec"]["replicas"] >= 2
    assert found["binder"]["spec"]["strategy"]["type"] == "RollingUpdate"
    assert found["dispatcher"]["spec"]["replicas"] >= 2, "a standby dispatcher"
    budgets = {o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] for o in objs
               if o["kind"] == "PodDisruptionBudget"}
    assert budgets == {f"shardsched-{c}" for c in COMPONENTS}
    for name, o in found.items():
        spec = o["spec"]["template"]["spec"]
        (c,) = spec["containers"]
        assert c["command"][:2] == ["python", "-m"] and "sed" not in " ".join(c["command"] + c["args"])
        args = c["args"]
        assert args[args.index("--host") + 1] == "$(POD_IP)"
        assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in c["env"]
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
        assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "metrics"}
        assert c["resources"]["requests"] and {p["name"] for p in c["ports"]} == {"grpc", "metrics"}
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["priorityClassName"] == "system-cluster-critical"
        (term,) = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == o["spec"]["selector"]["matchLabels"]
        mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
        assert mounts["/etc/shardsched"]["readOnly"] is True and "/tmp" in mounts


def test_every_rendered_object_passes_server_side_schema_validation(kube_cluster):
    objs = rendered()
    namespace = [o for o in objs if o["kind"] == "Namespace"]
    rest = [o for o in objs if o["kind"] != "Namespace"]
    kube_cluster.kubectl("apply", "--validate=strict", "-f", "-", input=yaml.safe_dump_all(namespace))
    out = kube_cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                               input=yaml.safe_dump_all(rest))
    assert out.stdout.count("(server dry run)") == len(rest), out.stdout
    assert "PodSecurity" not in out.stderr, out.stderr  # the namespace warns on workloads too
    broken = [copy.deepcopy(o) for o in rest if o["kind"] == "StatefulSet"]
    broken[0]["spec"]["template"]["spec"]["containers"][0]["readinessProb"] = {}
    out = kube_cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                               input=yaml.safe_dump_all(broken), check=False)
    assert out.returncode != 0 and "readinessProb" in out.stderr, "strict validation must catch a typo"


def test_the_pods_pass_pod_security_restricted(kube_cluster):
    """The namespace enforces `restricted`, which the API server applies to pods (controllers
    only get warnings): each workload's pod is created with a server-side dry run there. A pod
    with one of the required settings missing is refused, so the check is real."""
    objs = rendered()
    ns = next(o for o in objs if o["kind"] == "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
        [o for o in objs if o["kind"] in ("Namespace", "ServiceAccount", "ConfigMap")]))
    pods = [pod_of(w, f"psa-{name}") for name, w in workloads(objs).items()]
    out = kube_cluster.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(pods))
    assert out.stdout.count("created (server dry run)") == len(pods), out.stdout + out.stderr
    for breach in ("seccompProfile", "allowPrivilegeEscalation", "capabilities"):
        bad = copy.deepcopy(pods[0])
        target = bad["spec"] if breach == "seccompProfile" else bad["spec"]["containers"][0]
        del target["securityContext"][breach]
        out = kube_cluster.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(bad), check=False)
        assert out.returncode != 0 and 'violates PodSecurity "restricted' in out.stderr, (breach, out.stderr)


def test_each_component_is_allowed_what_it_needs_and_no_more(kube_cluster):
    rbac = [o for o in rendered() if o["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "Role",
                                                     "ClusterRoleBinding", "RoleBinding")]
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))

    def can(sa: str, verb: str, resource: str, namespace: str = "default") -> bool:
        """`resource` is TYPE, TYPE/subresource (pods/binding) or TYPE:NAME (one object)."""
        resource, _, name = resource.partition(":")
        resource, _, sub = resource.partition("/")
        extra = [f"--subresource={sub}"] if sub else []
        target = f"{resource}/{name}" if name else resource
        out = kube_cluster.kubectl("auth", "can-i", verb, target, *extra, "-n", namespace,
                                   f"--as=system:serviceaccount:shardsched:shardsched-{sa}", check=False)
        return out.stdout.strip() == "yes"

    lease = "leases.coordination.k8s.io"
    ns = "shardsched"
    groups = "podgroups.scheduling.x-k8s.io"
    allowed = {
        "dispatcher": [("watch", "pods"), ("list", "pods"), ("list", lease, ns), ("create", lease, ns),
                       ("update", f"{lease}:shardsched-dispatcher", ns), ("get", f"{lease}:shardsched-dispatcher", ns),
                       ("delete", f"{lease}:shardsched-dispatcher", ns), ("patch", f"{lease}:shardsched-dispatcher-1", ns),
                       ("watch", groups), ("update", f"{groups}/status")],
        "shard": [("watch", "nodes"), ("watch", "pods"), ("list", "poddisruptionbudgets.policy"),
                  ("watch", "priorityclasses.scheduling.k8s.io"), ("patch", "pods/status"),
                  ("create", "events.events.k8s.io"), ("patch", "events.events.k8s.io"),
                  ("create", lease, ns), ("patch", f"{lease}:shardsched-shard-0", ns), ("list", lease, ns),
                  ("list", groups), ("watch", groups),
                  ("watch", "persistentvolumeclaims"), ("list", "persistentvolumes"),
                  ("watch", "storageclasses.storage.k8s.io"), ("list", "csinodes.storage.k8s.io"),
                  ("watch", "services"), ("list", "replicationcontrollers"), ("watch", "replicasets.apps"),
                  ("list", "statefulsets.apps"), ("watch", "namespaces")],
        "binder": [("watch", "nodes"), ("list", "pods"), ("watch", "poddisruptionbudgets.policy"),
                   ("watch", "priorityclasses.scheduling.k8s.io"), ("create", "pods/binding"),
                   ("create", "pods/eviction"), ("delete", "pods"), ("create", "events.events.k8s.io"),
                   ("patch", "events.events.k8s.io"), ("patch", lease, ns), ("update", lease, ns),
                   ("delete", lease, ns), ("watch", groups), ("update", groups),
                   ("watch", "storageclasses.storage.k8s.io"), ("watch", "csinodes.storage.k8s.io"),
                   ("update", "persistentvolumes"), ("update", "persistentvolumeclaims"),
                   ("watch", "persistentvolumeclaims"), ("list", "namespaces"), ("watch", "services"),
                   ("list", "replicationcontrollers"), ("watch", "replicasets.apps"), ("list", "statefulsets.apps")],
    }
    denied = {
        "dispatcher": [("create", "pods/binding"), ("patch", "pods/status"), ("list", "nodes"),
                       ("list", "secrets"), ("create", "events.events.k8s.io"),
                       ("update", f"{lease}:shardsched-binder-partition-0", ns),
                       ("update", f"{lease}:shardsched-shard-0", ns), ("patch", lease, "kube-node-lease"),
                       ("update", groups), ("delete", groups)],
        "shard": [("create", "pods/binding"), ("create", "pods/eviction"), ("delete", "pods"),
                  ("update", "services"), ("delete", "replicasets.apps"),
                  ("update", "pods"), ("list", "secrets"), ("patch", "nodes"), ("delete", "events.events.k8s.io"),
                  ("update", f"{lease}:shardsched-dispatcher", ns),
                  ("update", f"{lease}:shardsched-binder-partition-0", ns), ("update", groups),
                  ("update", f"{groups}/status"), ("update", "persistentvolumes"),
                  ("update", "persistentvolumeclaims")],
        "binder": [("patch", "pods/status"), ("update", "pods"), ("update", "nodes"), ("list", "secrets"),
                   ("delete", "namespaces"), ("update", "services"), ("delete", "replicasets.apps"),
                   ("create", lease, "default"), ("update", f"{groups}/status"), ("delete", groups),
                   ("create", groups), ("delete", "persistentvolumes"), ("create", "persistentvolumes"),
                   ("update", "storageclasses.storage.k8s.io")],
    }
    for sa, checks in allowed.items():
        for check in checks:
            assert can(sa, *check), f"{sa} must be allowed to {check}"
    for sa, checks in denied.items():
        for check in checks:
            assert not can(sa, *check), f"{sa} must not be allowed to {check}"



def test_the_binder_writes_only_its_own_leases(kube_cluster):
    """RBAC cannot name the binder's own Lease (its pod's name) nor match a prefix, so its Role
    grants writes to every Lease in the namespace; the ValidatingAdmissionPolicy of deploy/
    limits its writes to `shardsched-binder-*` (its own and the partitions'): it could delete
    the dispatcher's leader Lease before. Checked with real requests made as the binder."""
    objs = [o for o in rendered() if o["kind"] in ("Namespace", "ServiceAccount", "Role", "RoleBinding",
                                                    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")]
    assert any(o["kind"] == "ValidatingAdmissionPolicy" for o in objs), "deploy/ has no lease policy"
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))
    as_binder = ["-n", "shardsched", "--as=system:serviceaccount:shardsched:shardsched-binder"]

    def lease(name: str) -> str:
        return yaml.safe_dump({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "metadata": {"name": name, "namespace": "shardsched"},
                               "spec": {"holderIdentity": "x", "leaseDurationSeconds": 5}})

    deadline = time.monotonic() + 120  # the API server takes a new policy up within seconds
    while True:  # a probe Lease, made again while the binder may still delete it
        kube_cluster.kubectl("apply", "-f", "-", input=lease("shardsched-dispatcher"))
        out = kube_cluster.kubectl("delete", "lease", "shardsched-dispatcher", *as_binder, check=False)
        if out.returncode != 0:
            break
        assert time.monotonic() < deadline, "the binder may still delete the dispatcher's leader Lease"
        time.sleep(0.5)
    assert "ValidatingAdmissionPolicy" in out.stderr and "shardsched-binder-*" in out.stderr, out.stderr
    for name in ("shardsched-dispatcher-0", "shardsched-shard-0", "someone-elses"):
        out = kube_cluster.kubectl("create", "-f", "-", *as_binder, input=lease(name), check=False)
        assert out.returncode != 0 and "ValidatingAdmissionPolicy" in out.stderr, (name, out.stderr)
    for name in ("shardsched-binder-shardsched-binder-7d9f-x2k", "shardsched-binder-partition-0"):
        kube_cluster.kubectl("create", "-f", "-", *as_binder, input=lease(name))
        kube_cluster.kubectl("patch", "lease", name, *as_binder, "--type=merge",
                             "-p", '{"spec": {"holderIdentity": "y"}}')
        kube_cluster.kubectl("delete", "lease", name, *as_binder)
    kube_cluster.kubectl("delete", "lease", "shardsched-dispatcher", "-n", "shardsched")


# --- the NetworkPolicies, read as the network plugin reads them ------------------------------

def _matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def admitted(policies: list[dict], dst: dict, port: str, src: dict) -> bool:
    """Whether traffic from pod `src` ({"ns", "labels", "ns_labels"}) to the named `port` of
    shardsched pod `dst` (labels) is admitted: policies selecting `dst` isolate it; then some
    ingress rule of one of them must admit both the source and the port."""
    selecting = [p for p in policies if _matches(p["spec"]["podSelector"], dst)]
    assert selecting, "every shardsched pod must be isolated"
    for p in selecting:
        for rule in p["spec"].get("ingress") or []:
            ports = rule.get("ports")
            if ports is not None and not any(x.get("port") == port for x in ports):
                continue
            for peer in rule.get("from") or []:
                ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
                ns_ok = _matches(ns_sel, src["ns_labels"]) if ns_sel is not None else src["ns"] == "shardsched"
                if ns_ok and (pod_sel is None or _matches(pod_sel, src["labels"])):
                    return True
    return False


def test_network_policies_admit_only_the_components_and_the_scraper():
    policies = [o for o in rendered() if o["kind"] == "NetworkPolicy"]

    def component(name):
        return {"ns": "shardsched", "ns_labels": {"kubernetes.io/metadata.name": "shardsched"},
                "labels": {"app.kubernetes.io/name": f"shardsched-{name}", "app.kubernetes.io/part-of": "shardsched"}}

    scraper = {"ns": "monitoring", "ns_labels": {"kubernetes.io/metadata.name": "monitoring"},
               "labels": {"app.kubernetes.io/name": "prometheus"}}
    stranger = {"ns": "default", "ns_labels": {"kubernetes.io/metadata.name": "default"}, "labels": {"app": "web"}}
    sources = {c: component(c) for c in COMPONENTS} | {"scraper": scraper, "stranger": stranger}
    expected = {("shard", "grpc"): {"dispatcher"}, ("binder", "grpc"): {"shard"}, ("dispatcher", "grpc"): set()}
    for dst in COMPONENTS:
        expected[(dst, "metrics")] = {"scraper"}
    for (dst, port), who in expected.items():
        got = {name for name, src in sources.items()
               if admitted(policies, component(dst)["labels"], port, src)}
        assert got == who, (dst, port, got)


def test_the_servicemonitor_component_scrapes_every_component(tmp_path):
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(ROOT / "deploy", tmp_path)],
        "components": [os.path.relpath(ROOT / "deploy" / "components" / "servicemonitor", tmp_path)]}))
    objs = rendered(tmp_path)
    (monitor,) = [o for o in objs if o["kind"] == "ServiceMonitor"]
    services = [o for o in objs if o["kind"] == "Service"]
    scraped = [s for s in services if _matches(monitor["spec"]["selector"], s["metadata"]["labels"])
               and s["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]]
    assert {s["metadata"]["name"] for s in scraped} == {f"shardsched-{c}" for c in COMPONENTS}
    (endpoint,) = monitor["spec"]["endpoints"]
    for s in scraped:
        assert endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}


def test_the_monitoring_component_renders_rules_and_dashboard_for_the_scraped_jobs(tmp_path):
    """The rules select `job`s by the Services' names, which is what the ServiceMonitor makes
    of them; the dashboard is a ConfigMap Grafana's sidecar picks up."""
    components = ROOT / "deploy" / "components"
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(ROOT / "deploy", tmp_path)],
        "components": [os.path.relpath(components / c, tmp_path) for c in ("servicemonitor", "monitoring")]}))
    objs = rendered(tmp_path)
    (rule,) = [o for o in objs if o["kind"] == "PrometheusRule"]
    assert rule["metadata"]["namespace"] == "shardsched"
    services = {o["metadata"]["name"] for o in objs if o["kind"] == "Service"}
    jobs = set(re.findall(r'job="([^"]+)"', yaml.safe_dump(rule["spec"])))
    assert jobs and jobs <= services, jobs - services
    (board,) = [o for o in objs if o["kind"] == "ConfigMap" and "grafana-dashboard.json" in o.get("data", {})]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(board["data"]["grafana-dashboard.json"])["uid"] == "shardsched"


def test_the_image_is_multi_stage_pinned_and_ships_the_runtime_only():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    bases = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert len(bases) >= 2, "a build stage and a runtime stage"
    assert all(re.search(r"@sha256:[0-9a-f]{64}$", b) for b in bases), bases
    copied = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("COPY ") and "--from" not in line]
    assert "benchmarks" not in " ".join(copied) and "tests" not in " ".join(copied)
    assert re.search(r"^USER 65532", dockerfile, re.M)
    for o in workloads(rendered()).values():
        (c,) = o["spec"]["template"]["spec"]["containers"]
        assert "python -m " in " ".join(c["command"])
