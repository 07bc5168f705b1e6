"""The typed configuration (common/config/__init__.py): frozen dataclasses built from the one schema,
snake_case attributes, misspellings refused, and the document given back unchanged."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from common import config


def _schema_mappings(schema=config.SCHEMA):
    """Every mapping of the schema (the sections, a profile and its entries)."""
    yield schema
    for sub in schema.values():
        if isinstance(sub, config.ListOf):
            yield from _schema_mappings(sub.item)
        elif isinstance(sub, dict):
            yield from _schema_mappings(sub)


def _attribute_path(obj, dotted: str):
    for key in dotted.split("."):
        obj = getattr(obj, config.attribute_name(key))
    return obj


def test_a_misspelled_attribute_fails_and_nothing_can_be_changed_in_place():
    cfg = config.defaults()
    with pytest.raises(AttributeError):
        cfg.shards.cuont  # noqa: B018
    with pytest.raises(AttributeError):
        cfg.leaderElection  # noqa: B018 (the file's name, not the attribute)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.shards.count = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.profiles[0].scheduler_name = "other"
    with pytest.raises(TypeError):
        cfg["shards"]  # noqa: B018 (no dict lookups)
    with pytest.raises(AttributeError, match="ShardsConfig has no attribute 'cuont'"):
        cfg.replace(shards={"cuont": 3})
    assert isinstance(cfg.profiles, tuple) and isinstance(cfg.profiles[0].plugins.enabled, tuple)


def test_every_schema_mapping_has_its_class_with_exactly_its_fields():
    for schema in _schema_mappings():
        cls = config._CLASS_OF[id(schema)]
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        assert [f.name for f in dataclasses.fields(cls)] == [config.attribute_name(k) for k in schema]
    assert config.attribute_name("percentageOfNodesToScore") == "percentage_of_nodes_to_score"
    assert config.attribute_name("qps") == "qps"


def test_the_typed_defaults_are_the_schemas_defaults_and_round_trip():
    cfg = config.defaults()
    for path, default, _doc in config.field_docs():
        if "[]" in path:
            continue  # a profile's fields: below
        value = _attribute_path(cfg, path)
        if path == "profiles":
            assert value == tuple(config.Profile.of(d) for d in default)
        elif path == "extenders":
            assert value == tuple(config.ExtenderConfig.of(d) for d in default)
        else:
            assert value == default, path
    for path, default, _doc in config.field_docs(config.PROFILE):
        if "[]" not in path:
            value = _attribute_path(config.Profile.of({}), path)
            assert value == (tuple(default) if isinstance(default, list) else default), path
    assert cfg.to_dict() == config._defaults(config.SCHEMA)
    assert config.validate({}) == cfg
    assert config.validate(cfg.to_dict()) == cfg
    assert yaml.safe_load(config.dump(cfg)) == cfg.to_dict()


def test_a_full_configuration_round_trips_through_its_document():
    doc = {"shards": {"count": 3, "optimizations": {"unitLocating": False}},
           "threshold": {"mode": "percentage", "percentage": 30},
           "profiles": [{"schedulerName": "a", "percentageOfNodesToScore": 20,
                         "plugins": {"disabled": [{"name": "ImageLocality", "extensionPoints": ["score"]}],
                                     "enabled": [{"name": "NodeResourcesFit", "weight": 3}]},
                         "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 30}}]}]}
    cfg = config.validate(doc)
    assert cfg.shards.count == 3 and cfg.shards.optimizations.unit_locating is False
    assert cfg.profiles[0].plugins.disabled[0].extension_points == ("score",)
    assert cfg.profiles[0].plugin_config[0].args == {"bindTimeoutSeconds": 30}
    again = config.validate(yaml.safe_load(config.dump(cfg)))
    assert again == cfg and again.to_dict() == cfg.to_dict()
    raw = cfg.to_dict()
    raw["profiles"][0]["pluginConfig"][0]["args"]["bindTimeoutSeconds"] = 1
    assert cfg.profiles[0].plugin_config[0].args == {"bindTimeoutSeconds": 30}, "to_dict() is a copy"


def test_replace_overrides_nested_fields_and_keeps_the_rest():
    cfg = config.defaults()
    changed = cfg.replace(shards={"count": 5, "optimizations": {"vectorised_filters": False}},
                          dispatcher={"port": 0})
    assert (changed.shards.count, changed.dispatcher.port) == (5, 0)
    assert changed.shards.optimizations.vectorised_filters is False
    assert changed.shards.optimizations.unit_locating is True and changed.shards.host == cfg.shards.host
    assert cfg.shards.count == 2, "the original is unchanged"
    assert config.DisabledEntry.of({"name": "Coscheduling"}) == config.DisabledEntry("Coscheduling", ())
    with pytest.raises(config.ConfigError, match="weight: must be <= 100"):
        config.PluginEntry.of({"name": "x", "weight": 101}, "entry")


def test_values_a_file_shares_stay_shared_in_what_convert_prints():
    """A YAML alias (the same plugin args in two profiles) is printed as an alias again, as
    the document it was read into printed it before the configuration was typed."""
    args = {"bindTimeoutSeconds": 30}
    doc = {"profiles": [{"schedulerName": n, "pluginConfig": [{"name": "VolumeBinding", "args": args}]}
                        for n in ("a", "b")]}
    printed = config.dump(config.validate(doc))
    assert printed.count("&id001") == 1 and printed.count("*id001") == 1
    assert yaml.safe_load(printed)["profiles"][1]["pluginConfig"][0]["args"] == args


def test_every_section_class_says_where_its_fields_are_documented():
    """A section written without a docstring gets one naming SCHEMA (so dataclass() need not
    build one from the class's signature at every process's start); one written keeps its."""
    for cls in config._CLASS_OF.values():
        assert cls.__doc__, cls.__name__
        assert "SCHEMA" in cls.__doc__ or cls is config.Config, cls.__name__
    assert config.Config.__doc__ == "The whole configuration, as every process receives it."
    assert config.StoreConfig.__doc__.startswith("StoreConfig: typed configuration section")
    assert list(dataclasses.fields(config.StoreConfig))[0].name == "url"
