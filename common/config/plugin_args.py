"""Plugin arguments (a profile's `pluginConfig[].args`): their types, defaults and
validation, apart from the plugins themselves, as kube keeps its args types and their
validation in apis/config: the command line and every role check a configuration through
this module, and the shard's plugins read their arguments through it (`resolve`).

Each plugin has one `ArgsKind` (common/plugins/args.py), kept in the plugin's module
(common/plugins/<plugin>.py) and found here through the registry (`KINDS`): its fields (types
and kube's defaults), kube's validation rules (kube-scheduler v1.37's messages and field
paths), and what shardsched refuses on top. Adding a plugin's arguments is its `args_kind`.

Arguments may carry kube's `apiVersion: kubescheduler.config.k8s.io/v1` and
`kind: <Plugin>Args` (as `kube-scheduler --write-config-to` writes them); resolved arguments
are plain mappings without them, every field present.
"""
from __future__ import annotations

from . import plugin_names as names
from ..plugins import SPECS, ArgsKind
from ..validation import decode_object, duplicate, invalid, not_supported, raise_all, collecting

ARGS_API_VERSION = "kubescheduler.config.k8s.io/v1"


#: plugin name -> its arguments' kind (each plugin's module in common/plugins/ has its own;
#: plugins without arguments take none, an empty mapping).
KINDS: dict[str, ArgsKind] = {name: spec.args_kind for name, spec in SPECS.items()}


def resolve(plugin: str, raw, path: str = "args", base: dict | None = None) -> dict:
    """The plugin's full arguments: `raw` (a pluginConfig entry's args) over `base` (defaults
    from shardsched's own sections) over kube's defaults, checked; raises FieldError naming
    `path` and the field. Resolving resolved arguments gives them back unchanged."""
    kind = KINDS.get(plugin)
    if kind is None:
        raise invalid(path, plugin, f"shardsched has no plugin {plugin} to take these args")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid(path, raw, f"must be a mapping ({plugin}Args)")
    raw = dict(raw)
    _check_type_meta(raw, plugin, path)
    merged = {**(base or {}), **raw}
    args = decode_object(kind.fields, merged, path)
    kind.defaulting(args)
    raise_all(kind.rules(args, path))
    return args


def _check_type_meta(raw: dict, plugin: str, path: str) -> None:
    """Drop kube's apiVersion and kind from `raw` after checking them."""
    version = raw.pop("apiVersion", None)
    kind = raw.pop("kind", None)
    if version is not None and version != ARGS_API_VERSION:
        raise not_supported(f"{path}.apiVersion", version, (ARGS_API_VERSION,))
    if kind is not None and kind != f"{plugin}Args":
        raise invalid(f"{path}.kind", kind, f"must be {plugin}Args, the args of plugin {plugin}")


def section_defaults(cfg) -> dict:
    """Arguments shardsched takes from its own sections (of a common.config.Config) where a
    profile gives none."""
    p = cfg.preemption
    return {names.DEFAULT_PREEMPTION: {"minCandidateNodesPercentage": p.min_candidate_nodes_percentage,
                                       "minCandidateNodesAbsolute": p.min_candidate_nodes_absolute}}


def profile_args(cfg, index: int) -> dict[str, dict]:
    """Every plugin's resolved arguments in profile `index` of a config (pluginConfig over
    the sections' defaults): what the shard builds the profile's plugins with, and what
    config validation checks. Raises FieldError(s) with the pluginConfig entries' paths,
    every bad entry's."""
    errors: list = []
    given: dict[str, tuple] = {}
    for j, entry in enumerate(cfg.profiles[index].plugin_config):
        path = f"profiles[{index}].pluginConfig[{j}]"
        name = entry.name
        if name in given:
            errors.append(duplicate(path, name))
        elif name not in KINDS:
            errors.append(not_supported(f"{path}.name", name, sorted(KINDS)))
        else:
            given[name] = (entry.args, f"{path}.args")
    base = section_defaults(cfg)
    out = {name: collecting(errors, resolve, name, *given.get(name, ({}, f"profiles[{index}].pluginConfig")),
                            base.get(name)) for name in KINDS}
    raise_all(errors)
    ignored = [r.name for e in cfg.extenders for r in e.managed_resources if r.ignored_by_scheduler]
    if ignored and out.get(names.NODE_RESOURCES_FIT) is not None:
        # kube-scheduler: the extenders' resources ignoredByScheduler replace NodeResourcesFit's
        # ignoredResources in every profile (the extenders take precedence over pluginConfig)
        out[names.NODE_RESOURCES_FIT] = {**out[names.NODE_RESOURCES_FIT], "ignoredResources": ignored}
    return out
