"""Regenerate the Python modules from shardsched.proto: `python -m proto.generate`.

The generated modules are committed, so running shardsched needs no protoc; grpcio-tools
(a dev dependency) is only needed here. `--check` regenerates into a temporary folder and
fails if the committed modules differ, which is what the staleness test runs.
"""
from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = "shardsched.proto"
OUTPUTS = ("shardsched_pb2.py", "shardsched_pb2_grpc.py")


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc

    code = protoc.main(["grpc_tools.protoc", f"-I{HERE}", f"--python_out={out_dir}",
                        f"--grpc_python_out={out_dir}", str(HERE / SOURCE)])
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")
    # grpc_tools writes an absolute import of the sibling module; make it package-relative.
    grpc_module = out_dir / OUTPUTS[1]
    text = grpc_module.read_text()
    grpc_module.write_text(text.replace("import shardsched_pb2 as", "from . import shardsched_pb2 as"))


def stale() -> list[str]:
    """Names of committed modules that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return [name for name in OUTPUTS
                if not (HERE / name).exists() or not filecmp.cmp(HERE / name, Path(tmp) / name, shallow=False)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="fail if the committed modules are stale")
    args = p.parse_args(argv)
    if args.check:
        names = stale()
        if names:
            print(f"stale: {', '.join(names)}; run python -m proto.generate", file=sys.stderr)
            return 1
        return 0
    generate(HERE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
