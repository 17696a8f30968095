"""Live commits across ranks: the state comes back from a rank that still holds its commit."""
from __future__ import annotations

import re

from tests.ranks import run_ranks


def test_a_rank_past_its_live_commit_takes_the_commit_from_another():
    results = run_ranks("live_commit_worker.py", 2, timeout=120)
    lines = {}
    for r in results:
        m = re.search(r"LIVE rank=(\d) digest=(\w+) committed=(\w+) step=(\d+)", r.stdout)
        assert m, r.stdout + r.stderr
        lines[int(m.group(1))] = m.groups()[1:]
    # Both committed the same state; rank 0 stepped past it; after sync both hold it again (rank 1's).
    assert lines[0][1] == lines[1][1] and lines[0][0] == lines[1][0] == lines[1][1], lines
    assert lines[0][2] == lines[1][2] == "4", lines
