"""The kube:// store's own reading of kubeconfigs and its HTTP (common/store/kube_http.py):
the settings client-go would take from a kubeconfig, the ones it leaves to the kubernetes
client, errors naming the field, and requests to the session's real API server."""
from __future__ import annotations

import base64
import socket
import subprocess
import sys
import threading
import time
from http.client import HTTPException
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import yaml

from common.store import kube_http
from common.store.kube_store import KubeStore


def kubeconfig(path: Path, cluster: dict, user: dict, namespace: str | None = None) -> Path:
    context = {"cluster": "c", "user": "u", **({"namespace": namespace} if namespace else {})}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": context}]}))
    return path


def client_cert(d: Path) -> tuple[bytes, bytes]:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k.pem", "-out",
                    "c.pem", "-days", "1", "-subj", "/CN=shardsched-client"], cwd=d, check=True, capture_output=True)
    return (d / "c.pem").read_bytes(), (d / "k.pem").read_bytes()


def test_a_token_file_relative_to_the_kubeconfig_is_read_and_sent(tmp_path, kube_cluster):
    (tmp_path / "token").write_text(kube_cluster.token + "\n")
    ca = base64.b64encode((kube_cluster.dir / "ca.crt").read_bytes()).decode()
    path = kubeconfig(tmp_path / "config", {"server": kube_cluster.server, "certificate-authority-data": ca},
                      {"tokenFile": "token"}, namespace="elsewhere")
    ep = kube_http.endpoint(str(path))
    assert ep.authorization() == f"Bearer {kube_cluster.token}"
    store = KubeStore(str(path))
    try:
        assert store.lease_namespace == "elsewhere"
        store.list("Node")  # authenticated and trusted: the CA came inline
    finally:
        store.close()


def test_a_client_certificate_inline_or_by_path_is_loaded(tmp_path):
    cert, key = client_cert(tmp_path)
    inline = kubeconfig(tmp_path / "inline", {"server": "https://127.0.0.1:1"},
                        {"client-certificate-data": base64.b64encode(cert).decode(),
                         "client-key-data": base64.b64encode(key).decode()})
    by_path = kubeconfig(tmp_path / "by-path", {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True},
                         {"client-certificate": "c.pem", "client-key": "k.pem"})
    for path in (inline, by_path):
        ep = kube_http.endpoint(str(path))
        assert ep.ssl_context is not None and ep.authorization() is None


def test_what_the_kubeconfig_lacks_is_named(tmp_path):
    path = kubeconfig(tmp_path / "config", {"certificate-authority": "ca.crt"}, {"token": "t"})
    with pytest.raises(kube_http.KubeconfigError, match=r"clusters\[c\]\.cluster\.server is not set"):
        kube_http.endpoint(str(path))
    path = kubeconfig(tmp_path / "config", {"server": "https://127.0.0.1:1"}, {"client-certificate": "missing.pem"})
    with pytest.raises(kube_http.KubeconfigError, match=r"users\[u\]\.user\.client-certificate"):
        kube_http.endpoint(str(path))


def test_an_exec_plugin_is_left_to_the_kubernetes_client(tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text('print(\'{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
                      '"status": {"token": "from-exec"}}\')\n')
    path = kubeconfig(tmp_path / "config", {"server": "http://127.0.0.1:1"},
                      {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                                "args": [str(plugin)], "interactiveMode": "Never"}})
    assert kube_http.endpoint(str(path)).authorization() == "Bearer from-exec"


