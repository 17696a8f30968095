"""A 100 MB allreduce in place (torch-style) and into a pooled separate output (the TF front), 2 ranks:
    lightccrun -np 2 python inplace_vs_pooled.py"""
import time, numpy as np, lightcc.tensorflow as hvd
from lightcc.tensorflow import _host
from lightcc.common.ops import Average
hvd.init()
n = 25_000_000
x = np.ones(n, np.float32)
import lightcc.numpy as h
def run(kind, reps=15):
    ts = []
    for i in range(reps):
        h.allreduce_(np.zeros(1, np.float32), name=f"sync.{kind}.{i}")
        t = time.perf_counter()
        if kind == "inplace":
            h.synchronize(h.allreduce_async_(x, name=f"ip.{i}"))
        else:
            y = _host.allreduce([x], f"op.{i}", Average, 1.0, 1.0, 0)
            del y
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts)//2] * 1e3
for r in range(2):
    for k in ("inplace", "pooled"):
        v = run(k)
        if hvd.rank() == 0: print(k, round(v, 2), "ms")
