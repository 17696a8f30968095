"""Prints this rank's CPU affinity after init, so the test can check LIGHTCC_BIND=core."""
from __future__ import annotations

import os

import common  # noqa: F401  (puts the source tree on sys.path)

import lightcc as hvd

hvd.init()
cores = sorted(os.sched_getaffinity(0))
print(f"CORES {hvd.local_rank()} {','.join(map(str, cores))}", flush=True)
hvd.shutdown()
