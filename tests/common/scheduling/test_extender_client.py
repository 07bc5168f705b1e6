"""The extender client (common/scheduling/extenders.py) against a real HTTP extender
(builders.TestExtender): kube's extender/v1 documents both ways, node names or whole nodes,
errors, timeouts, TLS, managedResources and the latency metric."""
from __future__ import annotations

import base64

import pytest
import urllib3
from prometheus_client import CollectorRegistry

from builders import TestExtender, node, pod
from common import config
from common.cli import main
from common.model.objects import parse_node
from common.runtime.metrics import extender_duration, extender_observer
from common.scheduling.extenders import Extender, ExtenderError


@pytest.fixture
def ext():
    server = TestExtender(reject="bad", favour="good", base=3, unresolvable="gone")
    yield server
    server.close()


def client(server, observe=None, **fields) -> Extender:
    doc = {"urlPrefix": server.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 2,
           "preemptVerb": "preempt", "bindVerb": "bind", **fields}
    return Extender(config.ExtenderConfig.of(doc), observe)


NODES = [parse_node(node(n)) for n in ("good-1", "bad-1", "plain-1", "gone-1")]


@pytest.mark.parametrize("cache_capable", [False, True])
def test_filter_sends_whole_nodes_or_names_and_reads_kubes_answer(ext, cache_capable):
    c = client(ext, nodeCacheCapable=cache_capable)
    web = pod("web", cpu="1")
    passed, failed, unresolvable = c.filter(web, NODES)
    assert passed == ["good-1", "plain-1"]
    assert failed == {"bad-1": "rejected by the test extender"}
    assert unresolvable == {"gone-1": "rejected by the test extender"}
    verb, args = ext.calls[-1]
    assert verb == "filter" and args["Pod"]["metadata"]["name"] == "web"
    if cache_capable:
        assert args["NodeNames"] == ["good-1", "bad-1", "plain-1", "gone-1"] and "Nodes" not in args
    else:
        assert [n["metadata"]["name"] for n in args["Nodes"]["items"]] == ["good-1", "bad-1", "plain-1", "gone-1"]
        assert args["Nodes"]["items"][0]["status"]["allocatable"]["cpu"] == "4"  # the whole Node
        assert "NodeNames" not in args


def test_prioritize_gives_scores_and_the_weight(ext):
    scores, weight = client(ext, nodeCacheCapable=True).prioritize(pod("web"), NODES)
    assert scores == {"good-1": 10, "bad-1": 3, "plain-1": 3, "gone-1": 3} and weight == 2
    assert client(ext, prioritizeVerb="", weight=0).prioritize(pod("web"), NODES[:1]) == ({"good-1": 0}, 0)


def test_answers_are_read_ignoring_the_case_of_keys_as_go_does(ext):
    ext.answer = lambda verb, body: {"nodenames": ["good-1"], "failedNodes": {"bad-1": "no"}}
    assert client(ext, nodeCacheCapable=True).filter(pod("web"), NODES[:2]) == (["good-1"], {"bad-1": "no"}, {})


def test_a_node_the_extender_invents_is_an_error(ext):
    ext.answer = lambda verb, body: {"NodeNames": ["elsewhere"]}
    with pytest.raises(ExtenderError, match="claims a filtered node 'elsewhere' which is not found in the input"):
        client(ext, nodeCacheCapable=True).filter(pod("web"), NODES[:1])


def test_http_errors_timeouts_and_the_extenders_own_error_raise_and_are_timed(ext):
    registry = CollectorRegistry()
    hist = extender_duration(registry)
    c = client(ext, observe=extender_observer(hist), httpTimeoutSeconds=0.2)
    ext.status = 500
    with pytest.raises(ExtenderError, match=r"failed filter with extender at URL .*/scheduler/filter, code 500"):
        c.filter(pod("web"), NODES)
    ext.status, ext.error = 200, "licence server down"
    with pytest.raises(ExtenderError, match="licence server down"):
        c.filter(pod("web"), NODES)
    with pytest.raises(ExtenderError, match="licence server down"):
        c.bind("default", "web", "u1", "good-1")
    ext.error, ext.delay = "", 3
    with pytest.raises(ExtenderError, match="filter"):
        c.filter(pod("web"), NODES)
    labels = {"extender": ext.url, "verb": "filter"}
    assert registry.get_sample_value("shardsched_extender_duration_seconds_count", {**labels, "result": "error"}) == 3
    ext.delay = 0
    c.filter(pod("web"), NODES)
    assert registry.get_sample_value("shardsched_extender_duration_seconds_count", {**labels, "result": "success"}) == 1


def test_bind_and_preempt_send_kubes_documents(ext):
    c = client(ext)
    c.bind("team", "web", "u1", "good-1")
    assert ext.calls[-1] == ("bind", {"PodName": "web", "PodNamespace": "team", "PodUID": "u1", "Node": "good-1"})
    victim = {"metadata": {"name": "v", "namespace": "default", "uid": "v1"}}
    ext.preempt_keep = ("good-1",)
    got = c.process_preemption(pod("web"), {"good-1": ([victim], 1), "bad-1": ([victim], 0)})
    assert got == {"good-1": (["v1"], 1)}
    assert ext.calls[-1][1]["NodeNameToVictims"]["good-1"] == {"Pods": [victim], "NumPDBViolations": 1}
    client(ext, nodeCacheCapable=True).process_preemption(pod("web"), {"good-1": ([victim], 0)})
    assert ext.calls[-1][1]["NodeNameToMetaVictims"] == {"good-1": {"Pods": [{"UID": "v1"}], "NumPDBViolations": 0}}


def test_managed_resources_select_pods_by_requests_or_limits_in_any_container(ext):
    c = client(ext, managedResources=[{"name": "example.com/gpu"}])
    assert not c.is_interested(pod("plain", cpu="1"))
    gpu = pod("gpu", cpu="1")
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    assert c.is_interested(gpu)
    init = pod("init", cpu="1")
    init["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"example.com/gpu": "1"}}}]
    assert c.is_interested(init)
    assert client(ext).is_interested(pod("plain"))  # no managedResources: every pod


def test_https_with_the_tls_config(tmp_path):
    assert main(["certs", "--out", str(tmp_path)]) == 0
    server = TestExtender(favour="good", tls=(str(tmp_path / "binder.crt"), str(tmp_path / "binder.key")))
    try:
        ca = base64.b64encode((tmp_path / "ca.crt").read_bytes()).decode()
        trusted = client(server, enableHTTPS=True, tlsConfig={"caData": ca, "serverName": "shardsched"})
        assert trusted.prioritize(pod("web"), NODES[:1]) == ({"good-1": 10}, 2)
        by_file = client(server, tlsConfig={"caFile": str(tmp_path / "ca.crt"), "serverName": "shardsched"})
        assert by_file.prioritize(pod("web"), NODES[:1])[0] == {"good-1": 10}
        # kube: enableHTTPS without a CA does not verify the certificate
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning):
            assert client(server, enableHTTPS=True).prioritize(pod("web"), NODES[:1])[0] == {"good-1": 10}
        with pytest.raises(ExtenderError, match="prioritize"):  # a CA that did not sign it
            client(server, tlsConfig={"caFile": str(tmp_path / "ca.crt"), "serverName": "elsewhere"}).prioritize(
                pod("web"), NODES[:1])
    finally:
        server.close()
