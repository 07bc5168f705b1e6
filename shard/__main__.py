"""`python -m shard --config FILE --id N`: one shard process, until SIGTERM or SIGINT."""
import sys

from common.runtime.runner import main

from .server import build

sys.exit(main("shard", build))
