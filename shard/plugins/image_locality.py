"""ImageLocality: prefer nodes that already have the pod's container images, as
kube-scheduler v1.37 scores them.

Each container's image (init containers and image volumes included) is normalised as kube does (a name whose
last ':' does not come after its last '/' gets ':latest') and looked up by that name only in
the node's image states. A hit contributes the image's cluster-wide size (the size of the
node that reported it first) scaled by the share of nodes holding it, both as of the node's
last copy into the snapshot (shard.cache, shard.node_info); the sum is mapped to 0..100
between 23 MiB and 1000 MiB per container.
"""
from __future__ import annotations

from common.plugins import image_locality
from ..framework import SKIP, Plugin, Status
from .scoring import MAX_NODE_SCORE

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
STATE = "ImageLocality"


def normalized_image(name: str) -> str:
    """kube's normalizedImageName: "nginx" and "gcr.io:5000/app" get the implicit ":latest"."""
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


def _images(pod) -> tuple[list, int]:
    """The normalised images of the pod's init containers, containers and image volumes, and
    how many there are: kube-scheduler v1.37 scores all three and scales the ceiling by their
    number (v1.33 left image volumes out)."""
    spec = (pod.raw or {}).get("spec") if isinstance(pod.raw, dict) else None
    inits = (spec or {}).get("initContainers") or []
    inits = inits if isinstance(inits, list) else []
    init_images = [c.get("image") for c in inits if isinstance(c, dict) and isinstance(c.get("image"), str)]
    volumes = (spec or {}).get("volumes") or []
    volume_images = [v["image"].get("reference") for v in (volumes if isinstance(volumes, list) else ())
                     if isinstance(v, dict) and isinstance(v.get("image"), dict)]
    volume_images = [ref for ref in volume_images if isinstance(ref, str)]
    images = init_images + list(pod.images) + volume_images
    return [normalized_image(img) for img in images], len(inits) + len(pod.images) + len(volume_images)


class ImageLocality(Plugin, image_locality.ImageLocality):
    def pre_score(self, state, pod, rows):
        image_nodes = self.handle.table.image_nodes
        if not image_nodes:
            # No node reports any image (kwok's nodes, many clusters): skip without reading
            # the pod's containers, volumes and init containers every cycle.
            return Status(SKIP)
        images, containers = _images(pod)
        if not any(img in image_nodes for img in images):
            return Status(SKIP)  # no node has any of the images: every score would be 0
        state[STATE] = (images, containers)
        return None

    def score(self, state, pod, info) -> int:
        total_nodes = len(self.handle.table)
        images, containers = state[STATE]
        s = 0
        for img in images:
            hit = info.image_states.get(img)
            if hit is not None:
                size, holders = hit
                s += int(size * (holders / total_nodes))  # kube's float64, truncated
        hi = MAX_CONTAINER_THRESHOLD * containers
        s = min(max(s, MIN_THRESHOLD), hi)
        return MAX_NODE_SCORE * (s - MIN_THRESHOLD) // (hi - MIN_THRESHOLD)
