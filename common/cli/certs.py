"""`shardsched certs`: a development CA and one certificate per role, for `security.mode: mtls`.

Each certificate serves and authenticates as a client (mutual TLS) and names the one
`serverName` every component checks (pod addresses change; see common/runtime/security.py), plus
localhost and 127.0.0.1 for runs on one machine. Keys are written readable by our user
only. For production, issue the certificates from the cluster's own CA (cert-manager, say):
anything signed by the CA in `caFile` is trusted, so its key is the key to the scheduler.
"""
from __future__ import annotations

import argparse
import datetime
import ipaddress
import os

from ..tools.local_cluster import ROLES
from ..runtime.security import SecurityError


def register(sub: argparse._SubParsersAction) -> None:
    ce = sub.add_parser("certs", help="write a development CA and a certificate per role (security.mode: mtls)")
    ce.add_argument("--out", required=True, metavar="DIR", help="directory for ca.crt/.key and ROLE.crt/.key")
    ce.add_argument("--server-name", default="shardsched",
                    help="the name every certificate carries (security.serverName; default shardsched)")
    ce.add_argument("--host", action="append", default=[], metavar="NAME",
                    help="another DNS name or IP address for the certificates (repeatable)")
    ce.add_argument("--days", type=int, default=365, help="validity (default 365)")
    ce.add_argument("--force", action="store_true", help="replace an existing CA in DIR")
    ce.set_defaults(handler=cmd_certs)


def _write(path: str, data: bytes, private: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject: str, key, issuer: str, issuer_key, days: int, ca: bool, names=()) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        sans = [x509.IPAddress(ipaddress.ip_address(n)) if _is_ip(n) else x509.DNSName(n) for n in names]
        builder = (builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    return builder.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def cmd_certs(args) -> int:
    os.makedirs(args.out, exist_ok=True)
    existing = [n for n in ("ca.crt", "ca.key") if os.path.exists(os.path.join(args.out, n))]
    if existing and not args.force:
        raise SecurityError("caFile", f"{os.path.join(args.out, existing[0])} exists (--force replaces it)")
    ca_key = _key()
    ca_name = f"{args.server_name} development CA"
    _write(os.path.join(args.out, "ca.key"), _pem_key(ca_key), private=True)
    _write(os.path.join(args.out, "ca.crt"), _cert(ca_name, ca_key, ca_name, ca_key, args.days, ca=True), False)
    names = [args.server_name, "localhost", "127.0.0.1", *args.host]
    for role in ROLES:
        key = _key()
        _write(os.path.join(args.out, f"{role}.key"), _pem_key(key), private=True)
        _write(os.path.join(args.out, f"{role}.crt"),
               _cert(f"{role}.{args.server_name}", key, ca_name, ca_key, args.days, ca=False, names=names), False)
        print(f"{role}: {os.path.join(args.out, role)}.crt, .key")
    print(f"CA: {os.path.join(args.out, 'ca.crt')} (its key ca.key signs anything the components will trust: "
          "keep it private, or delete it once the certificates are issued)")
    return 0
