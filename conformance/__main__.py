"""``python -m conformance`` is ``dmlconf``."""

import sys

from conformance.cli.main import entry

sys.exit(entry())
