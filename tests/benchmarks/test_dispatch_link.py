"""benchmarks/dispatch_link.py: a Dispatch stream's sender, paced against not. Behaviour only
(every pod arrives, the figures are reported), never times."""
from __future__ import annotations

from benchmarks import dispatch_link


def test_every_pod_reaches_the_shard_in_both_variants():
    out = dispatch_link.run(pods=300, rate=1000.0, step_ms=5.0, repeats=1)
    every, paced = out["results"]["every_step"], out["results"]["paced"]
    # (run() asserts the stand-in shard received every pod of every variant)
    # a step's pods a message, or more when paced (as many when each step took 20 ms: a busy machine)
    assert every["pods_per_message"] == 5.0 <= paced["pods_per_message"]
    assert every["us_per_pod"] > 0 and paced["us_per_pod"] > 0
