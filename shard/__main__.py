"""`python -m shard --config FILE --id N`: one shard process, until SIGTERM or SIGINT."""
import sys

from common.runner import main

from .server import build

sys.exit(main("shard", build))
