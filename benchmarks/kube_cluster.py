"""A real Kubernetes control plane on loopback for benchmarks/kube_vs.py and the tests of the
`kube` store, the deploy manifests and the end-to-end run (tests/kube_cluster.py's fixture).

etcd (Debian's etcd-server), kube-apiserver and kwok, the last two built from the Go module
proxy by `make kube-bins` into .cache/kube-bin/ (once per machine; tests/kube/go.mod says
which Kubernetes version). Nothing is skipped: when a binary is missing it runs
`make kube-bins`, and if that fails it raises ClusterError with the output.

The API server is a private one: a throwaway CA signs its serving certificate (openssl),
clients authenticate with a static token mapped to system:masters (or, for the users of
`user_kubeconfig`, a client certificate its CA signs, as kubeadm's components do), RBAC is on (so the
deploy/ manifests' roles can be checked against it), and API priority and fairness is off so
that the schedulers under test are bounded by the server's work, not by a flow-control queue.
kwok plays kubelet for nodes annotated `kwok.x-k8s.io/node: fake`: it keeps them Ready and
runs the pods bound to them. Its node heartbeats are a kubelet's with node leases
(KWOK_HEARTBEATS): the Lease renewed every 10 s (a 40 s lease, renewed at a quarter of it)
and the node's status written every 5 to 5.5 minutes (the kubelet's nodeStatusReportFrequency
of 5 minutes, jittered). kwok v0.7.0 picks its 20-25 s heartbeat stage when node leases are
on, so the stages are given explicitly (KWOK_STAGES).
The PodGroup CustomResourceDefinition shardsched ships (deploy/crd-podgroup.yaml) is applied
once the API server is ready.

`feature_gates` (and `runtime_config`) are given alike to the API server and the kube-scheduler
it starts: kube v1.37's native gangs need GenericWorkload on both and the API server serving
scheduling.k8s.io/v1beta1 (GENERIC_WORKLOAD).
"""
from __future__ import annotations

import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


KWOK_HEARTBEATS = {"node_lease_renew_s": 10, "node_lease_duration_s": 40, "node_status_every_s": [300, 330]}

#: Pods kwok marks Running (or deletes) at once. Its default, 4, is one kubelet's pace for a
#: whole fleet: with the API server busy each status write takes tens of milliseconds, so kwok
#: ran 50-100 pods a second and a backlog's pods were still Pending long after they were bound
#: (and those of one kube_vs side were being run while the next side was measured). Each node's
#: kubelet writes its own pods' statuses, in parallel with the others.
KWOK_POD_WORKERS = 64

#: kwok's options (KWOK_POD_WORKERS), then its node stages: make a new node Ready (conditions,
#: addresses, phase), then write its status again every node_status_every_s, as a kubelet does
#: when nothing changed.
KWOK_STAGES = """
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options: {podPlayStageParallelism: %(pod_workers)d}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: shardsched-node-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True']}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - {type: {{ .type | Quote }}, status: {{ .status | Quote }}, reason: {{ .reason | Quote }},
         message: {{ .message | Quote }}, lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      {{ end }}
      addresses:
      - {type: InternalIP, address: {{ NodeIP | Quote }}}
      - {type: Hostname, address: {{ NodeName | Quote }}}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: shardsched-node-status}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: In, values: ['True']}
  delay: {durationMilliseconds: %(first)d, jitterDurationMilliseconds: %(last)d}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
      - {type: {{ .type | Quote }}, status: {{ .status | Quote }}, reason: {{ .reason | Quote }},
         message: {{ .message | Quote }}, lastHeartbeatTime: {{ $now | Quote }},
         lastTransitionTime: {{ .lastTransitionTime | Quote }}}
      {{ end }}
""" % {"first": KWOK_HEARTBEATS["node_status_every_s"][0] * 1000,
       "last": KWOK_HEARTBEATS["node_status_every_s"][1] * 1000, "pod_workers": KWOK_POD_WORKERS}


