"""Every collective, dtype and op at 2, 3 and 4 real ranks, shared-memory and ring paths."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3, 4])
def test_collectives_shared_memory(size):
    results = run_ranks("collectives_worker.py", size, timeout=240)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout


@pytest.mark.parametrize("size", [2, 3])
def test_collectives_ring_over_links(size):
    # LIGHTCC_FORCE_RING drives the link algorithms (what runs between hosts) over shm links;
    # a small chunk makes the ring and broadcast pipelines take many steps.
    env = {"LIGHTCC_FORCE_RING": "1", "LIGHTCC_SHM_RING_BYTES": "65536", "LIGHTCC_SHM_CHUNK_BYTES": "65536"}
    results = run_ranks("collectives_worker.py", size, timeout=240, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout


def test_collectives_small_staging_windows():
    # Tiny staging forces every shared-memory algorithm through many windows and rounds.
    results = run_ranks("collectives_worker.py", 3, timeout=240, env={"LIGHTCC_SHM_CHUNK_BYTES": "4096"})
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
