"""DefaultBinder: commit the placement by binding the pod in the cluster store."""
from __future__ import annotations

from common.errors import Conflict
from ..framework import ERROR, Plugin, Status


class DefaultBinder(Plugin):
    name = "DefaultBinder"

    def bind(self, state, pod, node_name: str):
        try:
            self.handle.client.bind(pod.key, node_name, pod.uid or None)
        except Conflict as e:
            return Status(ERROR, f"binding rejected: {e.reason}")
        return None
