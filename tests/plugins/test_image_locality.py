"""ImageLocality as kube-scheduler v1.37 computes it: kube's own table cases
(imagelocality/image_locality_test.go), then what its cache adds (backend/cache/cache.go): one
size per image name for the whole cluster (the size of the node that reported it first), node
counts as of the moment a node was last copied into the snapshot, and the pod's image
normalised to `:latest` when untagged, matched only so."""
from __future__ import annotations

import pytest

from builders import MI, Cluster, node, pod


def _pod(*images, init=(), image_volumes=()):
    p = pod("p", images=images)
    if init:
        p["spec"]["initContainers"] = [{"name": f"i{k}", "image": img} for k, img in enumerate(init)]
    if image_volumes:
        p["spec"]["volumes"] = [{"name": f"v{k}", "image": {"reference": ref}} for k, ref in enumerate(image_volumes)]
    return p


NODE_40_300_2000 = {("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"): 40 * MI,
                    ("gcr.io/300:latest", "gcr.io/300:v1"): 300 * MI, "gcr.io/2000:latest": 2000 * MI}
NODE_250_10 = {"gcr.io/250:latest": 250 * MI, ("gcr.io/10:latest", "gcr.io/10:v1"): 10 * MI}
NODE_600_40_900 = {"gcr.io/600:latest": 600 * MI, "gcr.io/40:latest": 40 * MI, "gcr.io/900:latest": 900 * MI}
NODE_300_600_900 = {"gcr.io/300:latest": 300 * MI, "gcr.io/600:latest": 600 * MI, "gcr.io/900:latest": 900 * MI}
NODE_4000_30 = {"gcr.io/4000:latest": 4000 * MI, "gcr.io/30:latest": 30 * MI}
NODE_20_30_40 = {"gcr.io/20:latest": 20 * MI, "gcr.io/30:latest": 30 * MI, "gcr.io/40:latest": 40 * MI}


# kube-scheduler v1.37, TestImageLocalityPriority: (pod, node images in order, expected scores)
@pytest.mark.parametrize("p, nodes, want", [
    # two images spread on two nodes, prefer the larger image one
    (_pod("gcr.io/40", "gcr.io/250"), [NODE_40_300_2000, NODE_250_10], [0, 5]),
    # two images on one node, prefer this node
    (_pod("gcr.io/40", "gcr.io/300"), [NODE_40_300_2000, NODE_250_10], [7, 0]),
    # if exceed limit, use limit
    (_pod("gcr.io/10", "gcr.io/4000"), [NODE_4000_30, NODE_250_10], [100, 0]),
    # if exceed limit, use limit (with node which has no images present)
    (_pod("gcr.io/10", "gcr.io/4000"), [NODE_4000_30, NODE_250_10, {}], [66, 0, 0]),
    # pod with multiple large images, node2 is preferred
    (_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"), [NODE_600_40_900, NODE_300_600_900, {}], [32, 36, 0]),
    # pod with multiple small images
    (_pod("gcr.io/30", "gcr.io/40"), [NODE_20_30_40, NODE_4000_30], [1, 0]),
    # include InitContainers: two images spread on two nodes, prefer the larger image one
    (_pod("gcr.io/30", init=("gcr.io/300",)), [NODE_40_300_2000, NODE_20_30_40], [6, 0]),
    # v1.37: "pod with ImageVolume" (an image volume's image counts, and counts as an image)
    (_pod("gcr.io/30", image_volumes=("gcr.io/300",)), [NODE_300_600_900, NODE_4000_30], [6, 0]),
    # "same images as ImageVolume pod but as regular container images"
    (_pod("gcr.io/30", "gcr.io/300"), [NODE_300_600_900, NODE_4000_30], [6, 0]),
], ids=["larger-image", "two-on-one", "limit", "limit-empty-node", "large-images", "small-images", "init",
        "image-volume", "image-volume-as-containers"])
def test_kube_table(p, nodes, want):
    c = Cluster([node(f"node{i + 1}", images=imgs) for i, imgs in enumerate(nodes)])
    assert c.score("ImageLocality", p) == {f"node{i + 1}": w for i, w in enumerate(want)}


@pytest.mark.parametrize("image, normalised", [
    ("root", "root:latest"), ("gcr.io:5000/root", "gcr.io:5000/root:latest"), ("root:tag", "root:tag"),
    ("root@sha256:" + "ab" * 32, "root@sha256:" + "ab" * 32),
])
def test_normalized_image_name(image, normalised):  # kube's TestNormalizedImageName
    from shard.plugins.image_locality import normalized_image

    assert normalized_image(image) == normalised


def test_one_size_per_image_for_the_whole_cluster():
    """kube's cache keeps the size of the node that reported the image first: a node
    reporting 150 MiB scores like the first one's 950 MiB (it used to score by its own size)."""
    c = Cluster([node("big", images={"example.com/big:1": 950 * MI}),
                 node("small", images={"example.com/big:1": 150 * MI}), node("neither")])
    # both have it: 950 MiB * 2/3 = 633 MiB -> (633-23)*100/977 = 62
    assert c.score("ImageLocality", pod("p", images=["example.com/big:1"])) == {"big": 62, "small": 62, "neither": 0}


def test_untagged_node_images_do_not_match():
    """The pod's "example.com/db" is looked up as "example.com/db:latest" only: a node listing
    the untagged name earns nothing (it used to match first)."""
    c = Cluster([node("untagged", images={"example.com/db": 800 * MI}),
                 node("tagged", images={"example.com/db:latest": 800 * MI})])
    # tagged: 800 MiB * 1/2 = 400 MiB -> 377*100/977 = 38
    assert c.score("ImageLocality", pod("p", images=["example.com/db"])) == {"untagged": 0, "tagged": 38}


def test_node_counts_are_those_of_the_nodes_last_snapshot_copy():
    """kube copies a node into its snapshot only when the node changes, with the number of
    nodes holding each of its images at that moment: "first" still counts one node of two."""
    c = Cluster([node("first", images={"app:v1": 500 * MI})])
    c.add_node(node("second", images={"app:v1": 500 * MI}))
    # first: 500 * 1/2 = 250 MiB -> 227*100/977 = 23; second: 500 * 2/2 -> 477*100/977 = 48
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"first": 23, "second": 48}
    c.add_pod(pod("r", node_name="first"))  # first changes and is copied again
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"first": 48, "second": 48}


def test_a_removed_image_leaves_the_cluster_count_and_returns_with_the_next_size():
    """An image no node holds any more is forgotten; the next node to report it sets its size."""
    c = Cluster([node("a", images={"app:v1": 900 * MI}), node("b")])
    c.add_node(node("a"))  # a's images are gone
    c.add_node(node("b", images={"app:v1": 100 * MI}))
    # b: 100 MiB * 1/2 = 50 MiB -> 27*100/977 = 2
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"a": 0, "b": 2}


def test_no_image_anywhere_skips():
    c = Cluster([node("n1", images={"other:1": 800 * MI})])
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 0}
