"""The kube:// store's HTTP: http.client straight to the API server, bodies encoded and
decoded with orjson; the requests that are answered at once (bindings, Events, status
patches, lists) on connections kept alive in a bounded pool (`_Requests`), each watch on a
connection of its own (`_Stream`). urllib3 only behind a kubeconfig's proxy-url (imported
then, not before: it cost every process 12-24 ms of CPU at start, four processes on two
cores, for the watches alone).

Why not the `kubernetes` client: importing it costs 0.4-1 s of CPU in every process (its
hundreds of generated model modules load with the package), which four processes starting
at once on two cores pay before their first list; and each of its calls serialises the body
through its generic sanitiser and builds its own response wrapper. Here a request is one
`urlopen` on a keep-alive connection of a bounded pool, and the answer is the raw bytes.

Where the connection settings come from, as client-go reads them: inside a cluster (no
kubeconfig given and KUBERNETES_SERVICE_HOST set) the ServiceAccount's token (re-read every
minute: bound tokens rotate) and CA; else one kubeconfig file (the given path, the single file
$KUBECONFIG names, or ~/.kube/config): the current context's server, certificate authority,
client certificate and key, token or tokenFile, insecure-skip-tls-verify, tls-server-name and
proxy-url, each as a path or inline data. What a kubeconfig can say beyond that (exec plugins,
auth providers, user names and passwords, several files merged) is left to the `kubernetes`
client's loader, whose settings are then used the same way (`_from_client`).
"""
from __future__ import annotations

import base64
import http.client
import os
import queue
import select
import socket
import ssl
import struct
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode, urlsplit

import orjson

from ..errors import StoreUnavailable
from . import kube_mux

IN_CLUSTER = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: how long a token read from a file is used before it is read again (client-go: 1 minute)
TOKEN_REREAD_S = 60.0
#: user fields this module reads itself; any other makes the kubernetes client load the file
_OWN_USER_FIELDS = {"token", "tokenFile", "client-certificate", "client-certificate-data",
                    "client-key", "client-key-data"}


class KubeconfigError(Exception):
    """A kubeconfig that names no usable server or credentials (the message says which field)."""


@dataclass
class Endpoint:
    """Where the API server is and how to prove who we are."""

    server: str
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None
    proxy: str | None = None
    namespace: str | None = None
    #: the Authorization header's value now (None: none), e.g. "Bearer abc"
    authorization: Callable[[], str | None] = field(default=lambda: None)


class _TokenFile:
    """A bearer token kept in a file, re-read every TOKEN_REREAD_S (a projected ServiceAccount
    token is replaced before it expires)."""

    def __init__(self, path: str):
        self.path, self._token, self._read_at = path, "", -TOKEN_REREAD_S
        self._lock = threading.Lock()

    def __call__(self) -> str:
        now = time.monotonic()
        if now - self._read_at >= TOKEN_REREAD_S:
            with self._lock:
                self._token = Path(self.path).read_text().strip()
                self._read_at = now
        return f"Bearer {self._token}"


def _tls(ca_file: str | None, ca_data: bytes | None, cert: bytes | None, key: bytes | None,
         insecure: bool) -> ssl.SSLContext:
    """A client TLS context: the CA to trust (only it, as client-go; the system's when none is
    given: loading those costs ~90 ms, so not when unused), a client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # hostname checked, certificate required
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca_file or ca_data:
        ctx.load_verify_locations(cafile=ca_file, cadata=ca_data.decode() if ca_data else None)
    else:
        ctx.load_default_certs()
    if cert is not None:
        # load_cert_chain reads files only: the PEM goes through a private temporary file,
        # removed as soon as it is loaded
        with tempfile.TemporaryDirectory(prefix="shardsched-tls-") as d:
            cert_path, key_path = Path(d, "cert.pem"), Path(d, "key.pem")
            cert_path.write_bytes(cert)
            key_path.write_bytes(key or b"")
            os.chmod(key_path, 0o600)
            ctx.load_cert_chain(str(cert_path), str(key_path) if key else None)
    return ctx


def in_cluster() -> Endpoint:
    """The ServiceAccount's view of the cluster it runs in."""
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    host = f"[{host}]" if ":" in host else host
    try:
        namespace = (IN_CLUSTER / "namespace").read_text().strip()
    except OSError:
        namespace = None
    token = _TokenFile(str(IN_CLUSTER / "token"))
    try:
        token()
        ctx = _tls(str(IN_CLUSTER / "ca.crt"), None, None, None, False)
    except OSError as e:
        raise KubeconfigError(f"in-cluster configuration: {e}") from None
    return Endpoint(f"https://{host}:{port}", ctx, namespace=namespace, authorization=token)


