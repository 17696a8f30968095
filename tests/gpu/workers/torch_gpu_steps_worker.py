"""Training-shaped steps of async allreduces on CUDA tensors under one engine setting (streams, fusion, autotune).

Each step submits 24 gradients in backward order (float32 and float16, 1 to 300,000 elements), then
synchronizes them and compares each with the exact sum computed on the host; the digests of every
step must agree across ranks. Integer-valued data keeps every sum exact in either dtype. At the end
the rank prints its autotune state (`STATE {...}`) and the Checker's tally.
Argument: STEPS.
"""
from __future__ import annotations

import hashlib
import json
import sys

import lightcc._core as core
import torch
from gpu_helpers import setup_torch  # first of the workers' modules: it puts tests/parallel/workers on sys.path
from torch_helpers import checker

import lightcc.torch as hvd

COUNTS = [1, 17, 1000, 4097, 30000, 65536, 150001, 300000]


def value(rank: int, step: int, k: int, n: int, dtype: torch.dtype) -> torch.Tensor:
    """Small integers, different per rank, step and tensor: every partial sum is exact in float16."""
    base = torch.arange(n, dtype=torch.int64) % 7
    return ((base + rank + step + k) % 5).to(dtype)


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    dev = setup_torch()
    hvd.init()
    r, p = hvd.rank(), hvd.size()
    check = checker()
    grads = [(f"grad{k:02d}", COUNTS[(5 * k) % len(COUNTS)], torch.float16 if k % 4 == 3 else torch.float32)
             for k in range(24)]
    for step in range(steps):
        handles = {}
        for k, (name, n, dt) in reversed(list(enumerate(grads))):
            handles[name] = hvd.allreduce_async(value(r, step, k, n, dt).to(dev), op=hvd.Sum, name=name)
        digest = hashlib.sha256()
        for k, (name, n, dt) in enumerate(grads):
            out = hvd.synchronize(handles[name])
            want = sum(value(q, step, k, n, torch.float64) for q in range(p)).to(dt)
            got = out.cpu()
            check.check(out.device == dev and got.dtype == dt and torch.equal(got, want),
                        f"step {step} {name}: {got[:4].tolist()} want {want[:4].tolist()}")
            digest.update(got.numpy().tobytes())
        same = len(set(hvd.allgather_object(digest.hexdigest()))) == 1
        check.check(same, f"step {step}: results differ across ranks")
    state = core.autotune_state()
    check.check(len(set(hvd.allgather_object(json.dumps(state)))) == 1, "autotune states differ across ranks")
    print("STATE " + json.dumps(state), flush=True)
    hvd.shutdown()
    check.finish()


if __name__ == "__main__":
    main()
