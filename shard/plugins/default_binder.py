"""DefaultBinder: commit the placement by binding the pod in the cluster store."""
from __future__ import annotations

from common.errors import Conflict
from common.plugins import default_binder
from ..framework import ERROR, Plugin, Status


class DefaultBinder(Plugin, default_binder.DefaultBinder):
    def bind(self, state, pod, node_name: str):
        try:
            self.handle.client.bind(pod.key, node_name, pod.uid or None)
        except Conflict as e:
            return Status(ERROR, f"binding rejected: {e.reason}")
        return None
