"""Runs one top-k job and saves every output and residual, so the host and device executors can be compared.

Usage: topk_executors_worker.py DTYPE [fused] OUT_PREFIX (float32|float16|bfloat16). The test runs it twice,
with LIGHTCC_DEVICE_EXECUTOR=host (the device executor's schedules on host memory) and without
(the host executor), and requires the two runs' files to match bit for bit: both executors run
the same merge schedule and kernels. Gaussian gradients, so merged sums round (16-bit) and the
merges drop pairs that error feedback must return. `fused`: the tensors go as one group, so each
step is one fused batch of several segments (each with its own k, residual and velocity).
"""
from __future__ import annotations

import os
import sys

import common  # noqa: F401
import numpy as np
from common import Checker, np_dtype

import lightcc as hvd
from lightcc.common.native import core

SHAPES = [(97, 61), (4099,)]
FUSED_SHAPES = [(97, 61), (4099,), (33, 130), (5003,)]
STEPS = 4


def grad(rank: int, step: int, shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(1000 * step + 10 * rank + int(np.prod(shape)))
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def main() -> None:
    dtype = np_dtype(sys.argv[1])
    prefix = sys.argv[-1]
    fused = sys.argv[2:-1] == ["fused"]
    shapes = FUSED_SHAPES if fused else SHAPES
    hvd.init()
    r = hvd.rank()
    c = Checker(r)
    device = os.environ.get("LIGHTCC_DEVICE_EXECUTOR") == "host"
    before = dict(core().stats())
    saved = {}
    for step in range(STEPS):
        if fused:
            outs = hvd.grouped_allreduce([grad(r, step, shape, dtype) for shape in shapes], op=hvd.Average,
                                         name="g")
        else:
            outs = [hvd.allreduce(grad(r, step, shape, dtype), op=hvd.Average if i == 0 else hvd.Sum, name=f"t{i}")
                    for i, shape in enumerate(shapes)]
        for i, (shape, out) in enumerate(zip(shapes, outs)):
            c.check(out.dtype == dtype and out.shape == shape, f"step {step}: tensor {i} keeps dtype and shape")
            saved[f"out{i}_{step}"] = np.asarray(out).view(np.uint8)
    for name, res in hvd.topk_state_dict().items():
        saved[f"res_{name}"] = np.asarray(res, np.float32).view(np.uint8)
    after = dict(core().stats())
    ran = after["device_batches"] - before["device_batches"] if device else after["topk_batches"] - before["topk_batches"]
    dense_warmup = int(os.environ.get("LIGHT_TOPK_WARMUP_STEPS", "0")) if os.environ.get("LIGHT_TOPK_WARMUP") == "dense" else 0
    want = (STEPS - dense_warmup) * (1 if fused else len(shapes))
    c.check(ran >= want, f"{'device' if device else 'host'} executor ran {ran} top-k batches, expected {want}")
    if fused:  # one batch a step: the group went as one fused batch, on either executor
        c.check(ran <= STEPS, f"{'device' if device else 'host'} executor ran {ran} batches for {STEPS} groups")
    np.savez(f"{prefix}.{r}.npz", **saved)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
