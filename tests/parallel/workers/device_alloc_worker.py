"""Device-executor outputs come from the front's framework: repeated collectives, no core allocation after warm-up.

Run under LIGHTCC_DEVICE_EXECUTOR=host with the NumPy or torch front (argv[1]), or on a GPU with
torch CUDA tensors or CuPy arrays (tests/gpu/test_alloc_gpu.py). Every step runs
allgather (first dims differ per rank), alltoall (uneven splits), reducescatter (rows that do not
divide evenly), allreduce (one tensor, and a fused group) and broadcast, checks every result
against a NumPy model, and after the first step (which grows the executor's kept scratch)
asserts that the core allocated nothing more (stats' device_allocs) while the front's allocator
made every sized output (device_front_outputs). Two async ops are also synchronized in the
reverse of their submission order, so the engine calls the allocator of one while this thread
waits on the other.
"""
from __future__ import annotations

import sys

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc.common.native import core

FRONT = sys.argv[1]
STEPS = 5
SIZED_PER_STEP = 5  # outputs the front allocates per step: allgather, alltoall, reducescatter, 2 async


def front():
    """(front module, NumPy -> its tensors, its tensors -> NumPy, its tensor type) for argv[1]."""
    if FRONT in ("torch", "torch-cuda"):
        import torch

        import lightcc.torch as t

        if FRONT == "torch-cuda":  # tests/gpu/test_alloc_gpu.py: outputs from torch's caching allocator
            return t, (lambda a: torch.from_numpy(a).cuda()), (lambda x: x.cpu().numpy()), torch.Tensor
        return t, torch.from_numpy, lambda x: x.numpy(), torch.Tensor
    import lightcc.numpy as n

    if FRONT == "cupy":  # tests/gpu/test_alloc_gpu.py: outputs from CuPy's memory pool
        import cupy

        return n, cupy.asarray, cupy.asnumpy, cupy.ndarray
    return n, (lambda a: a), (lambda x: x), np.ndarray


def rows_of(n: int, p: int):
    q, r = divmod(n, p)
    return [q + (1 if j < r else 0) for j in range(p)]


def step(h, to, back, kind, c: Checker, s: int) -> None:
    r, p = hvd.rank(), hvd.size()

    def val(rank: int, n: int, w: int) -> np.ndarray:
        return np.arange(n * w, dtype=np.float32).reshape(n, w) + 1000 * rank + 10 * s

    out = h.allgather(to(val(r, r + 1, 3)), name="ag")
    want = np.concatenate([val(j, j + 1, 3) for j in range(p)])
    c.check(isinstance(out, kind) and np.array_equal(back(out), want), f"step {s}: allgather")

    splits = [(r + j) % 2 + 1 for j in range(p)]  # rank r sends this many rows to rank j
    got, recv = h.alltoall(to(val(r, sum(splits), 2)), splits=splits, name="a2a")
    parts, expect_recv = [], []
    for j in range(p):
        theirs = [(j + k) % 2 + 1 for k in range(p)]
        start = sum(theirs[:r])
        parts.append(val(j, sum(theirs), 2)[start:start + theirs[r]])
        expect_recv.append(theirs[r])
    c.check(isinstance(got, kind) and np.array_equal(back(got), np.concatenate(parts)), f"step {s}: alltoall data")
    c.check([int(x) for x in back(recv)] == expect_recv, f"step {s}: alltoall splits")

    n = 2 * p + 1
    out = h.reducescatter(to(val(r, n, 4)), op=hvd.Sum, name="rs")
    total = sum(val(j, n, 4) for j in range(p))
    rows = rows_of(n, p)
    mine = total[sum(rows[:r]):sum(rows[:r]) + rows[r]]
    c.check(isinstance(out, kind) and np.array_equal(back(out), mine), f"step {s}: reducescatter")

    out = h.allreduce(to(val(r, 3, 5)), op=hvd.Sum, name="ar")
    c.check(np.array_equal(back(out), sum(val(j, 3, 5) for j in range(p))), f"step {s}: allreduce")
    outs = h.grouped_allreduce([to(val(r, 2, 2)), to(val(r, 4, 1))], op=hvd.Sum, name="gar")
    c.check(np.array_equal(back(outs[0]), sum(val(j, 2, 2) for j in range(p)))
            and np.array_equal(back(outs[1]), sum(val(j, 4, 1) for j in range(p))), f"step {s}: grouped allreduce")
    out = h.broadcast(to(val(r, 2, 3)), root_rank=p - 1, name="bc")
    c.check(np.array_equal(back(out), val(p - 1, 2, 3)), f"step {s}: broadcast")

    # The engine allocates the second op's output (on its own thread, with the GIL) while this
    # thread waits on the first, and the other way round.
    h1 = h.allgather_async(to(val(r, 2, 2)), name="ag.async")
    h2 = h.reducescatter_async(to(val(r, p, 3)), op=hvd.Sum, name="rs.async")
    rs = h.synchronize(h2)
    ag = h.synchronize(h1)
    c.check(np.array_equal(back(rs), sum(val(j, p, 3) for j in range(p))[r:r + 1]), f"step {s}: async reducescatter")
    c.check(np.array_equal(back(ag), np.concatenate([val(j, 2, 2) for j in range(p)])), f"step {s}: async allgather")


def main() -> None:
    h, to, back, kind = front()
    h.init()
    c = Checker(hvd.rank())
    step(h, to, back, kind, c, 0)  # warm-up: the executor's kept scratch grows here
    before = core().stats()
    for s in range(1, STEPS):
        step(h, to, back, kind, c, s)
    after = core().stats()
    allocs = after["device_allocs"] - before["device_allocs"]
    made = after["device_front_outputs"] - before["device_front_outputs"]
    c.check(after["device_batches"] > before["device_batches"], "the device executor ran the collectives")
    grown = after["device_alloc_bytes"] - before["device_alloc_bytes"]
    c.check(allocs == 0, f"the core allocated {allocs} device buffers ({grown} bytes) in {STEPS - 1} steps after "
                         f"warm-up; want 0")
    c.check(made == SIZED_PER_STEP * (STEPS - 1),
            f"the front's allocator made {made} outputs; want {SIZED_PER_STEP * (STEPS - 1)}")
    print(f"rank {hvd.rank()}: device_allocs {after['device_allocs']} (warm-up), front outputs {made}", flush=True)
    h.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
