"""Entry point for ``python -m lightcc.bench``."""

import sys

from lightcc.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
