"""Scheduler extenders in the configuration: kube-scheduler v1.37's `extenders` list.

The native schema (common.config.SCHEMA["extenders"]) and the KubeSchedulerConfiguration
mapping (common.config.kube_config) both end in the rules below, kube's validateExtenders with
its messages, so a file is refused with the same words in either format.
"""
from __future__ import annotations

import base64
import binascii

from ..validation import FieldError, invalid, qualified_name_errors

#: client-go's prefix of quota names for requests, which an extended resource must not start with.
_REQUESTS_PREFIX = "requests."
#: kube-scheduler's DefaultExtenderTimeout is 5s when a timeout is zero; v1's defaulting
#: gives httpTimeout 30s first, which is what a file without one gets.
DEFAULT_TIMEOUT_SECONDS = 30.0
#: tlsConfig's fields holding PEM bytes (base64 in JSON and YAML, as Go's []byte).
TLS_DATA = ("certData", "keyData", "caData")


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io that
    still makes a qualified quota name."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith(_REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(_REQUESTS_PREFIX + name)


def check(extenders: list[dict], path: str = "extenders") -> list[FieldError]:
    """kube's validateExtenders over the documents of `extenders` (camelCase keys, defaults
    filled in), every error in kube's order; plus the base64 of tlsConfig's data fields."""
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        p = f"{path}[{i}]"
        if ext.get("prioritizeVerb") and ext.get("weight", 0) <= 0:
            errs.append(invalid(f"{p}.weight", ext.get("weight", 0), "must have a positive weight applied to it"))
        if ext.get("bindVerb"):
            binders += 1
        for j, res in enumerate(ext.get("managedResources") or ()):
            rp, name = f"{p}.managedResources[{j}].name", res.get("name", "")
            why = qualified_name_errors(name)
            errs += [invalid(rp, name, msg) for msg in why]
            if not why and not is_extended_resource_name(name):
                errs.append(invalid(rp, name, "is an invalid extended resource name"))
            if name in managed:
                errs.append(invalid(rp, name, "duplicate extender managed resource name"))
            managed.add(name)
        tls = ext.get("tlsConfig") or {}
        for key in TLS_DATA:
            if tls.get(key) and decode_pem(tls[key]) is None:
                errs.append(invalid(f"{p}.tlsConfig.{key}", "<data>", "must be base64-encoded PEM, as Go's []byte"))
    if binders > 1:
        errs.append(invalid(path, f"found {binders} extenders implementing bind", "only one extender can implement bind"))
    return errs


def decode_pem(data: str) -> bytes | None:
    """tlsConfig's certData/keyData/caData: base64 text to its bytes (None when not base64)."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
