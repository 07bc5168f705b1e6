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
