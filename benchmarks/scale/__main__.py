"""`python -m benchmarks.scale ARGS`: the emulated-cluster sweep (cli.py); output under lightcc-results/scale."""
from __future__ import annotations

import sys

from benchmarks.scale.cli import main

if __name__ == "__main__":
    sys.exit(main())
