"""The TF synthetic benchmark with the collectives replaced: PROBE=noop returns the inputs, PROBE=copy copies
them into pooled outputs. Run from the repository root: PROBE=noop lightccrun -np 2 python noop_collectives.py"""
import sys, runpy, os
mode = os.environ.get("PROBE", "noop")
sys.argv = ["x", "--model", "mlp25m", "--batch-size", "32", "--threads-per-rank", "1", "--num-warmup-batches", "2",
            "--num-iters", "6", "--num-batches-per-iter", "10", "--contenders", "bound,lightcc", "--no-cuda"]
from lightcc.tensorflow import _host, _pool
import numpy as np
store = {}
def submit(arrays, *a):
    h = len(store) + 1
    if mode == "noop":
        store[h] = list(arrays)
    else:  # copy into a pooled aligned buffer, as the engine's output would be
        outs = [_pool.aligned_empty(x.shape, x.dtype) for x in arrays]
        for o, x in zip(outs, arrays): o[...] = x
        store[h] = outs
    return h
def wait(h):
    return store.pop(int(h))
_host.submit_allreduce, _host.wait = submit, wait
runpy.run_path("examples/tensorflow2/tensorflow2_synthetic_benchmark.py", run_name="__main__")
