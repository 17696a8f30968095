"""`python -m benchmarks.scale ARGS` = `lightcc-bench scale ARGS`, writing under benchmarks/scale/results by default."""
from __future__ import annotations

import sys
from pathlib import Path

from lightcc.bench.scale.cli import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--out" not in argv:
        argv += ["--out", str(Path(__file__).resolve().parent / "results")]
    sys.exit(main(argv))
