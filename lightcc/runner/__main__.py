"""Runs lightccrun as ``python -m lightcc.runner``."""

import sys

from lightcc.runner.launch import main

sys.exit(main())
