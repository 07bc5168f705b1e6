"""Who may talk to a shardsched process: every gRPC link is authenticated.

Three modes (config section `security`):

* `mtls`: mutual TLS with a CA the operator provides. Every process presents a certificate
  signed by it and accepts only peers that do; certificates name `serverName` (default
  "shardsched"), which clients verify instead of the peer's address, since pod addresses
  change with every restart. `shardsched certs` writes a development CA and one certificate
  per role.
* `token`: every call carries a shared secret read from `tokenFile` (the bearer token of the
  `authorization` metadata), compared in constant time. For local runs: `shardsched up` and
  `bench` generate one; the links are not encrypted, so use it on loopback only.
* `none`: anyone who reaches a port is trusted (a warning at start unless the process listens
  on loopback only).

A peer without valid credentials gets UNAUTHENTICATED and nothing else: no Status, no
Dispatch, no Decide.
"""
from __future__ import annotations

import hmac
import logging
import secrets

import grpc

#: Message size limits and keepalive of every channel and server (common/runtime/wire.py).
from .wire import CHANNEL_OPTIONS, SERVER_OPTIONS  # noqa: F401

log = logging.getLogger(__name__)

MODES = ("none", "token", "mtls")
_METADATA_KEY = "authorization"


class SecurityError(ValueError):
    """The credentials the configuration names cannot be used; names the field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"security.{field}: {message}")
        self.field = field


def _read(path: str | None, field: str, mode: str) -> bytes:
    """The file at `path`, given by the `security` section's `field` for `mode`."""
    if not path:
        raise SecurityError(field, f"is required in mode {mode}")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise SecurityError(field, f"cannot read {path}: {e.strerror}") from None
    if not data.strip():
        raise SecurityError(field, f"{path} is empty")
    return data


def new_token() -> str:
    return secrets.token_urlsafe(32)


class Security:
    """Credentials of one process: how it listens and how it calls its peers."""

    def __init__(self, mode: str = "none", token: str | None = None, ca: bytes | None = None,
                 cert: bytes | None = None, key: bytes | None = None, server_name: str = "shardsched"):
        if mode not in MODES:
            raise SecurityError("mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.token = token
        self.ca, self.cert, self.key = ca, cert, key
        self.server_name = server_name

    @classmethod
    def from_config(cls, section) -> "Security":
        """From the config's `security` section (a common.config.SecurityConfig); raises
        SecurityError naming the field."""
        mode = section.mode
        if mode == "token":
            return cls(mode, token=_read(section.token_file, "tokenFile", mode).decode().strip())
        if mode == "mtls":
            return cls(mode, ca=_read(section.ca_file, "caFile", mode), cert=_read(section.cert_file, "certFile", mode),
                       key=_read(section.key_file, "keyFile", mode), server_name=section.server_name)
        return cls(mode)

    # --- listening ------------------------------------------------------------------------

    def interceptors(self) -> list:
        return [_TokenCheck(self.token)] if self.mode == "token" else []

    def add_port(self, server: grpc.Server, address: str) -> int:
        """Listen on `address`; returns the port bound (0 when it could not bind)."""
        if self.mode == "mtls":
            creds = grpc.ssl_server_credentials([(self.key, self.cert)], root_certificates=self.ca,
                                                require_client_auth=True)
            return server.add_secure_port(address, creds)
        if self.mode == "none" and not address.startswith(("127.", "localhost:", "[::1]")):
            log.warning("listening on %s without credentials: anyone who reaches the port is trusted "
                        "(set security.mode to mtls or token)", address)
        return server.add_insecure_port(address)

    # --- calling --------------------------------------------------------------------------

    def channel(self, address: str) -> grpc.Channel:
        if self.mode == "mtls":
            creds = grpc.ssl_channel_credentials(root_certificates=self.ca, private_key=self.key,
                                                 certificate_chain=self.cert)
            return grpc.secure_channel(address, creds, options=CHANNEL_OPTIONS + [
                ("grpc.ssl_target_name_override", self.server_name)])
        ch = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        if self.mode == "token":
            ch = grpc.intercept_channel(ch, _TokenSender(self.token))
        return ch


class _TokenSender(grpc.UnaryUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the bearer token to every call."""

    def __init__(self, token: str):
        self.metadata = (_METADATA_KEY, f"Bearer {token}")

    def _with_token(self, details):
        return _CallDetails(details.method, details.timeout, list(details.metadata or []) + [self.metadata],
                            details.credentials, getattr(details, "wait_for_ready", None),
                            getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return continuation(self._with_token(client_call_details), request_iterator)


class _CallDetails(grpc.ClientCallDetails):
    def __init__(self, method, timeout, metadata, credentials, wait_for_ready, compression):
        self.method, self.timeout, self.metadata = method, timeout, metadata
        self.credentials, self.wait_for_ready, self.compression = credentials, wait_for_ready, compression


class _TokenCheck(grpc.ServerInterceptor):
    """Refuses every call that does not carry the token."""

    def __init__(self, token: str):
        self.expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation, handler_call_details):
        given = dict(handler_call_details.invocation_metadata or ()).get(_METADATA_KEY, "")
        if hmac.compare_digest(given.encode(), self.expected):
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        return None if handler is None else _refusing(handler)


def _refusing(handler):
    """A handler of the same shape as `handler` that answers UNAUTHENTICATED."""
    def refuse(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong credentials")

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)