class ClusterError(RuntimeError):
    """The control plane could not be built or started; the message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kube_bin_dir() -> Path:
    """The built binaries, building them first when they are missing (fails loudly)."""
    done = subprocess.run(["make", "-s", "--no-print-directory", "kube-bins"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterError(f"`make kube-bins` failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    out = subprocess.run(["make", "-s", "--no-print-directory", "kube-bin-dir"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    path = Path(out)
    for name in ("kube-apiserver", "kube-scheduler", "kwok"):
        if not (path / name).is_file():
            raise ClusterError(f"{path / name} missing after `make kube-bins`")
    return path


#: What kube v1.37's PodGroup (scheduling.k8s.io/v1beta1) and GangScheduling need: the gate on
#: the API server (its storage and pods' spec.schedulingGroup) and on kube-scheduler (which
#: then adds GangScheduling to the default profile), the beta API switched on (off by default).
GENERIC_WORKLOAD = {"feature_gates": {"GenericWorkload": True}, "runtime_config": "scheduling.k8s.io/v1beta1=true"}


#: The API server's own gates. WatchList off: from v1.34 a watch asked from resourceVersion 0
#: (how client-go's informers in kwok open every watch) is served as a watch-list stream,
#: which needs etcd to answer progress requests (v3.4.31+, v3.5.13+). Debian's etcd 3.4.23
#: does not, so each such watch ended at once with an error, and kwok saw new pods and its own
#: node Leases only when it relisted, 30-45 s apart: bound pods stayed Pending that long and
#: most Lease renewals were refused as conflicts. With the gate off such a watch is served as
#: before v1.34 (the objects as ADDED events, then the changes). Nothing else here watches
#: from 0: kube-scheduler and shardsched watch from their lists' resourceVersions.
APISERVER_GATES = {"WatchList": False}


def _gates(gates: dict[str, bool]) -> list[str]:
    return [f"--feature-gates={','.join(f'{k}={str(v).lower()}' for k, v in gates.items())}"] if gates else []


def print_logs(directory: Path, tail: int = 3000) -> None:
    """The end of every process log in `directory`, on stderr: what a failed run leaves to read."""
    for log in sorted(Path(directory).glob("*.log")):
        print(f"--- {log.name}\n{log.read_text(errors='replace')[-tail:]}", file=sys.stderr)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: Path) -> None:
    """CA, the API server's serving certificate for 127.0.0.1/localhost, and the
    service-account signing key."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=shardsched-test-ca", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "apiserver.key", "-out", "apiserver.csr",
             "-subj", "/CN=kube-apiserver", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n")
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "2", "-extfile", "san.ext", cwd=d)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


def write_kubeconfig(path: Path, server: str, ca: Path, token: str, namespace: str = "default") -> None:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {{server: "{server}", certificate-authority: "{ca}"}}
users:
- name: admin
  user: {{token: "{token}"}}
contexts:
- name: test
  context: {{cluster: test, user: admin, namespace: {namespace}}}
