"""Errors that name the object and the field at fault.

Every rejection of user input goes through `ObjectError` so that the CLI, the stores and the
scheduler can report *which* object and *which* field was wrong, and keep serving the rest.
"""
from __future__ import annotations


class ObjectError(ValueError):
    """A Kubernetes object (or config document) that cannot be accepted.

    `obj` reads like "Pod default/web-1" and `field` is a JSON-path-like location such as
    "spec.containers[0].resources.requests.cpu".
    """

    def __init__(self, obj: str, field: str, message: str):
        super().__init__(f"{obj}: {field}: {message}")
        self.obj = obj
        self.field = field
        self.message = message

    def as_dict(self) -> dict:
        return {"object": self.obj, "field": self.field, "message": self.message}


class StoreUnavailable(RuntimeError):
    """The cluster store cannot be reached; the message says where we tried."""


class ResourceVersionTooOld(RuntimeError):
    """A watch asked for history the store no longer keeps: the caller must relist."""


class Conflict(RuntimeError):
    """A write lost a race (pod already bound, object gone, ...); `reason` says which."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
