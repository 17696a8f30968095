"""lightcc.torch collectives: every form, dtype and op, gradients, process sets, helpers, join."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_torch_collectives(size):
    results = run_ranks("torch_collectives_worker.py", size, timeout=180)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
