"""ImageLocality: prefer nodes that already have the pod's container images.

Each image of the pod's init containers and containers present on the node contributes its
size scaled by the share of nodes that have it (so an image cached everywhere does not pull
pods to one node); the sum is mapped to 0..100 between 23MB and 1000MB per container, as
kube-scheduler does.
"""
from __future__ import annotations

import numpy as np

from ..framework import SKIP, Plugin, Status
from .scoring import MAX_NODE_SCORE

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
STATE = "ImageLocality"


def normalized_image(name: str) -> str:
    """Docker's implicit tag: "nginx" and "nginx:latest" are the same image."""
    last = name.rsplit("/", 1)[-1]
    return name if (":" in last or "@" in last) else name + ":latest"


def _images(pod) -> tuple[list, int]:
    """The images of the pod's init containers and containers, and how many containers there
    are: kube-scheduler scores both kinds and scales the ceiling by their number."""
    spec = (pod.raw or {}).get("spec") if isinstance(pod.raw, dict) else None
    inits = (spec or {}).get("initContainers") or []
    inits = inits if isinstance(inits, list) else []
    init_images = [c.get("image") for c in inits if isinstance(c, dict) and isinstance(c.get("image"), str)]
    return init_images + list(pod.images), len(inits) + len(pod.images)


class ImageLocality(Plugin):
    name = "ImageLocality"

    def pre_score(self, state, pod, rows):
        table = self.handle.table
        images = []
        pod_images, containers = _images(pod)
        for img in pod_images:
            for candidate in (img, normalized_image(img)):
                if candidate in table.image_nodes:
                    images.append(candidate)
                    break
        if not images:
            return Status(SKIP)  # no node has any of the images: every score would be 0
        state[STATE] = (images, containers)
        return None

    def score(self, state, pod, info) -> int:
        table = self.handle.table
        total_nodes = max(len(table), 1)
        node_images = info.node.images
        images, containers = state[STATE]
        s = 0
        for img in images:
            size = node_images.get(img)
            if size is None:
                continue
            s += int(size * (table.image_nodes[img] / total_nodes))
        hi = MAX_CONTAINER_THRESHOLD * max(containers, 1)
        s = min(max(s, MIN_THRESHOLD), hi)
        return (s - MIN_THRESHOLD) * MAX_NODE_SCORE // (hi - MIN_THRESHOLD)
