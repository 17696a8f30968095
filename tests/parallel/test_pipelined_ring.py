"""The pipelined ring allreduce (algorithms/pipelined_ring.cc) at 2, 3 and 4 real ranks over links."""
from __future__ import annotations

import pytest

from tests.ranks import run_ranks


@pytest.mark.parametrize("size", [2, 3, 4])
def test_pipelined_ring_every_dtype_and_op(size):
    # LIGHTCC_FORCE_RING runs the link algorithms over shared-memory links; 16 KiB chunks cut the
    # worker's tensors into up to a hundred chunks per segment.
    env = {"LIGHTCC_FORCE_RING": "1", "LIGHTCC_SHM_CHUNK_BYTES": "16384"}
    results = run_ranks("ring_pipeline_worker.py", size, timeout=300, env=env)
    for res in results:
        assert " 0 failed" in res.stdout, res.stdout
