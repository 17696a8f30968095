"""One top-k job on torch tensors, saving every output and residual, for the GPU-vs-host-executor comparison.

Usage: topk_gpu_executors_worker.py DTYPE OUT_PREFIX (float32|float16|bfloat16). Tensors live on
GPU_TEST_DEVICE (cuda: the device executor, CUDA kernels and NCCL; cpu: the host executor).
tests/gpu/test_topk_gpu.py runs it both ways and requires the files to match bit for bit.
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from gpu_helpers import setup_torch  # first of the workers' modules: it puts tests/parallel/workers on sys.path
from torch_helpers import checker

import lightcc as base
import lightcc.torch as hvd

SHAPES = [(97, 61), (300, 257)]
STEPS = 4


def grad(rank: int, step: int, shape, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + shape[0])
    return torch.randn(shape, generator=g).to(dtype)


def main() -> None:
    dtype = getattr(torch, sys.argv[1])
    prefix = sys.argv[2]
    device = setup_torch()
    hvd.init()
    r = hvd.rank()
    c = checker()
    saved = {}
    for step in range(STEPS):
        for i, shape in enumerate(SHAPES):
            op = hvd.Average if i == 0 else hvd.Sum
            out = hvd.allreduce(grad(r, step, shape, dtype).to(device), op=op, name=f"t{i}")
            c.check(out.device == device and out.dtype == dtype, f"step {step}: tensor {i} stays on {device}")
            saved[f"out{i}_{step}"] = out.cpu().contiguous().view(torch.uint8).numpy()
    for name, res in base.topk_state_dict().items():
        saved[f"res_{name}"] = np.asarray(res, np.float32).view(np.uint8)
    np.savez(f"{prefix}.{r}.npz", **saved)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
