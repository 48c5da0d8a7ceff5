"""``python -m benchmarks.suite``: run the peer suite."""

import sys

from benchmarks.suite.run import main

sys.exit(main())
