"""Eager TF tensors reach the device executor through DLPack and come back as TF-allocated tensors, no host trip.

Run under LIGHTCC_DEVICE_EXECUTOR=host: CPU tensors take the path GPU tensors take on a GPU
(lightcc/tensorflow/_device.py). Checks values for allreduce (one tensor, Average, a fused
group), allgather (first dims differ per rank), broadcast and reducescatter; that every tensor
went through DLPack and none through host NumPy arrays (the front's counters); and that after
warm-up the core allocated nothing while TF's allocator made every sized output.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import common  # noqa: E402,F401  (puts the repo on sys.path)
from common import Checker  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import lightcc.tensorflow as hvd  # noqa: E402
from lightcc.common.native import core  # noqa: E402
from lightcc.tensorflow import _device  # noqa: E402

STEPS = 4
TENSORS_PER_STEP = 7  # handed to the engine per step: allreduce 1 + 1 + 2, allgather, broadcast, reducescatter
SIZED_PER_STEP = 2    # outputs TF allocates when the core asks: allgather, reducescatter


def val(rank: int, n: int, w: int, s: int, dtype=np.float32) -> np.ndarray:
    return (np.arange(n * w).reshape(n, w) + 100 * rank + 7 * s).astype(dtype)


def step(c: Checker, s: int) -> None:
    r, p = hvd.rank(), hvd.size()
    out = hvd.allreduce(tf.constant(val(r, 3, 4, s)), op=hvd.Sum, name="ar")
    c.check(isinstance(out, tf.Tensor) and np.array_equal(out.numpy(), sum(val(j, 3, 4, s) for j in range(p))),
            f"step {s}: allreduce")
    out = hvd.allreduce(tf.constant(val(r, 2, 2, s, np.float64)), op=hvd.Average, name="avg")
    c.check(np.allclose(out.numpy(), sum(val(j, 2, 2, s, np.float64) for j in range(p)) / p), f"step {s}: average")
    outs = hvd.grouped_allreduce([tf.constant(val(r, 2, 3, s, np.int32)), tf.constant(val(r, 5, 1, s))],
                                 op=hvd.Sum, name="gar")
    c.check(np.array_equal(outs[0].numpy(), sum(val(j, 2, 3, s, np.int32) for j in range(p)))
            and np.array_equal(outs[1].numpy(), sum(val(j, 5, 1, s) for j in range(p))), f"step {s}: grouped allreduce")
    out = hvd.allgather(tf.constant(val(r, r + 1, 3, s)), name="ag")
    c.check(isinstance(out, tf.Tensor)
            and np.array_equal(out.numpy(), np.concatenate([val(j, j + 1, 3, s) for j in range(p)])),
            f"step {s}: allgather")
    out = hvd.broadcast(tf.constant(val(r, 2, 5, s, np.int64)), root_rank=p - 1, name="bc")
    c.check(np.array_equal(out.numpy(), val(p - 1, 2, 5, s, np.int64)), f"step {s}: broadcast")
    out = hvd.reducescatter(tf.constant(val(r, p, 2, s)), op=hvd.Sum, name="rs")
    c.check(np.array_equal(out.numpy(), sum(val(j, p, 2, s) for j in range(p))[r:r + 1]), f"step {s}: reducescatter")


def main() -> None:
    hvd.init()
    c = Checker(hvd.rank())
    first = _device.counters()
    step(c, 0)  # warm-up: the executor's kept scratch grows here
    before, stats = _device.counters(), core().stats()
    for s in range(1, STEPS):
        step(c, s)
    after, end = _device.counters(), core().stats()
    c.check(after["host_round_trips"] == first["host_round_trips"] == 0,
            f"{after['host_round_trips']} tensors went through host NumPy arrays; want 0")
    through = after["dlpack_tensors"] - before["dlpack_tensors"]
    c.check(through == TENSORS_PER_STEP * (STEPS - 1), f"{through} tensors went through DLPack; "
                                                       f"want {TENSORS_PER_STEP * (STEPS - 1)}")
    allocs = end["device_allocs"] - stats["device_allocs"]
    made = end["device_front_outputs"] - stats["device_front_outputs"]
    c.check(end["device_batches"] > stats["device_batches"], "the device executor ran the collectives")
    c.check(allocs == 0, f"the core allocated {allocs} device buffers after warm-up; want 0")
    c.check(made == SIZED_PER_STEP * (STEPS - 1), f"TF's allocator made {made} outputs; want "
                                                  f"{SIZED_PER_STEP * (STEPS - 1)}")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
