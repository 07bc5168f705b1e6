"""The plugin names common/ knows (common.plugin_names, as kube's names.go) and the plugins
the shard registers are the same set, so the config accepts exactly what a shard can run."""
from common import plugin_names
from shard.registry import REGISTRY


def test_every_known_name_has_a_plugin_and_every_plugin_a_name():
    assert set(REGISTRY) == plugin_names.KNOWN
