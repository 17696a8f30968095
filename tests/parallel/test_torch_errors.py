"""lightcc.torch error cases: ValueError for caller mistakes, RuntimeError on every rank for disagreement."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_torch_errors(size):
    results = run_ranks("torch_errors_worker.py", size, timeout=180)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
