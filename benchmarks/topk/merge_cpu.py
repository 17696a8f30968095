"""Top-k's CPU cost against the number of ranks: wall time of one big top-k (or dense) allreduce.

Run: ``lightccrun -np P python benchmarks/topk/merge_cpu.py`` (``--dense`` for the dense baseline,
``--elements N`` for another size). Every rank allreduces one float32 tensor of N elements
(default 50 M) in place, once to warm up and then ``--iters`` timed calls; rank 0 prints P and the
seconds of each call. With top-k (1 %, from the first step, 1-D tensors allowed) each doubling of P
adds one merge round; wall time x cores / P is the CPU per rank, which should not grow with P.
(lightcc-bench cannot time this: it verifies every result exactly, which top-k's is not.)
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

# Top-k from the first step on every tensor over 1 MiB, 1 % density; read by the core at init.
TOPK = {"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_THRESHOLD": "1048576", "LIGHT_TOPK_DENSITY": "0.01",
        "LIGHT_TOPK_WARMUP_STEPS": "0", "LIGHT_TOPK_MIN_DIMS": "1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=50_000_000)
    parser.add_argument("--iters", type=int, default=3, help="timed calls after one warm-up call")
    parser.add_argument("--dense", action="store_true", help="plain allreduce (no top-k)")
    args = parser.parse_args()
    os.environ.update({"LIGHT_TOPK_ALLREDUCE": "0"} if args.dense else TOPK)
    import lightcc as hvd  # after the environment: the core reads its flags at init

    hvd.init()
    x = np.random.default_rng(hvd.rank()).standard_normal(args.elements).astype(np.float32)
    hvd.allreduce_(x.copy(), name="g")
    times = []
    for _ in range(args.iters):
        y = x.copy()
        start = time.perf_counter()
        hvd.allreduce_(y, name="g")
        times.append(time.perf_counter() - start)
    if hvd.rank() == 0:
        print(f"{hvd.size()} ranks, {'dense' if args.dense else 'top-k 1 %'}: "
              f"{', '.join(f'{t:.3f}' for t in times)} s", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
