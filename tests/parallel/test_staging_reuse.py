"""One-step shared-memory allreduces leave without a closing barrier: reuse must wait for readers."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [3, 4])
def test_overlapping_sets_back_to_back(size):
    env = {"HOROVOD_DYNAMIC_PROCESS_SETS": "1"}
    results = run_ranks("staging_worker.py", size, timeout=240, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr


def test_overlapping_sets_on_streams():
    # Each stream has its own staging and its own ledger.
    env = {"HOROVOD_DYNAMIC_PROCESS_SETS": "1", "LIGHT_NUM_STREAMS": "2"}
    results = run_ranks("staging_worker.py", 3, args=["150"], timeout=240, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout + res.stderr