def _inline_or_file(section: dict, name: str, base: Path, where: str) -> tuple[str | None, bytes | None]:
    """A kubeconfig's `name` (a path, relative to the file) or `name-data` (base64): (path, data)."""
    data = section.get(f"{name}-data")
    if data:
        try:
            return None, base64.b64decode(data)
        except ValueError as e:
            raise KubeconfigError(f"{where}.{name}-data: not base64 ({e})") from None
    path = section.get(name)
    if not path:
        return None, None
    return str(base / Path(os.path.expanduser(path))), None


def _read(path: str | None, data: bytes | None, where: str) -> bytes | None:
    if data is not None or path is None:
        return data
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise KubeconfigError(f"{where}: {e}") from None


def from_kubeconfig(path: str | None) -> Endpoint:
    """The current context of one kubeconfig file (see the module doc for what is read here
    and what is left to the kubernetes client)."""
    import yaml

    if path is None:
        env = os.environ.get("KUBECONFIG", "")
        if os.pathsep in env.strip(os.pathsep):  # several files to merge: the client's job
            return _from_client(None)
        path = env.strip(os.pathsep) or os.path.expanduser("~/.kube/config")
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise KubeconfigError(str(e)) from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path}: not a kubeconfig (a mapping)")

    def named(section: str, name: str | None) -> dict:
        for entry in doc.get(section) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry.get(section[:-1]) or {}
        raise KubeconfigError(f"{path}: {section} has no entry named {name!r}")

    current = doc.get("current-context")
    if not current:
        raise KubeconfigError(f"{path}: current-context is not set")
    context = named("contexts", current)
    user = named("users", context.get("user")) if context.get("user") else {}
    if set(user) - _OWN_USER_FIELDS:
        return _from_client(path)
    cluster = named("clusters", context.get("cluster"))
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"{path}: clusters[{context.get('cluster')}].cluster.server is not set")
    base = Path(path).resolve().parent
    where = f"{path}: clusters[{context.get('cluster')}].cluster"
    ctx = None
    if server.startswith("https://"):
        ca_file, ca_data = _inline_or_file(cluster, "certificate-authority", base, where)
        uwhere = f"{path}: users[{context.get('user')}].user"
        cert = _read(*_inline_or_file(user, "client-certificate", base, uwhere), f"{uwhere}.client-certificate")
        key = _read(*_inline_or_file(user, "client-key", base, uwhere), f"{uwhere}.client-key")
        try:
            ctx = _tls(ca_file, ca_data, cert, key, bool(cluster.get("insecure-skip-tls-verify")))
        except (OSError, ssl.SSLError) as e:
            raise KubeconfigError(f"{where}: {e}") from None
    if user.get("token"):
        header = f"Bearer {user['token']}"
        authorization = lambda: header  # noqa: E731
    elif user.get("tokenFile"):
        authorization = _TokenFile(str(base / os.path.expanduser(user["tokenFile"])))
    else:
        authorization = lambda: None  # noqa: E731
    return Endpoint(server, ctx, cluster.get("tls-server-name"), cluster.get("proxy-url"),
                    context.get("namespace"), authorization)


