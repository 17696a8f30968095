"""Started by torchrun or srun (no lightcc launcher): checks the topology lightcc found and a few collectives.

Arguments: LOCAL_SIZE CROSS_SIZE, what the launch should give every rank.
"""
from __future__ import annotations

import os
import sys

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    local_size, cross_size = int(sys.argv[1]), int(sys.argv[2])
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    env_rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID"))
    env_local = os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID"))
    c.check(n == local_size * cross_size, f"size {n} == {local_size} x {cross_size}")
    c.check(env_rank is not None and int(env_rank) == r, f"rank {r} matches the launcher's {env_rank}")
    c.check(env_local is not None and int(env_local) == hvd.local_rank(), f"local rank {hvd.local_rank()} vs {env_local}")
    c.check(hvd.local_size() == local_size and hvd.cross_size() == cross_size,
            f"local/cross sizes {hvd.local_size()}/{hvd.cross_size()}")
    out = hvd.allreduce(np.arange(1000.0) * (r + 1), op=hvd.Sum, name="launched.sum")
    c.check(np.allclose(out, np.arange(1000.0) * n * (n + 1) / 2), "allreduce")
    got = hvd.allgather(np.full((r + 1, 2), r, dtype=np.int32), name="launched.gather")
    want = np.concatenate([np.full((k + 1, 2), k, dtype=np.int32) for k in range(n)])
    c.check(np.array_equal(got, want), "allgather")
    b = hvd.broadcast(np.arange(5) + r, n - 1, name="launched.bcast")
    c.check(np.array_equal(b, np.arange(5) + n - 1), "broadcast from the last rank")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
