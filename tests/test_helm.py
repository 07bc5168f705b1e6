"""deploy/helm/shardsched: `helm lint` passes; `helm template` renders the objects of the
kustomize base (and of its monitoring components) field for field, but for Helm's own labels,
the ConfigMap's name hash kustomize adds and the pods' config checksum; the values change what
they say (replicas, counts, the lease names RBAC grants, security, resources); the rendered
objects pass the test API server's strict server-side validation. helm is built by `make
kube-bins` (Makefile: HELM)."""
from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from common import config as config_mod

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "shardsched"
#: The test API server's version (tests/kube/go.mod); the chart needs 1.30 or later.
KUBE_VERSION = re.search(r"^require k8s.io/kubernetes v(\S+)", (ROOT / "tests/kube/go.mod").read_text(), re.M)[1]
#: Cluster-scoped kinds kubectl's kustomize gives a namespace all the same (the API server
#: ignores it).
CLUSTER_SCOPED_UNKNOWN_TO_KUSTOMIZE = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance")


def helm_binary() -> Path:
    version = re.search(r"^HELM_VERSION := (\S+)", (ROOT / "Makefile").read_text(), re.M)[1]
    path = ROOT / ".cache" / "helm-bin" / f"helm-{version}" / "helm"
    if not path.exists():
        pytest.fail(f"no {path}: run `make kube-bins`", pytrace=False)
    return path


def helm(*args, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, timeout=300)
    assert not check or done.returncode == 0, done.stderr
    return done


def template(*sets: str, check: bool = True):
    """The chart's objects in namespace shardsched with `--set` values (or the failed run)."""
    args = ["template", "shardsched", str(CHART), "--namespace", "shardsched", "--include-crds",
            "--kube-version", KUBE_VERSION]
    for s in sets:
        args += ["--set", s]
    done = helm(*args, check=check)
    return [d for d in yaml.safe_load_all(done.stdout) if d] if check else done


def kustomized(*components: str, tmp_path: Path | None = None) -> list[dict]:
    path = ROOT / "deploy"
    if components:
        (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
            "resources": [os.path.relpath(path, tmp_path)],
            "components": [os.path.relpath(path / "components" / c, tmp_path) for c in components]}))
        path = tmp_path
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def normalised(objs: list[dict]) -> dict:
    """(kind, name) -> the object without what only one of the two tools adds."""
    out = {}
    for o in copy.deepcopy(objs):
        text = re.sub(r"shardsched-config-[a-z0-9]{10}\b", "shardsched-config", yaml.safe_dump(o))
        o = yaml.safe_load(text)
        if o["kind"] in CLUSTER_SCOPED_UNKNOWN_TO_KUSTOMIZE:
            o["metadata"].pop("namespace", None)
        labels = o["metadata"].get("labels") or {}
        for key in HELM_LABELS:
            labels.pop(key, None)
        template_meta = ((o.get("spec") or {}).get("template") or {}).get("metadata")
        if template_meta is not None:
            (template_meta.get("annotations") or {}).pop("checksum/config", None)
            if not template_meta.get("annotations"):
                template_meta.pop("annotations", None)
        if o["kind"] == "ConfigMap" and "config.yaml" in o.get("data", {}):
            o["data"]["config.yaml"] = config_mod.validate(yaml.safe_load(o["data"]["config.yaml"])).to_dict()
        if o["kind"] == "ConfigMap" and "grafana-dashboard.json" in o.get("data", {}):
            o["data"]["grafana-dashboard.json"] = o["data"]["grafana-dashboard.json"].strip()
        out[(o["kind"], o["metadata"]["name"])] = o
    return out


def assert_same(chart: list[dict], base: list[dict]) -> None:
    got, want = normalised(chart), normalised(base)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_helm_lint_passes():
    done = helm("lint", "--strict", "--kube-version", KUBE_VERSION, str(CHART))
    assert "0 chart(s) failed" in done.stdout, done.stdout