def test_the_store_never_imports_the_kubernetes_client(kube_cluster):
    """Start-up cost: a process on a plain kubeconfig pays no import of the client."""
    code = (f"import sys; from common.store import open_store; s = open_store('kube://{kube_cluster.kubeconfig}'); "
            "s.list('Node'); s.close(); print('kubernetes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "False"


def test_the_store_lists_and_watches_without_importing_urllib3(kube_cluster):
    """Seen failing before (the watches read through urllib3, which cost every process
    12-24 ms of CPU at start): a list, then a watch that shows a node created after it,
    and neither urllib3 nor the kubernetes client was imported."""
    code = (f"import sys; from common.store import open_store; s = open_store('kube://{kube_cluster.kubeconfig}'); "
            "_, rv = s.list('Node'); "
            "s.create({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'watched-by-http-client'}}); "
            "events = s.poll(rv, timeout=60, kinds=('Node',)); "
            "print([e.obj['metadata']['name'] for e in events if e.type == 'ADDED']); "
            "s.delete('Node', 'watched-by-http-client'); s.close(); "
            "print(sorted(m for m in ('urllib3', 'kubernetes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.split("\n")[:2] == ["['watched-by-http-client']", "[]"]


# --- requests answered at once: keep-alive connections of their own pool ---------------------

class _Server:
    """A local HTTP/1.1 server that counts connections and requests; `close_after` makes it
    close each connection after answering without saying so (as a server dropping an idle
    keep-alive connection), `status` is what it answers, `delay_s` how long it waits first."""

    def __init__(self, status: int = 201, close_after: bool = False, delay_s: float = 0.0, chunked: bool = False):
        server = self
        self.connections, self.requests = 0, []
        self.connection_of: dict[str, int] = {}  # path -> the number of the connection it came on

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                server.connections += 1
                self.number = server.connections

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                server.requests.append((self.path, body))
                server.connection_of[self.path] = self.number
                if delay_s:
                    time.sleep(delay_s)
                code = 409 if "refuse" in self.path else status
                answer = b'{"kind":"Status","code":%d}' % code
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                if chunked:  # in two chunks, each flushed on its own
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for part in (answer[:7], answer[7:]):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.flush()
                        time.sleep(0.05)
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                self.close_connection = close_after

            def do_GET(self):  # a watch: two events in chunks, then nothing until the client goes
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for line in (b'{"type":"ADDED","n":1}\n', b'{"type":"ADDED","n":2}\n'):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.rfile.read(1)  # until the client closes its end
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None  # a client that gave up: no traceback
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = kube_http.Endpoint(server=f"http://127.0.0.1:{self.httpd.server_address[1]}")

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(request):
    s = _Server(**getattr(request, "param", {}))
    yield s
    s.close()


def test_requests_share_one_kept_alive_connection(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4)
    try:
        for i in range(5):
            assert http.call("POST", f"/api/v1/namespaces/a/pods/p{i}/binding", body={"i": i}) == \
                {"kind": "Status", "code": 201}
    finally:
        http.close()
    assert [path for path, _ in server.requests] == [f"/api/v1/namespaces/a/pods/p{i}/binding" for i in range(5)]
    assert server.connections == 1


@pytest.mark.parametrize("server", [{"chunked": True}], indirect=True)
def test_a_writes_answer_in_chunks_arriving_apart_is_read_whole_and_the_connection_kept(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4)
    try:
        for i in range(2):
            assert http.call("POST", f"/p{i}", body={"i": i}) == {"kind": "Status", "code": 201}
    finally:
        http.close()
    assert server.connections == 1


@pytest.mark.parametrize("server", [{"close_after": True}], indirect=True)
def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_once(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4)
    try:
        for i in range(3):
            http.call("POST", f"/p{i}", body={"i": i})
    finally:
        http.close()
    assert [path for path, _ in server.requests] == ["/p0", "/p1", "/p2"]
    assert server.connections == 3


@pytest.mark.parametrize("server", [{"status": 409}], indirect=True)
def test_a_refusal_is_an_http_error_with_the_servers_answer(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4)
    try:
        with pytest.raises(kube_http.HttpError) as e:
            http.call("POST", "/p", body={})
    finally:
        http.close()
    assert e.value.status == 409 and e.value.body == b'{"kind":"Status","code":409}'


@pytest.mark.parametrize("server", [{"delay_s": 5.0}], indirect=True)
def test_an_answer_that_does_not_come_in_time_is_store_unavailable(server):
    http = kube_http.KubeHttp(server.endpoint, 0.3, 4)
    try:
        with pytest.raises(kube_http.StoreUnavailable, match=r"cannot reach the API server at http://127\.0\.0\.1"):
            http.call("POST", "/p", body={})
    finally:
        http.close()


@pytest.mark.parametrize("answer", [b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                                    b"HTTP/1.1 201 Created\r\nContent-Length: many\r\n\r\n{}"])
def test_a_write_answered_with_what_is_not_http_is_store_unavailable_naming_it(answer):
    """A write to something that is not an API server (another service on its port), or an
    answer whose length cannot be read: StoreUnavailable saying what came, at once, and
    the connection not kept."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        conn, _ = listener.accept()
        accepted.append(conn)
        conn.recv(65536)
        conn.sendall(answer)
    threading.Thread(target=serve, daemon=True).start()
    http = kube_http.KubeHttp(kube_http.Endpoint(server=f"http://127.0.0.1:{listener.getsockname()[1]}"), 30.0, 4)
    try:
        with pytest.raises(kube_http.StoreUnavailable, match="SSH-2.0|many"):
            http.call("POST", "/p", body={})
        assert http.requests._kept() is None
    finally:
        http.close()
        listener.close()
        for conn in accepted:
            conn.close()


def test_a_streamed_answer_is_read_as_it_comes_and_ended_from_another_thread(server):
    """A watch's answer (chunked, never finished by the server) is read chunk by chunk as it
    arrives, and `shutdown` from another thread ends the reading thread's wait."""
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4, bounded=False)
    resp = http.open("GET", "/api/v1/pods", query=[("watch", "true")], timeout=(30.0, 300.0), stream=True)
    lines, two = [], threading.Event()

    def read():
        pending = b""
        try:
            for chunk in resp.stream(1 << 16):
                pending += chunk
                *done, pending = pending.split(b"\n")
                lines.extend(done)
                if len(lines) == 2:
                    two.set()
        except (OSError, HTTPException):
            pass  # the shutdown: the answer cut short (the watch resumes or stops on any error)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert two.wait(30), lines
        resp.shutdown()
        reader.join(30)
        assert not reader.is_alive()
    finally:
        resp.release_conn()
        http.close()
    assert lines == [b'{"type":"ADDED","n":1}', b'{"type":"ADDED","n":2}']


def raw_server(answer: bytes, then_wait: bool = True):
    """A server that answers one request with `answer` in one write (head and body as one
    segment), then keeps the connection open and silent until the client goes."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(answer)
            if then_wait:
                conn.recv(1)
    threading.Thread(target=serve, daemon=True).start()
    return listener, kube_http.Endpoint(server=f"http://127.0.0.1:{listener.getsockname()[1]}")


def read_lines(resp, into: list) -> BaseException | None:
    """What a watch does with the stream: whole lines kept; the error that ended it."""
    pending = b""
    try:
        for chunk in resp.stream(1 << 16):
            pending += chunk
            *done, pending = pending.split(b"\n")
            into.extend(done)
    except (OSError, HTTPException) as e:
        return e
    return None


def read_until_it_ends(resp, lines: list) -> BaseException | None:
    """read_lines in a thread of its own, which must end within two minutes (a read that
    never times out fails the test instead of hanging it); the connection closed after."""
    outcome: list = []
    reader = threading.Thread(target=lambda: outcome.append(read_lines(resp, lines)), daemon=True)
    try:
        reader.start()
        reader.join(120)
        assert not reader.is_alive(), "the read never timed out"
    finally:
        resp.release_conn()
    return outcome[0]


def test_events_that_came_with_the_answers_head_are_read_before_the_socket():
    """The API server may write the head and the first events in one segment: http.client
    reads them with the head, and the stream hands them over before reading the socket."""
    events = b'{"type":"ADDED","n":1}\n{"type":"ADDED","n":2}\n'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    listener, endpoint = raw_server(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(events), events))
    http = kube_http.KubeHttp(endpoint, 30.0, 4)
    lines: list = []
    try:
        resp = http.open("GET", "/api/v1/pods", query=[("watch", "true")], timeout=(30.0, 300.0), stream=True)
        assert read_lines(resp, lines) is None  # ended by the last chunk, not by the socket
        resp.release_conn()
    finally:
        http.close()
        listener.close()
    assert lines == [b'{"type":"ADDED","n":1}', b'{"type":"ADDED","n":2}']


def test_a_watch_whose_server_falls_silent_ends_after_its_read_timeout(server):
    """The stream's socket blocks in the kernel with SO_RCVTIMEO instead of a poll before
    each read: a server that stops writing (frozen, not closed) still ends the read after
    the read timeout, with the events before it delivered."""
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4, bounded=False)
    resp = http.open("GET", "/api/v1/pods", query=[("watch", "true")], timeout=(30.0, 0.5), stream=True)
    lines: list = []
    try:
        outcome = read_until_it_ends(resp, lines)
    finally:
        http.close()
    assert lines == [b'{"type":"ADDED","n":1}', b'{"type":"ADDED","n":2}']
    assert isinstance(outcome, OSError), outcome


def test_a_watch_on_the_real_api_server_falls_silent_and_its_tls_read_times_out(kube_cluster):
    """The same over TLS, on the session's API server: a watch of a namespace where nothing
    happens, with a 1 s read timeout, ends with an error (ssl's, from the kernel's timeout)."""
    store = KubeStore(str(kube_cluster.kubeconfig))
    http = store._watch_http
    resp = http.open("GET", "/api/v1/namespaces/quiet-nothing-here/pods",
                     query=[("watch", "true"), ("resourceVersion", "0"), ("timeoutSeconds", "600")],
                     timeout=(30.0, 1.0), stream=True)
    try:
        outcome = read_until_it_ends(resp, [])
    finally:
        store.close()
    assert isinstance(outcome, OSError), outcome


@pytest.mark.parametrize("pending, body, done, left", [
    (b"5\r\nhello\r\n", b"hello", False, b""),
    (b"5\r\nhello\r\n3\r\nabc\r\n", b"helloabc", False, b""),
    (b"5\r\nhel", b"", False, b"5\r\nhel"),                      # a chunk not yet whole waits
    (b"5\r\nhello\r", b"", False, b"5\r\nhello\r"),              # so does one without its CRLF
    (b"5\r\nhello\r\n1", b"hello", False, b"1"),                  # a size line not yet whole
    (b"5;name=x\r\nhello\r\n", b"hello", False, b""),             # a chunk extension is ignored
    (b"A\r\n0123456789\r\n0\r\n\r\n", b"0123456789", True, b"\r\n"),  # the last chunk ends it
])
def test_chunks_are_taken_apart_only_once_whole(pending, body, done, left):
    buf = bytearray(pending)
    assert kube_http.dechunk(buf) == (body, done)
    assert bytes(buf) == left


def test_a_chunk_size_that_is_not_hexadecimal_is_an_error():
    with pytest.raises(ValueError):
        kube_http.dechunk(bytearray(b"zz\r\nhello\r\n"))


# --- many requests at once, driven by the calling thread (common/store/kube_mux.py) ----------

def posts(*chains: list[str]) -> list[list[tuple]]:
    return [[("POST", path, {"p": path}, "application/json") for path in chain] for chain in chains]


def test_many_requests_are_answered_each_in_its_place_a_chain_in_order_on_one_connection(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 3)
    chains = [[f"/c{c}/r{r}" for r in range(3)] for c in range(5)] + [["/c5/refuse"]]
    try:
        answers = http.request_many(posts(*chains))
        assert http.request_many(posts(["/later"])) == [[(201, b'{"kind":"Status","code":201}')]]
    finally:
        http.close()
    assert answers == [[(201, b'{"kind":"Status","code":201}')] * 3] * 5 + [[(409, b'{"kind":"Status","code":409}')]]
    sent = [path for path, _ in server.requests]
    for chain in chains:  # a chain's requests one after another, on the same connection
        assert [p for p in sent if p in chain] == chain
        assert len({server.connection_of[p] for p in chain}) == 1
    assert sorted(sent) == sorted(p for chain in chains for p in chain) + ["/later"]
    assert server.connections == 3  # the pool's bound, kept alive for the next call
    assert server.connection_of["/later"] <= 3
    assert orjson.loads(server.requests[0][1]) == {"p": server.requests[0][0]}


def test_many_requests_use_no_more_connections_than_their_width(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 8)
    try:
        answers = http.request_many(posts(*[[f"/c{c}"] for c in range(6)]), width=2)
    finally:
        http.close()
    assert len(answers) == 6 and all(a == [(201, b'{"kind":"Status","code":201}')] for a in answers)
    assert server.connections == 2


def test_many_requests_are_paced_one_by_one_when_the_client_has_a_qps_limit(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 4)
    paced = []
    try:
        http.request_many(posts(["/a0", "/a1"], ["/b0"]), pace=lambda: paced.append(len(server.requests)))
    finally:
        http.close()
    assert len(paced) == 3 and paced[0] == 0  # before each request is written


@pytest.mark.parametrize("server", [{"close_after": True}], indirect=True)
def test_a_connection_the_server_ends_after_an_answer_is_replaced_and_nothing_sent_twice(server):
    http = kube_http.KubeHttp(server.endpoint, 30.0, 2)
    try:
        http.call("POST", "/first", body={})  # leaves a connection the server has closed
        answers = http.request_many(posts(["/a0", "/a1"], ["/b0"], ["/c0", "/c1", "/c2"]))
    finally:
        http.close()
    assert all(a == (201, b'{"kind":"Status","code":201}') for chain in answers for a in chain)
    assert sorted(path for path, _ in server.requests) == ["/a0", "/a1", "/b0", "/c0", "/c1", "/c2", "/first"]


@pytest.mark.parametrize("server", [{"delay_s": 5.0}], indirect=True)
def test_requests_not_answered_in_time_are_store_unavailable_and_their_chains_stop(server):
    http = kube_http.KubeHttp(server.endpoint, 0.3, 4)
    try:
        answers = http.request_many(posts(["/a0", "/a1"], ["/b0"]))
    finally:
        http.close()
    assert [len(chain) for chain in answers] == [2, 1]
    for a in (a for chain in answers for a in chain):
        assert isinstance(a, kube_http.StoreUnavailable) and "cannot reach the API server at http://127.0.0.1" in str(a)
    assert sorted(path for path, _ in server.requests) == ["/a0", "/b0"]  # /a1 never sent


def test_requests_to_a_server_that_is_gone_are_each_store_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    http = kube_http.KubeHttp(kube_http.Endpoint(server=f"http://127.0.0.1:{port}"), 5.0, 4)
    try:
        answers = http.request_many(posts(["/a0", "/a1"], ["/b0"], ["/c0"]))
    finally:
        http.close()
    assert [len(chain) for chain in answers] == [2, 1, 1]
    assert all(isinstance(a, kube_http.StoreUnavailable) and "Connection refused" in str(a)
               for chain in answers for a in chain)
