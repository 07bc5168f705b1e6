"""The plugin names common/ knows (common.plugin_names, as kube's names.go) and the plugins
the shard registers are the same set, so the config accepts exactly what a shard can run;
the extension points common/ says each plugin implements are the ones its class implements;
and every plugin has its arguments' type in common.plugin_args."""
from common import plugin_args, plugin_names
from shard.framework import Plugin
from shard.profile import POINTS_OF
from shard.registry import REGISTRY


def test_every_known_name_has_a_plugin_and_every_plugin_a_name():
    assert set(REGISTRY) == plugin_names.KNOWN


def test_every_plugin_has_an_args_type():
    assert set(plugin_args.KINDS) == plugin_names.KNOWN


def test_declared_extension_points_match_the_plugin_classes():
    """A profile may switch a plugin on or off at the points POINTS names: each must be one
    the class implements (a pre point may be implemented inside its main one), and every
    method the class implements must be reachable through them."""
    for name, cls in REGISTRY.items():
        methods = {m for m in POINTS_OF if getattr(cls, m) is not getattr(Plugin, m)}
        declared = set(plugin_names.POINTS[name])
        unreachable = {m for m in methods if declared.isdisjoint(POINTS_OF[m])}
        assert not unreachable, (name, unreachable)
        main = {plugin_names.PAIRED_POINTS.get(p, p) for p in declared}
        implemented = {plugin_names.PAIRED_POINTS.get(p, p) for m in methods for p in POINTS_OF[m]}
        assert main <= implemented, (name, main - implemented)
