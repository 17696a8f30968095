import os, time, numpy as np
import lightcc as hvd
hvd.init()
n = int(os.environ.get("N", "50000000"))
x = np.random.default_rng(hvd.rank()).standard_normal(n).astype(np.float32).reshape(1000, -1)
for i in range(1):
    hvd.allreduce_(x.copy(), name="g")
ts = []
for i in range(3):
    y = x.copy()
    hvd.barrier() if hasattr(hvd, "barrier") else None
    t = time.perf_counter(); hvd.allreduce_(y, name="g"); ts.append(time.perf_counter() - t)
s = hvd.core_stats() if hasattr(hvd, "core_stats") else {}
if hvd.rank() == 0: print(hvd.size(), "ranks", [round(v, 3) for v in ts])
hvd.shutdown()
