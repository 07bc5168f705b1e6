"""`make check-rules`: promtool parses the alerting rules and every query of the Grafana
dashboard (as recording rules). Not a test of the suite: promtool takes about 25 minutes to
build on two busy cores (`make promtool`), so the suite checks the names instead
(tests/test_monitoring.py) and this runs where promtool is at hand.

Usage: python tests/check_rules.py PROMTOOL"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # the packages first: tests/common mirrors common/ and must not shadow it
sys.path.append(str(ROOT / "tests"))
from test_monitoring import MONITORING, dashboard_exprs, rules  # noqa: E402


def main(promtool: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        doc = yaml.safe_load((MONITORING / "rules.yaml").read_text())
        plain = Path(tmp) / "rules.yaml"
        plain.write_text(yaml.safe_dump(doc["spec"]))  # a PrometheusRule's spec is a rule file
        queries = [re.sub(r"\$(shard|binder)\b", ".*", e).replace("$namespace", "shardsched")
                   for e in dashboard_exprs() if not e.startswith("label_values(")]
        board = Path(tmp) / "dashboard.yaml"
        board.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
            {"record": f"shardsched:dashboard_query_{i}", "expr": q} for i, q in enumerate(queries)]}]}))
        done = subprocess.run([promtool, "check", "rules", str(plain), str(board)], capture_output=True,
                              text=True, timeout=120)
    print(done.stdout + done.stderr, end="")
    ok = (done.returncode == 0 and f"SUCCESS: {len(rules())} rules found" in done.stdout
          and f"SUCCESS: {len(queries)} rules found" in done.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
