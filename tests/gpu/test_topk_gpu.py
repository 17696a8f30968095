"""Top-k on CUDA tensors (device executor: CUDA kernels, NCCL send/recv) against the host executor, bit for bit.

The same job runs on GPU tensors and on CPU tensors; gTop-k's merge, the selection, the error
feedback and DGC's momentum correction share their arithmetic (csrc/kernels/*_ops.h,
topk_train.h) between the CUDA kernels and the CPU ones, so outputs, residuals and velocities
must agree to the bit. Ranks share one GPU (tests/gpu/ranks_gpu.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.ranks_gpu import WORKERS, assert_all_passed, run_gpu_ranks
from tests.ranks import TOPK_BARE, run_ranks

WORKER = "topk_gpu_executors_worker.py"
TOPK = {**TOPK_BARE, "LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "4096", "LIGHT_TOPK_DENSITY": "0.02"}


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("dtype,extra", [("float32", {}), ("float16", {}), ("bfloat16", {}),
                                         ("float32", {"LIGHT_TOPK_MOMENTUM": "0.9"})])
def test_topk_gpu_matches_host_executor(size, dtype, extra, tmp_path):
    env = dict(TOPK, **extra)
    gpu = run_gpu_ranks(WORKER, size, [dtype, str(tmp_path / "gpu")], timeout=180, env=env)
    assert_all_passed(gpu, f"top-k on CUDA tensors, {dtype}, {size} ranks ({extra})")
    cpu = run_ranks(str(WORKERS / WORKER), size, [dtype, str(tmp_path / "cpu")], timeout=180,
                    env=dict(env, GPU_TEST_DEVICE="cpu"))
    assert all(" 0 failed" in res.stdout for res in cpu), [res.stdout + res.stderr[-2000:] for res in cpu]
    for r in range(size):
        want = dict(np.load(tmp_path / f"cpu.{r}.npz"))
        got = dict(np.load(tmp_path / f"gpu.{r}.npz"))
        assert sorted(got) == sorted(want), (sorted(got), sorted(want))
        differ = [k for k in want if not np.array_equal(want[k], got[k])]
        assert not differ, f"rank {r}: {differ} differ between the GPU and the host executor"
