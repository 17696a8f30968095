"""One rank of bytes_vs_p.py: allreduces one float32 tensor a few times and prints the bytes it sent."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import lightcc as hvd
from lightcc.common.native import core


def main() -> None:
    elements, steps = int(sys.argv[1]), int(sys.argv[2])
    hvd.init()
    r = hvd.rank()
    g = np.random.default_rng(r).standard_normal(elements).astype(np.float32)
    hvd.allreduce(g, op=hvd.Sum, name="w")  # first step: links warm, residual sized
    # The engine adds a batch's bytes to stats() just after completing its handles: a barrier
    # (run only once earlier batches are done) keeps the first step out of the count.
    hvd.barrier()
    before = dict(core().stats())
    t0 = time.perf_counter()
    for _ in range(steps):
        hvd.allreduce(g, op=hvd.Sum, name="w")
    seconds = (time.perf_counter() - t0) / steps
    hvd.barrier()
    after = dict(core().stats())
    keys = ("bytes_sent", "topk_bytes_sent", "topk_batches", "topk_dense_batches")
    delta = {k: after[k] - before[k] for k in keys}
    print("RESULT " + json.dumps({"rank": r, "steps": steps, "topk": os.environ.get("LIGHT_TOPK_ALLREDUCE") == "1",
                                  "seconds_per_step": seconds, **delta}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
