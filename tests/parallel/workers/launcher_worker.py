"""Started by mpirun or lightccrun: checks the detected topology and runs a few collectives."""
from __future__ import annotations

import os

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    env_rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("HOROVOD_RANK"))
    c.check(env_rank is not None and int(env_rank) == r, f"rank {r} matches the launcher's {env_rank}")
    c.check(hvd.local_size() == n and hvd.local_rank() == r, "one host: local == global")
    c.check(hvd.cross_size() == 1 and hvd.cross_rank() == 0, "one host: cross size 1")
    out = hvd.allreduce(np.arange(6.0) * (r + 1), op=hvd.Sum, name="launched")
    c.check(np.allclose(out, np.arange(6.0) * n * (n + 1) / 2), "allreduce under the launcher")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
