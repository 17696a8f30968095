"""Rank worker: one step = many async allreduces of equal float32 tensors, then synchronize all.

Run as `python -m benchmarks.streams.step --tensors N --mib M --steps S --warmup W` by the driver.
A step's time is the slowest rank's time from its first enqueue to its last synchronize (a
barrier before each step lines the ranks up). Rank 0 prints one `RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import lightcc as hvd
from lightcc.common.native import core


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tensors", type=int, required=True)
    p.add_argument("--mib", type=float, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    a = p.parse_args()
    hvd.init()
    n = int(a.mib * (1 << 20)) // 4
    grads = [np.full(n, hvd.rank() + 1.0, np.float32) for _ in range(a.tensors)]
    want = hvd.size() * (hvd.size() + 1) / 2
    times = []
    for s in range(a.warmup + a.steps):
        for g in grads:
            g.fill(hvd.rank() + 1.0)
        hvd.barrier()
        t0 = time.perf_counter()
        hs = [hvd.allreduce_async_(g, name=f"g{i}", op=hvd.Sum) for i, g in enumerate(grads)]
        for h in hs:
            hvd.synchronize(h)
        dt = time.perf_counter() - t0
        if not all(g[0] == want and g[-1] == want for g in grads):
            raise SystemExit(f"rank {hvd.rank()}: wrong allreduce result in step {s}")
        slowest = float(hvd.allreduce(np.array([dt]), op=hvd.Max, name="step.time")[0])
        if s >= a.warmup:
            times.append(slowest)
    stats = core().stats()
    if hvd.rank() == 0:
        print(
            "RESULT "
            + json.dumps(
                {"times": times, "fused_batches": stats["fused_batches"], "streams_busy_max": stats["streams_busy_max"]}
            ),
            flush=True,
        )
    hvd.shutdown()


if __name__ == "__main__":
    main()
