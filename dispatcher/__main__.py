"""`python -m dispatcher --config FILE --id N`: one dispatcher process, until SIGTERM or SIGINT."""
import sys

from common.runtime.runner import main

from .server import build

sys.exit(main("dispatcher", build))
