"""The README documents every config field and the commands users copy from it."""
from __future__ import annotations

from pathlib import Path

from common import config

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_config_field_is_documented():
    missing = [path for path, _, _ in config.field_docs() if f"`{path}`" not in README]
    assert not missing


def test_benchmark_commands_are_listed():
    """Every runnable benchmark module, and the end-to-end `shardsched bench`."""
    for module in sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py")):
        if '__name__ == "__main__"' in module.read_text():
            assert f"python -m benchmarks.{module.stem}" in README, module.stem
    assert "shardsched bench" in README


def _section(title: str) -> str:
    start = README.index(f"### {title}\n")
    return README[start:README.index("\n## ", start) if "\n## " in README[start:] else None]


def test_the_kube_scheduler_configuration_section_is_true():
    """Every kube field and every plugin argument is documented, the example validates, and
    the error message quoted is the one validation prints."""
    import yaml

    from common.config import kube_config, plugin_args

    kube = _section("KubeSchedulerConfiguration")
    assert not [f for f in kube_config.FIELDS if f not in ("apiVersion", "kind") and f"`{f}`" not in kube]
    args = _section("Profiles and plugin arguments")
    for plugin, kind in plugin_args.KINDS.items():
        assert all(f"`{field}`" in args for field in kind.fields), plugin
    example = yaml.safe_load(kube.split("```yaml\n", 1)[1].split("```", 1)[0])
    cfg = config.validate(example)
    assert cfg.threshold.percentage == 50 and cfg.shards.count == 4
    quoted = args.split("validated with kube's rules and messages (`common/config/plugin_args.py`), e.g.\n`", 1)[1]
    quoted = " ".join(quoted.split("`", 1)[0].split())
    bad = {"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAlocated"}}}]}]}
    try:
        config.validate(bad)
    except config.ConfigError as e:
        assert str(e) == f"config: {quoted}"
    else:
        raise AssertionError("MostAlocated validated")
