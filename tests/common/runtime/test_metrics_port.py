"""One meaning of a metrics port of 0, on the command line and in the config: any free port
(as for the gRPC ports). Metrics are switched off by `null` in the config or `--metrics-port
off`. The config's 0 used to mean off while `--metrics-port 0` meant any free port."""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import yaml

SERVING = re.compile(r"binder 0 serving gRPC on \S+?(, metrics on (\S+))?$", re.M)


def serving_line(tmp_path, binders: dict, *argv) -> str:
    """What `python -m binder` on a memory store logs when it starts serving: its metrics
    address, or "" without metrics."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"binders": {"basePort": 0, **binders}}))
    log = tmp_path / "binder.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "binder", "--config", str(path), "--store", "memory://",
                                 *argv], stderr=out, stdout=out)
    try:
        deadline = time.monotonic() + 60
        while not (found := SERVING.search(log.read_text())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        return found.group(2) or ""
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.parametrize("binders, argv, serves", [
    ({"metricsBasePort": 0}, (), True),                      # the config's 0: any free port
    ({"metricsBasePort": 9300}, ("--metrics-port", "0"), True),  # the flag's 0: the same
    ({"metricsBasePort": None}, (), False),                  # null: off
    ({"metricsBasePort": 0}, ("--metrics-port", "off"), False),
])
def test_metrics_port_zero_is_any_free_port_and_off_is_said_so(tmp_path, binders, argv, serves):
    address = serving_line(tmp_path, binders, *argv)
    if serves:
        assert re.fullmatch(r"127\.0\.0\.1:\d+", address) and not address.endswith(":0"), address
    else:
        assert address == ""
