"""Where benchmark scripts write by default: `./lightcc-results/<suite>/...`, never into the source tree.

One rule for every script under benchmarks/: output goes where `--out` says, and without it under
`lightcc-results/<suite>/` relative to the working directory (ignored by git, see .gitignore).
Published raw data lives in main's history, out of the tree (benchmarks/archive.py, docs/results.md).
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path("lightcc-results")


def default_out(suite: str, *parts: str) -> Path:
    """``lightcc-results/SUITE/PARTS...``: the default output path of a benchmark in SUITE."""
    return ROOT.joinpath(suite, *parts)

# The archived raw data written out beside this checkout (`python -m benchmarks.archive checkout`,
# run from the checkout's root): what scripts that read published runs read by default.
RESULTS_CHECKOUT = Path(__file__).resolve().parents[1].parent / "lightcc-results"
