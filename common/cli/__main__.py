"""`python -m common.cli ...` is `shardsched ...`."""
import sys

from . import main

sys.exit(main())