def test_the_chart_renders_the_kustomize_base():
    assert_same(template("namespace.create=true"), kustomized())


def test_with_monitoring_it_renders_the_base_and_its_components(tmp_path):
    chart = template("namespace.create=true", "serviceMonitor.enabled=true", "alerts.enabled=true",
                     "dashboards.enabled=true")
    assert_same(chart, kustomized("servicemonitor", "monitoring", tmp_path=tmp_path))


def test_values_set_replicas_counts_and_the_leases_rbac_grants():
    objs = {(o["kind"], o["metadata"]["name"]): o for o in template(
        "dispatcher.replicas=3", "shards.replicas=20", "binders.replicas=5", "binders.partitions=4",
        "shards.resources.requests.cpu=2")}
    assert objs[("StatefulSet", "shardsched-dispatcher")]["spec"]["replicas"] == 3
    shard = objs[("StatefulSet", "shardsched-shard")]
    assert shard["spec"]["replicas"] == 20
    assert shard["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == 2
    assert objs[("Deployment", "shardsched-binder")]["spec"]["replicas"] == 5
    cfg = config_mod.validate(yaml.safe_load(objs[("ConfigMap", "shardsched-config")]["data"]["config.yaml"]))
    assert (cfg.shards.count, cfg.binders.count) == (20, 4)
    names = {r: objs[("Role", f"shardsched-{r}-leases")]["rules"][1]["resourceNames"] for r in ("dispatcher", "shard")}
    assert names["dispatcher"] == ["shardsched-dispatcher"] + [f"shardsched-dispatcher-{i}" for i in range(3)]
    assert names["shard"] == [f"shardsched-shard-{i}" for i in range(20)]
    assert ("Namespace", "shardsched") not in objs  # left to helm install --create-namespace


def test_security_modes_mount_the_secret_and_bad_values_are_named():
    objs = {(o["kind"], o["metadata"]["name"]): o for o in template("security.mode=token",
                                                                     "security.secretName=shardsched-token")}
    cfg = config_mod.validate(yaml.safe_load(objs[("ConfigMap", "shardsched-config")]["data"]["config.yaml"]))
    assert (cfg.security.mode, cfg.security.token_file) == ("token", "/etc/shardsched/security/token")
    for kind, name in (("StatefulSet", "shardsched-dispatcher"), ("StatefulSet", "shardsched-shard"),
                       ("Deployment", "shardsched-binder")):
        spec = objs[(kind, name)]["spec"]["template"]["spec"]
        assert {"name": "security", "secret": {"secretName": "shardsched-token", "defaultMode": 0o400}} in spec["volumes"]
        assert {"name": "security", "mountPath": "/etc/shardsched/security", "readOnly": True} in \
            spec["containers"][0]["volumeMounts"]
    objs = {(o["kind"], o["metadata"]["name"]): o for o in template("security.mode=mtls", "security.secretName=certs")}
    cfg = config_mod.validate(yaml.safe_load(objs[("ConfigMap", "shardsched-config")]["data"]["config.yaml"]))
    assert (cfg.security.mode, cfg.security.ca_file) == ("mtls", "/etc/shardsched/security/ca.crt")
    done = template("security.mode=token", check=False)
    assert done.returncode != 0 and "security.secretName: is required with security.mode token" in done.stderr
    done = template("security.mode=tls", check=False)
    assert done.returncode != 0 and 'security.mode: must be none, token or mtls, got "tls"' in done.stderr


def test_the_rendered_objects_pass_server_side_validation(kube_cluster):
    objs = template("namespace.create=true")
    namespace = [o for o in objs if o["kind"] == "Namespace"]
    rest = [o for o in objs if o["kind"] != "Namespace"]
    kube_cluster.kubectl("apply", "--validate=strict", "-f", "-", input=yaml.safe_dump_all(namespace))
    out = kube_cluster.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-",
                               input=yaml.safe_dump_all(rest))
    assert out.stdout.count("(server dry run)") == len(rest), out.stdout
    assert "PodSecurity" not in out.stderr, out.stderr