def _from_client(path: str | None) -> Endpoint:
    """What the kubernetes client's loader makes of a kubeconfig this module does not read
    itself (exec plugins, auth providers, merged files); its token hook refreshes as before."""
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        config.load_kube_config(config_file=path, client_configuration=cfg)
        _, active = config.list_kube_config_contexts(config_file=path)
    except Exception as e:
        raise KubeconfigError(str(e)) from None
    ctx = None
    if cfg.host.startswith("https://"):
        def pem(p):
            return Path(p).read_bytes() if p else None
        ctx = _tls(cfg.ssl_ca_cert, None, pem(cfg.cert_file), pem(cfg.key_file), not cfg.verify_ssl)

    def authorization():
        return cfg.get_api_key_with_prefix("BearerToken", alias="authorization") or (
            cfg.get_basic_auth_token() if cfg.username else None)
    return Endpoint(cfg.host, ctx, cfg.tls_server_name, cfg.proxy, (active.get("context") or {}).get("namespace"),
                    authorization)


def endpoint(kubeconfig: str | None) -> Endpoint:
    """In-cluster settings when no kubeconfig is given inside a pod, else the kubeconfig's."""
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    return from_kubeconfig(kubeconfig)


class HttpError(Exception):
    """A non-2xx answer: its status and body (a Status object, usually)."""

    def __init__(self, status: int, body: bytes):
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}")


class _Https(http.client.HTTPSConnection):
    """An HTTPS connection whose certificate is checked against `server_hostname` (a
    kubeconfig's tls-server-name) rather than the host it connects to."""

    def __init__(self, host: str, port: int | None, timeout: float, context: ssl.SSLContext,
                 server_hostname: str | None):
        super().__init__(host, port, timeout=timeout, context=context)
        self._sni = server_hostname or host

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._sni)


#: what a kept-alive connection the server has closed meanwhile fails with, before any answer
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
          http.client.CannotSendRequest, http.client.BadStatusLine)


