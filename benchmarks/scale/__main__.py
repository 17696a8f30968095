"""`python -m benchmarks.scale ARGS` = `lightcc-bench scale ARGS`, writing under lightcc-results/scale by default."""
from __future__ import annotations

import sys

from benchmarks.output import default_out
from lightcc.bench.scale.cli import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--out" not in argv:
        argv += ["--out", str(default_out("scale"))]
    sys.exit(main(argv))
