"""The shard process as the operating system sees it."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_shard_starts_no_thread_for_numpys_blas():
    """numpy's OpenBLAS starts a thread per core when it is imported (63 on a 64-core node,
    each with its buffers, and their start-up on the way to the first binding); the shard's
    arrays are integers and short vectors, which never use them. Importing the shard leaves
    the process with its own thread alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", "import shard.server, os; print(len(os.listdir('/proc/self/task')))"],
                         capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert out.stdout.strip() == "1"
