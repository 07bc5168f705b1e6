"""Every gRPC link is authenticated (common/runtime/security.py): a peer without the credentials gets
UNAUTHENTICATED and nothing else, whatever it calls. Checked on a real binder's port (the one
that commits bindings), with the token of local runs and with mutual TLS from `shardsched
certs`."""
from __future__ import annotations

import os

import grpc
import pytest

from builders import LiveBinder, decision, make_config, node, pod
from common.cli import main
from common.runtime.security import Security
from common.store.memory import MemoryStore
from proto import shardsched_pb2 as pb
from proto import shardsched_pb2_grpc as rpc


def binder_with(security: dict) -> tuple[LiveBinder, MemoryStore]:
    store = MemoryStore()
    store.create(node("n1"))
    store.create(pod("p", cpu="1"))
    return LiveBinder(store, make_config(security=security)), store


def from_config(security: dict) -> Security:
    """Security.from_config of a `security` section as the file writes it."""
    return Security.from_config(make_config(security=security).security)


def refused(channel: grpc.Channel) -> None:
    """Status and a forged decision both fail with UNAUTHENTICATED (or, under TLS, the
    handshake fails: UNAVAILABLE); the decision binds nothing."""
    with pytest.raises(grpc.RpcError) as e:
        rpc.ComponentStub(channel).Status(pb.StatusRequest(), timeout=5)
    assert e.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(grpc.RpcError) as e:
        batch = pb.DecisionBatch(shard="0", decisions=[decision("default/p", "n1")])
        for _ in rpc.BinderStub(channel).Decide(iter([batch]), timeout=5):
            pass
    assert e.value.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNAVAILABLE)


def test_token_mode_refuses_peers_without_the_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    binder, store = binder_with({"mode": "token", "tokenFile": str(token)})
    try:
        address = binder.server.address
        refused(grpc.insecure_channel(address))
        wrong = tmp_path / "wrong"
        wrong.write_text("guess")
        refused(from_config({"mode": "token", "tokenFile": str(wrong)}).channel(address))
        assert store.get("Pod", "default/p")["spec"].get("nodeName") is None
        binder.sync()
        assert binder.decide(decision("default/p", "n1", uid=store.get("Pod", "default/p")["metadata"]["uid"]))[
            "default/p"].bound  # the binder's own credentials work
    finally:
        binder.close()


def test_mutual_tls_with_certificates_from_shardsched_certs(tmp_path, capsys):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert main(["certs", "--out", str(ours)]) == 0
    assert main(["certs", "--out", str(theirs)]) == 0
    assert oct(os.stat(ours / "ca.key").st_mode & 0o777) == "0o600"
    assert main(["certs", "--out", str(ours)]) != 0  # never overwrites a CA without --force

    def mtls(d, role) -> dict:
        return {"mode": "mtls", "caFile": str(d / "ca.crt"), "certFile": str(d / f"{role}.crt"),
                "keyFile": str(d / f"{role}.key")}

    binder, store = binder_with(mtls(ours, "binder"))
    try:
        address = binder.server.address
        refused(grpc.insecure_channel(address))
        refused(from_config({**mtls(theirs, "shard"), "serverName": "shardsched"}).channel(address))
        shard = from_config({**mtls(ours, "shard"), "serverName": "shardsched"})
        with shard.channel(address) as ch:
            assert rpc.ComponentStub(ch).Status(pb.StatusRequest(), timeout=5).role == "binder"
    finally:
        binder.close()


def test_missing_credential_files_are_named(tmp_path):
    section = {"mode": "mtls", "caFile": str(tmp_path / "nope.crt")}
    with pytest.raises(ValueError, match=r"security.caFile: cannot read .*nope.crt"):
        from_config(section)
    with pytest.raises(ValueError, match="security.tokenFile: is required in mode token"):
        from_config({**section, "mode": "token"})
