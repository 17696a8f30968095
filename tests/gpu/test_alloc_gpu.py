"""Device outputs from the framework's allocator on a GPU: torch's caching allocator, CuPy's pool, no cudaMalloc.

The worker (tests/parallel/workers/device_alloc_worker.py, which CI runs in the device executor's
host mode) repeats allgather/alltoall/reducescatter/allreduce/broadcast on CUDA tensors, checks
every value, and asserts that after warm-up the core allocated no device memory (stats'
device_allocs) while the front's allocator made every sized output. run.sh's torch and cupy
phases select these by name.
"""
from __future__ import annotations

import pytest

from tests.gpu.ranks_gpu import assert_all_passed, run_gpu_ranks
from tests.ranks import WORKERS


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("front", ["torch-cuda", "cupy"])
def test_outputs_from_framework_allocator(front, size):
    if front == "cupy":
        pytest.importorskip("cupy")
    results = run_gpu_ranks(str(WORKERS / "device_alloc_worker.py"), size, [front], timeout=180)
    assert_all_passed(results, f"{front} outputs at {size} ranks")