class _Requests:
    """Requests answered at once, each on a keep-alive http.client connection of a bounded
    pool: `size` connections at most, a caller beyond that waits for one to be freed.

    Why not urllib3's pool here: a binding through its `urlopen` cost the calling thread
    about twice the CPU of the same request through http.client (its retry, timeout and
    header objects, its response wrapper), and a binder sends one or two such requests per
    pod (the binding, the Scheduled Event). An idle connection the server has closed (it is
    readable: its end of file, or TLS's close_notify) is replaced before it is used, as urllib3
    does; one the server closed in the instant between that look and the request fails before
    any answer, and the request is sent once more on a new connection. Every other failure is
    the caller's."""

    def __init__(self, ep: Endpoint, size: int):
        parts = urlsplit(ep.server)
        self.host, self.port = parts.hostname or "", parts.port
        self.tls = parts.scheme == "https"
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        self.host_header = host if self.port in (None, default) else f"{host}:{self.port}"
        self.endpoint = ep
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.tls:
            conn = _Https(self.host, self.port, timeout, self.endpoint.ssl_context, self.endpoint.server_hostname)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _kept(self) -> http.client.HTTPConnection | None:
        """A kept-alive connection of the pool the server has not closed, None when there is
        none (one it closed while idle is closed here)."""
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return None
            if not _readable(conn.sock):
                return conn
            conn.close()  # dropped while idle

    def send(self, method: str, url: str, data: bytes | None, headers: dict, timeout) -> tuple[int, bytes]:
        """(status, body) of one request; `timeout` in seconds, or (connect, read). A write
        (every method but GET) is written and its answer read by kube_mux.run_one, a plain
        header scan: in a stream pods are bound one at a time, and a binding cost the caller
        262 µs of CPU so against 429 through http.client (`python -m benchmarks.kube_binds
        --batch 1`). A GET, whose answer may be a list of many megabytes, is read by
        http.client."""
        connect_s, read_s = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        self._slots.acquire()
        try:
            if method != "GET":
                return kube_mux.run_one(self._wire(method, url, data, headers),
                                        lambda fresh: self._take(fresh, connect_s), self._give_back, read_s)
            conn = self._kept()
            reused = conn is not None
            for attempt in range(2):
                if conn is None:
                    conn = self._connect(connect_s)
                try:
                    conn.sock.settimeout(read_s)
                    conn.request(method, url, body=data, headers=headers)
                    resp = conn.getresponse()
                    body = resp.read()
                except _STALE:
                    conn.close()
                    conn = None
                    if reused and attempt == 0:
                        reused = False
                        continue
                    raise
                except BaseException:
                    conn.close()
                    raise
                self._give_back(conn, not resp.will_close)
                return resp.status, body
            raise AssertionError("unreachable")
        finally:
            self._slots.release()

    def _take(self, fresh: bool, connect_s: float) -> tuple[http.client.HTTPConnection, bool]:
        """(a connection, whether it was kept alive): a kept-alive one unless `fresh`."""
        conn = None if fresh else self._kept()
        return (conn, True) if conn is not None else (self._connect(connect_s), False)

    def _give_back(self, conn: http.client.HTTPConnection, reusable: bool) -> None:
        """Kept for the next request, or (not reusable, or the pool closed) closed."""
        if reusable and not self._closed:
            self._idle.put(conn)
        else:
            conn.close()

    def send_chains(self, chains: list[list[tuple[str, str, bytes | None, dict]]], timeout,
                    pace=None, width: int | None = None) -> list[list]:
        """Each request's (status, body) or the exception it failed with, in `chains`' shape:
        the requests of a chain one after another, the chains side by side on as many of the
        pool's connections as it can spare, `width` at most (at least one: a caller waits for
        it as `send` does), all driven by the calling thread (common.store.kube_mux)."""
        connect_s, read_s = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        wire = [[self._wire(*request) for request in chain] for chain in chains]
        self._slots.acquire()
        slots, most = 1, min(len(chains), width or len(chains))
        while slots < most and self._slots.acquire(blocking=False):
            slots += 1

        try:
            return kube_mux.run_chains(wire, lambda fresh: self._take(fresh, connect_s), self._give_back,
                                       slots, read_s, pace)
        finally:
            for _ in range(slots):
                self._slots.release()

    def _wire(self, method: str, url: str, data: bytes | None, headers: dict) -> bytes:
        """One request's bytes, as http.client would write them."""
        head = [f"{method} {url} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if data is not None:
            head.append(f"Content-Length: {len(data)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (data or b"")

    def open_stream(self, method: str, url: str, data: bytes | None, headers: dict,
                    timeout) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        """(response, its connection) of one request whose answer is read as it comes (a
        watch), on a new connection of its own, outside the pool's bound: a watch holds its
        connection for minutes, and one being replaced must never wait for another."""
        connect_s, read_s = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        conn = self._connect(connect_s)
        try:
            conn.sock.settimeout(read_s)
            conn.request(method, url, body=data, headers=headers)
            return conn.getresponse(), conn
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def _readable(sock: socket.socket) -> bool:
    """Whether `sock` has something to read now (an idle connection: its end of file, or
    TLS's close_notify)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _Stream:
    """A watch's answer, read as it comes on its own connection (the interface the watch
    reads, urllib3's response's, which serves it behind a proxy).

    A chunked answer (every watch's) is read straight from the socket and its chunks taken
    apart here, not through http.client's reader: that reader goes through three or four
    Python calls and a readline per chunk, and a socket with a timeout polls before each
    read. A watch's chunk is one event, and a process reads every pod's three or four
    events, each in the time other threads would use the GIL: the socket is made blocking,
    its read timeout the kernel's (SO_RCVTIMEO; a read that times out raises, as before), and
    one read takes all that the TLS record or the socket holds. `direct=False` reads through
    http.client (the baseline of benchmarks/follow_hint.py, which prints both)."""

    def __init__(self, resp: http.client.HTTPResponse, conn: http.client.HTTPConnection,
                 read_s: float | None = None, direct: bool = True):
        self._resp, self._conn = resp, conn
        self._read_s, self._direct = read_s, direct

    def stream(self, amount: int):
        """The answer's bytes as they arrive, at most `amount` at a time (chunked transfer
        decoded), until the server ends it."""
        if not (self._resp.chunked and self._direct):
            yield from self._whole(amount)
            return
        sock = self._conn.sock
        pending = bytearray(self._buffered())  # what http.client read past the head
        if self._read_s is not None:
            _block_with_read_timeout(sock, self._read_s)
        buf = bytearray(max(amount, 1 << 14))
        view = memoryview(buf)
        while True:
            body, done = dechunk(pending)
            if body:
                yield body
            if done:
                return
            n = sock.recv_into(buf)
            if not n:
                raise http.client.IncompleteRead(bytes(pending))
            pending += view[:n]

    def _whole(self, amount: int):
        while True:
            chunk = self._resp.read1(amount)
            if not chunk:
                return
            yield chunk

    def _buffered(self) -> bytes:
        """The bytes of the body http.client's reader holds already (read with the head);
        waits for the first ones if it holds none (a watch's body comes anyway)."""
        fp = self._resp.fp
        held = fp.peek(1)  # all it holds, or one read of the socket when it holds nothing
        return fp.read(len(held))

    def shutdown(self) -> None:
        """Unblocks a thread reading `stream` at once (from another thread)."""
        sock = self._conn.sock
        if sock is not None:
            sock.shutdown(socket.SHUT_RD)

    def release_conn(self) -> None:
        """The connection closed (a watch's is never reused)."""
        self._conn.close()


def _block_with_read_timeout(sock: socket.socket, seconds: float) -> None:
    """`sock` blocking, a read waiting at most `seconds` (then raising: OSError, or
    ssl.SSLWantReadError over TLS) by the kernel's SO_RCVTIMEO rather than a poll before
    each read; left as it is (a poll per read) where the option cannot be set."""
    whole = int(seconds)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                        struct.pack("ll", whole, int((seconds - whole) * 1e6)))
    except (OSError, struct.error):
        return
    sock.settimeout(None)


def dechunk(pending: bytearray) -> tuple[bytes, bool]:
    """(the payload of the complete chunks at the start of `pending`, which are cut from it;
    whether the last chunk, of size 0, was among them). A chunk not yet whole stays in
    `pending`; a size line that is not hexadecimal raises ValueError."""
    parts, at, size = [], 0, -1
    while True:
        eol = pending.find(b"\r\n", at)
        if eol < 0:
            break
        size = int(pending[at:eol].split(b";", 1)[0], 16)
        if size == 0:
            at = eol + 2
            break
        end = eol + 2 + size
        if end + 2 > len(pending):
            break
        parts.append(pending[eol + 2:end])
        at = end + 2
    if at:
        del pending[:at]
    return b"".join(parts), size == 0


class KubeHttp:
    """Requests to one API server over one pool of keep-alive connections.

    `connections`: how many the pool keeps open; with `bounded`, a caller beyond that waits
    for one to be free rather than opening more (`_Requests`), else one more is opened for
    the while. A streamed answer (`open(stream=True)`: a watch) has a connection of its own.
    Behind a kubeconfig's proxy-url everything goes through urllib3's ProxyManager."""

    def __init__(self, ep: Endpoint, timeout: float, connections: int, bounded: bool = True,
                 direct_streams: bool = True):
        self.endpoint, self.timeout = ep, timeout
        self.direct_streams = direct_streams
        parts = urlsplit(ep.server)
        self.prefix = parts.path.rstrip("/")
        self._manager = self.pool = None
        if ep.proxy:
            import urllib3  # only here: every other endpoint is served by http.client

            kw = {"maxsize": connections, "block": bounded, "retries": urllib3.Retry(3, redirect=0)}
            if parts.scheme == "https":
                kw["ssl_context"] = ep.ssl_context
                if ep.server_hostname:
                    kw["server_hostname"] = ep.server_hostname
            self._manager = urllib3.ProxyManager(ep.proxy, **kw)
            self.pool = self._manager.connection_from_url(f"{parts.scheme}://{parts.netloc}")
        self.requests = _Requests(ep, connections) if not ep.proxy else None

    def _headers(self, content_type: str | None) -> dict:
        h = {"Accept": "application/json", "User-Agent": "shardsched"}
        if content_type:
            h["Content-Type"] = content_type
        auth = self.endpoint.authorization()
        if auth:
            h["Authorization"] = auth
        return h

    def open(self, method: str, path: str, body=None, query: list | None = None,
             content_type: str = "application/json", timeout=None, stream: bool = False):
        """Send one request; its response, read as it comes: a `_Stream` (a watch; requests
        answered at once go through `request`), or behind a proxy urllib3's response (read
        whole, its `data`, unless `stream`). A non-2xx answer raises HttpError, a transport
        failure StoreUnavailable."""
        url = self.prefix + path + ("?" + urlencode(query) if query else "")
        data = orjson.dumps(body) if body is not None else None
        t = timeout if timeout is not None else self.timeout
        headers = self._headers(content_type if data else None)
        if self.pool is None:
            try:
                resp, conn = self.requests.open_stream(method, url, data, headers, t)
                if not 200 <= resp.status < 300:
                    try:
                        answer = resp.read()
                    finally:
                        conn.close()
                    raise HttpError(resp.status, answer)
            except (OSError, http.client.HTTPException) as e:  # socket.timeout and ssl errors are OSErrors
                raise StoreUnavailable(f"cannot reach the API server at {self.endpoint.server}: {e!r}") from None
            return _Stream(resp, conn, t[1] if isinstance(t, tuple) else t, self.direct_streams)
        import urllib3

        try:
            resp = self.pool.urlopen(method, url, body=data, headers=headers,
                                     timeout=urllib3.Timeout(connect=t[0], read=t[1]) if isinstance(t, tuple) else t,
                                     preload_content=not stream, release_conn=not stream)
        except urllib3.exceptions.HTTPError as e:
            raise StoreUnavailable(f"cannot reach the API server at {self.endpoint.server}: {e}") from None
        if not 200 <= resp.status < 300:
            body = resp.data
            resp.release_conn()
            raise HttpError(resp.status, body)
        return resp

    def request(self, method: str, path: str, body=None, query: list | None = None,
                content_type: str = "application/json", timeout=None) -> bytes:
        """One request answered at once; the answer's bytes. A non-2xx answer raises
        HttpError, a transport failure StoreUnavailable."""
        if self.requests is None:
            return self.open(method, path, body, query, content_type, timeout).data
        url = self.prefix + path + ("?" + urlencode(query) if query else "")
        data = orjson.dumps(body) if body is not None else None
        try:
            status, answer = self.requests.send(method, url, data, self._headers(content_type if data else None),
                                                timeout if timeout is not None else self.timeout)
        except (OSError, http.client.HTTPException) as e:  # socket.timeout and ssl errors are OSErrors
            raise StoreUnavailable(f"cannot reach the API server at {self.endpoint.server}: {e!r}") from None
        if not 200 <= status < 300:
            raise HttpError(status, answer)
        return answer

    @property
    def multiplexes(self) -> bool:
        """Whether `request_many` drives its requests from the calling thread (not behind a
        proxy: there urllib3 carries every request)."""
        return self.requests is not None

    def request_many(self, chains: list[list[tuple[str, str, object, str]]], pace=None,
                     width: int | None = None) -> list[list]:
        """Requests (method, path, body, content type) answered at once, all from the calling
        thread (`multiplexes` only): the requests of a chain one after another, the chains
        side by side, `width` at most. Each request's (status, answer bytes), or the
        StoreUnavailable it failed with, in `chains`' shape."""
        wire = [[(method, self.prefix + path, orjson.dumps(body) if body is not None else None,
                  self._headers(content_type if body is not None else None))
                 for method, path, body, content_type in chain] for chain in chains]
        answers = self.requests.send_chains(wire, self.timeout, pace, width)
        return [[a if a.__class__ is tuple else
                 StoreUnavailable(f"cannot reach the API server at {self.endpoint.server}: {a!r}")
                 for a in chain] for chain in answers]

    def call(self, method: str, path: str, body=None, query: list | None = None,
             content_type: str = "application/json", timeout=None, trim=None) -> dict:
        """One request; the answer decoded ({} when empty), `trim(bytes) -> bytes` first."""
        data = self.request(method, path, body, query, content_type, timeout)
        if trim is not None:
            data = trim(data)
        return orjson.loads(data) if data else {}

    def close(self) -> None:
        if self.requests is not None:
            self.requests.close()
        if self.pool is not None:
            self.pool.close()
            self._manager.clear()