current-context: test
""")


class KubeCluster:
    """etcd + kube-apiserver (+ kwok) as child processes; `stop()` ends exactly those."""

    def __init__(self, workdir: Path, bin_dir: Path, kwok: bool = True,
                 feature_gates: dict[str, bool] | None = None, runtime_config: str | None = None):
        self.dir = workdir
        self.bin = bin_dir
        self.with_kwok = kwok
        self.gates = _gates(feature_gates or {})
        self.apiserver_gates = _gates({**APISERVER_GATES, **(feature_gates or {})})
        self.runtime_config = [f"--runtime-config={runtime_config}"] if runtime_config else []
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = workdir / "kubeconfig"

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = self.dir / f"{name}.log"
        self.logs[name] = log
        proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=self.dir)
        self.procs[name] = proc
        return proc

    def log_tail(self, name: str, n: int = 3000) -> str:
        try:
            return self.logs[name].read_text(errors="replace")[-n:]
        except (KeyError, OSError):
            return ""

    def start(self, timeout: float = 90.0) -> "KubeCluster":
        if shutil.which("etcd") is None:
            raise ClusterError("etcd not found: `make kube-bins` installs Debian's etcd-server")
        make_certs(self.dir)
        (self.dir / "tokens.csv").write_text(f"{self.token},admin,admin-uid,system:masters\n")
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn("etcd", [
            "etcd", "--name", "test", "--data-dir", str(self.dir / "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"test=http://127.0.0.1:{peer}",
            "--quota-backend-bytes", str(4 << 30), "--log-level", "warn"])
        d = self.dir
        self._spawn("kube-apiserver", [
            str(self.bin / "kube-apiserver"),
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.port),
            "--tls-cert-file", str(d / "apiserver.crt"), "--tls-private-key-file", str(d / "apiserver.key"),
            "--token-auth-file", str(d / "tokens.csv"),
            "--client-ca-file", str(d / "ca.crt"),  # users of client certificates (user_kubeconfig)
            "--authorization-mode", "Node,RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(d / "sa.pub"),
            "--service-account-signing-key-file", str(d / "sa.key"),
            "--service-cluster-ip-range", "10.96.0.0/16",
            # No controller-manager runs here: nothing would create each namespace's "default"
            # ServiceAccount that the first plugin insists on, nor lift the not-ready taint the
            # second puts on every new node (the node lifecycle controller does that).
            "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight", "3000", "--max-mutating-requests-inflight", "1500",
            "--endpoint-reconciler-type", "none",
            "--profiling=false", "--v", "1", *self.apiserver_gates, *self.runtime_config])
        write_kubeconfig(self.kubeconfig, self.server, d / "ca.crt", self.token)
        self._wait_ready(timeout)
        self.install_crds()
        if self.with_kwok:
            (self.dir / "kwok.yaml").write_text(KWOK_STAGES)
            self._spawn("kwok", [
                str(self.bin / "kwok"), "--kubeconfig", str(self.kubeconfig), "--config", str(self.dir / "kwok.yaml"),
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
                "--cidr", "10.0.0.1/16", "--node-ip", "10.0.0.1",
                "--node-lease-duration-seconds", str(KWOK_HEARTBEATS["node_lease_duration_s"])])
        return self

    def _wait_ready(self, timeout: float) -> None:
        ctx = ssl.create_default_context(cafile=str(self.dir / "ca.crt"))
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise ClusterError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")
            req = urllib.request.Request(f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.token}"})
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception as e:  # not listening yet, or a post-start hook still running
                last = str(e)
            time.sleep(0.3)
        raise ClusterError(f"kube-apiserver not ready after {timeout}s ({last}):\n{self.log_tail('kube-apiserver')}")

    def user_kubeconfig(self, path: Path, user: str, groups: tuple[str, ...] = (), namespace: str = "default") -> Path:
        """A kubeconfig for `user` (in `groups`) authenticated by a client certificate the
        cluster's CA signs, as `kubeadm kubeconfig user --client-name` writes one for a
        control-plane component (kube-scheduler's scheduler.conf is system:kube-scheduler's)."""
        stem = path.with_suffix("")
        key, csr, crt = (Path(f"{stem}.{ext}") for ext in ("key", "csr", "crt"))
        subject = "".join(f"/O={g}" for g in groups) + f"/CN={user}"
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", subject,
                 cwd=self.dir)
        _openssl("x509", "-req", "-in", str(csr), "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", str(crt), "-days", "2", cwd=self.dir)
        path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {{server: "{self.server}", certificate-authority: "{self.dir / 'ca.crt'}"}}
users:
- name: {user}
  user: {{client-certificate: "{crt}", client-key: "{key}"}}
contexts:
- name: test
  context: {{cluster: test, user: {user}, namespace: {namespace}}}
current-context: test
""")
        return path

    def install_crds(self) -> None:
        """The PodGroup definition shardsched ships (deploy/), established before anything
        lists PodGroups."""
        self.kubectl("apply", "-f", str(ROOT / "deploy" / "crd-podgroup.yaml"))
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     "crd/podgroups.scheduling.x-k8s.io")

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr or done.stdout}")
        return done

    def create_fleet(self, nodes: int, profile: str = "uniform", timeout: float = 600.0,
                     gpus_per_node: int = 0) -> None:
        """`shardsched fleet --nodes N --profile P [--gpus-per-node G] -o yaml | kubectl create -f -`
        (with G, a DeviceClass and each node's ResourceSlice of G GPUs), then wait until kwok has
        taken every node over (it holds the node's Lease)."""
        fleet = subprocess.run([str(ROOT / ".venv/bin/shardsched"), "fleet", "--nodes", str(nodes),
                                "--profile", profile, "--gpus-per-node", str(gpus_per_node), "-o", "yaml"],
                               capture_output=True, text=True, check=True).stdout
        self.kubectl("create", "-f", "-", input=fleet, timeout=timeout)
        names = {f"lease.coordination.k8s.io/kwok-node-{i}" for i in range(nodes)}
        deadline = time.monotonic() + timeout
        while True:
            held = set(self.kubectl("get", "leases", "-n", "kube-node-lease", "-o", "name").stdout.split())
            if names <= held:
                return
            assert time.monotonic() < deadline, f"kwok holds only {len(held & names)}/{nodes} node leases"
            time.sleep(0.5)

    def start_kube_scheduler(self, workdir: Path, qps: int = 5000, extra_config: str = "") -> subprocess.Popen:
        """kube-scheduler (built from the same release) with its client limits raised;
        `extra_config`: more top-level fields of its KubeSchedulerConfiguration (YAML)."""
        cfg = workdir / "kube-scheduler.yaml"
        cfg.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
# the defaults (50 qps, burst 100) would make the client, not the scheduler, the limit
clientConnection: {{kubeconfig: "{self.kubeconfig}", qps: {qps}, burst: {qps}}}
leaderElection: {{leaderElect: false}}
""" + extra_config)
        log = (workdir / "kube-scheduler.log").open("wb")
        return subprocess.Popen([str(self.bin / "kube-scheduler"), "--config", str(cfg), "--secure-port", "0",
                                 *self.gates], stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


if __name__ == "__main__":  # `python -m benchmarks.kube_cluster`: a cluster to poke at by hand
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        c = KubeCluster(Path(tmp), kube_bin_dir()).start()
        print(f"export KUBECONFIG={c.kubeconfig}  (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            c.stop()
