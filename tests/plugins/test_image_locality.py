"""ImageLocality, with the numbers of kube-scheduler's image_locality tests (worked out by hand
in the comments)."""
from __future__ import annotations

from builders import MI, Cluster, node, pod


def test_image_locality_scales_by_spread():
    """An image's size counts in proportion to the share of nodes holding it, mapped to
    0..100 between 23MB and 1000MB per container."""
    c = Cluster([node("n1", images={"app:v1": 500 * MI}), node("n2")])
    # n1: 500MB * 1/2 = 250MB -> (250-23)*100/(1000-23) = 23
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 23, "n2": 0}


def test_image_locality_everywhere_and_thresholds():
    c = Cluster([node("n1", images={"app:v1": 500 * MI, "tiny:1": 10 * MI, "huge:1": 3000 * MI}),
                 node("n2", images={"app:v1": 500 * MI, "tiny:1": 10 * MI, "huge:1": 3000 * MI})])
    # on both nodes: full size 500MB -> 477*100/977 = 48
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 48, "n2": 48}
    assert c.score("ImageLocality", pod("p", images=["tiny:1"])) == {"n1": 0, "n2": 0}     # below 23MB
    assert c.score("ImageLocality", pod("p", images=["huge:1"])) == {"n1": 100, "n2": 100}  # capped
    # two containers: the ceiling is 2000MB, and 3010MB of images is past it -> 100
    assert c.score("ImageLocality", pod("p", images=["huge:1", "tiny:1"])) == {"n1": 100, "n2": 100}
    # two containers, 500MB of images: (510-23)*100/(2000-23) = 24
    assert c.score("ImageLocality", pod("p", images=["app:v1", "tiny:1"])) == {"n1": 24, "n2": 24}


def test_image_locality_implicit_latest_tag():
    """A pod's "nginx" is the node's "nginx:latest"; a different tag is a different image."""
    c = Cluster([node("n1", images={"nginx:latest": 800 * MI}), node("n2", images={"nginx:1.25": 800 * MI})])
    # n1: 800MB * 1/2 = 400MB -> 377*100/977 = 38
    assert c.score("ImageLocality", pod("p", images=["nginx"])) == {"n1": 38, "n2": 0}


def test_image_locality_no_image_anywhere_skips():
    c = Cluster([node("n1", images={"other:1": 800 * MI})])
    assert c.score("ImageLocality", pod("p", images=["app:v1"])) == {"n1": 0}


def test_image_locality_counts_init_containers():
    """kube scores init containers' images too, and the ceiling grows with every container."""
    p = pod("p", images=["pause"])
    p["spec"]["initContainers"] = [{"name": "init", "image": "tools:1"}]
    c = Cluster([node("n1", images={"tools:1": 500 * MI}), node("n2")])
    # 500MB * 1/2 = 250MB over two containers: (250-23)*100/(2000-23) = 11
    assert c.score("ImageLocality", p) == {"n1": 11, "n2": 0}
