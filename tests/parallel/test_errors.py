"""Bad input gets a clear error on every rank, and nothing hangs."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_errors_raised_on_every_rank(size):
    results = run_ranks("errors_worker.py", size, timeout=120)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_every_collective_mismatch_fails_everywhere(size):
    """Each collective x each disagreement (dtype, shape, op, scale, root, bad local argument) x dtypes."""
    results = run_ranks("mismatch_worker.py", size, timeout=240)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
