"""The synchronous in-place allreduce on one host at 2 ranks (a core each) and 3 (oversubscribed)."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3])
def test_sync_allreduce_in_place(size):
    # A small one-shot limit puts the switch between the one-shot and windowed algorithms, and
    # a small chunk several windows, within sizes the worker runs quickly.
    env = {"LIGHTCC_SHM_ONESHOT_BYTES": "4096", "LIGHTCC_SHM_CHUNK_BYTES": "8192"}
    for res in run_ranks("sync_allreduce_worker.py", size, timeout=240, env=env):
        assert " 0 failed" in res.stdout, res.stdout
