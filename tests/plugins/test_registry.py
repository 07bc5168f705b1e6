"""The plugin registry (common.plugins): every plugin common/ knows has a shard adapter and
the other way round, each adapter derives from its plugin's class and implements the
extension points that class declares (checked when the class is defined, so a plugin that
breaks it cannot even be imported), and every plugin has its arguments' type.

The points are declared once, as the interfaces a plugin's class derives from; config
validation reads them from there, and these tests check the checker itself."""
import pytest

from common.scheduling import checks
from common.config import plugin_args, plugin_names
from common import plugins
from common.plugins.interface import (EXTENSION_POINTS, METHOD_POINTS, FilterPlugin, PreFilterPlugin, ScorePlugin,
                                      check_implements, implements)
from shard.framework import Plugin
from shard.registry import REGISTRY


def test_every_known_name_has_a_plugin_and_every_plugin_a_name():
    assert set(REGISTRY) == plugins.KNOWN == set(plugins.SPECS)
    assert {n for n, _ in plugin_names.DEFAULT_PLUGINS} <= plugins.KNOWN


def test_the_names_code_refers_to_are_registered_plugins():
    named = {v for k, v in vars(plugin_names).items() if k.isupper() and isinstance(v, str)}
    assert named <= plugins.KNOWN


def test_every_plugin_has_an_args_type():
    assert set(plugin_args.KINDS) == plugins.KNOWN
    for name, spec in plugins.SPECS.items():
        assert plugin_args.KINDS[name] is spec.args_kind


def test_each_adapter_is_its_plugins_class_and_implements_its_points():
    for name, cls in REGISTRY.items():
        assert issubclass(cls, plugins.SPECS[name]) and cls.name == name
        assert cls.points() == plugins.POINTS[name]
        check_implements(cls, cls.points())  # as when the class was defined


def test_the_points_are_kubes_in_a_pods_order():
    for name, points in plugins.POINTS.items():
        assert points and list(points) == [p for p in EXTENSION_POINTS if p in points], name


def test_an_adapter_missing_a_declared_point_cannot_be_defined():
    class Spec(plugins.PluginSpec, PreFilterPlugin, FilterPlugin, ScorePlugin):
        name = "Example"

    with pytest.raises(TypeError, match="score"):
        class Missing(Plugin, Spec):  # noqa: F841 (no score)
            def filter(self, state, pod, info):
                return None

    class Complete(Plugin, Spec):
        def filter(self, state, pod, info):
            return None

        def score_vec(self, state, pod, table, rows):
            return None

    assert implements(Complete, "filter") and not implements(Complete, "score")
    assert Complete.points() == ("preFilter", "filter", "score")


def test_a_method_no_declared_point_runs_cannot_be_defined():
    class Spec(plugins.PluginSpec, FilterPlugin):
        name = "Example"

    with pytest.raises(TypeError, match="permit"):
        class Stray(Plugin, Spec):  # noqa: F841
            def filter(self, state, pod, info):
                return None

            def permit(self, state, pod, node_name):
                return None


def test_an_out_of_tree_plugin_runs_where_its_methods_do():
    class Gate(Plugin):
        name = "Gate"

        def filter(self, state, pod, info):
            return None

    from shard.profile import registry_points
    assert Gate.points() == () and registry_points({"Gate": Gate}) == {"Gate": ("filter",)}


def test_a_pre_point_runs_with_its_main_one():
    assert set(METHOD_POINTS["pre_filter"]) == {"preFilter", "filter"}
    assert set(METHOD_POINTS["pre_score"]) == {"preScore", "score"}
    assert METHOD_POINTS["normalize"] == ("score",)


def test_every_binder_check_has_its_place_in_the_binders_order():
    """A plugin's binder check (its module's) runs among the binder's checks exactly once."""
    ordered = checks.NODE_CHECKS + checks.VOLUME_CHECKS + checks.DEVICE_CHECKS + checks.CROSS_NODE_CHECKS
    for name, spec in plugins.SPECS.items():
        if spec.binder_check is not None:
            assert ordered.count(spec.binder_check) == 1, name


def test_a_bad_registration_is_refused():
    class Pointless(plugins.PluginSpec):
        name = "Pointless"

    with pytest.raises(TypeError, match="extends no extension point"):
        plugins._register([Pointless])
    with pytest.raises(TypeError, match="name of its own"):
        plugins._register([plugins.SPECS["NodePorts"], plugins.SPECS["NodePorts"]])
