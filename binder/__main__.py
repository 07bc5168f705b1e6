"""`python -m binder --config FILE --id N`: one binder process, until SIGTERM or SIGINT."""
import sys

from common.runtime.runner import main

from .server import build

sys.exit(main("binder", build))
