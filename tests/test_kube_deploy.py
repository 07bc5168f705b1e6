"""deploy/: `kubectl kustomize` renders it, and every object passes the API server's own
schema validation (server-side dry run with strict field validation against the test
kube-apiserver: unknown or mistyped fields fail). The RBAC objects are then applied for real
and each component's ServiceAccount is checked to be allowed exactly what it needs."""
from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def rendered() -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_kustomize_renders_the_expected_objects():
    objs = rendered()
    kinds = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objs)
    for expected in ("Namespace/shardsched", "Deployment/shardsched-dispatcher", "Deployment/shardsched-binder",
                     "StatefulSet/shardsched-shard", "Service/shardsched-dispatcher", "Service/shardsched-shard",
                     "ClusterRole/shardsched-shard", "Role/shardsched-leases"):
        assert expected in kinds
    config = next(o for o in objs if o["kind"] == "ConfigMap")
    cfg = yaml.safe_load(config["data"]["config.yaml"])
    assert cfg["store"]["url"] == "kube://"
    done = subprocess.run([str(ROOT / ".venv/bin/shardsched"), "config", "validate", "/dev/stdin"],
                          input=config["data"]["config.yaml"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    shard = next(o for o in objs if o["kind"] == "StatefulSet")
    env = shard["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "SHARD_ID", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}}} in env
    for o in objs:
        if o["kind"] in ("Deployment", "StatefulSet"):
            (c,) = o["spec"]["template"]["spec"]["containers"]
            assert c["resources"]["requests"] and c["readinessProbe"] and c["livenessProbe"]
            assert {p["name"] for p in c["ports"]} == {"grpc", "metrics"}


def test_every_rendered_object_passes_server_side_schema_validation(kube_cluster):
    objs = rendered()
    namespace = [o for o in objs if o["kind"] == "Namespace"]
    rest = [o for o in objs if o["kind"] != "Namespace"]
    kube_cluster.kubectl("apply", "--validate=strict", "-f", "-", input=yaml.safe_dump_all(namespace))
    out = kube_cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                               input=yaml.safe_dump_all(rest))
    assert out.stdout.count("(server dry run)") == len(rest), out.stdout
    broken = [dict(o) for o in rest if o["kind"] == "StatefulSet"]
    broken[0] = yaml.safe_load(yaml.safe_dump(broken[0]))
    broken[0]["spec"]["template"]["spec"]["containers"][0]["readinessProb"] = {}
    out = kube_cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                               input=yaml.safe_dump_all(broken), check=False)
    assert out.returncode != 0 and "readinessProb" in out.stderr, "strict validation must catch a typo"


def test_each_component_is_allowed_what_it_needs_and_no_more(kube_cluster):
    rbac = [o for o in rendered() if o["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "Role",
                                                     "ClusterRoleBinding", "RoleBinding")]
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rbac))

    def can(sa: str, verb: str, resource: str, namespace: str = "default") -> bool:
        resource, _, sub = resource.partition("/")
        extra = [f"--subresource={sub}"] if sub else []
        out = kube_cluster.kubectl("auth", "can-i", verb, resource, *extra, "-n", namespace,
                                   f"--as=system:serviceaccount:shardsched:shardsched-{sa}", check=False)
        return out.stdout.strip() == "yes"

    lease = ("leases.coordination.k8s.io", "shardsched")
    allowed = {
        "dispatcher": [("watch", "pods"), ("list", "pods"), ("patch", *lease), ("list", *lease)],
        "shard": [("watch", "nodes"), ("watch", "pods"), ("list", "poddisruptionbudgets.policy"),
                  ("watch", "priorityclasses.scheduling.k8s.io"), ("patch", "pods/status"),
                  ("watch", "persistentvolumeclaims"), ("list", "persistentvolumes"),
                  ("watch", "storageclasses.storage.k8s.io"), ("list", "csinodes.storage.k8s.io"),
                  ("create", *lease), ("patch", *lease)],
        "binder": [("watch", "nodes"), ("list", "pods"), ("watch", "poddisruptionbudgets.policy"),
                   ("watch", "priorityclasses.scheduling.k8s.io"), ("create", "pods/binding"),
                   ("create", "pods/eviction"), ("delete", "pods"), ("patch", *lease),
                   ("update", *lease), ("delete", *lease), ("watch", "storageclasses.storage.k8s.io"),
                   ("watch", "csinodes.storage.k8s.io"), ("update", "persistentvolumes"),
                   ("update", "persistentvolumeclaims"), ("watch", "persistentvolumeclaims")],
    }
    denied = {
        "dispatcher": [("create", "pods/binding"), ("patch", "pods/status"), ("list", "nodes"),
                       ("list", "secrets"), ("patch", "leases.coordination.k8s.io", "kube-node-lease")],
        "shard": [("create", "pods/binding"), ("create", "pods/eviction"), ("delete", "pods"),
                  ("update", "pods"), ("list", "secrets"), ("patch", "nodes"), ("update", "persistentvolumes"),
                  ("update", "persistentvolumeclaims")],
        "binder": [("patch", "pods/status"), ("update", "pods"), ("update", "nodes"), ("list", "secrets"),
                   ("create", "leases.coordination.k8s.io", "default"), ("delete", "persistentvolumes"),
                   ("create", "persistentvolumes"), ("update", "storageclasses.storage.k8s.io")],
    }
    for sa, checks in allowed.items():
        for check in checks:
            assert can(sa, *check), f"{sa} must be allowed to {check}"
    for sa, checks in denied.items():
        for check in checks:
            assert not can(sa, *check), f"{sa} must not be allowed to {check}"


def test_the_image_ships_the_runtime_only_and_runs_the_roles_as_modules():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    copied = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("COPY")]
    assert "benchmarks" not in copied and "tests" not in copied
    for o in rendered():
        if o["kind"] in ("Deployment", "StatefulSet"):
            (c,) = o["spec"]["template"]["spec"]["containers"]
            assert "python -m " in " ".join(c.get("command", []) + c.get("args", []))
