"""The 2D allreduce as init chose it: what was chosen and why, which sizes took it, and the result bits."""
from __future__ import annotations

import hashlib
import json

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc.common.native import core

# 1 KiB stays below any crossover the model gives at 1 Gbit/s; 1 MiB is past it.
SMALL, LARGE = 256, 1 << 18


def two_d_batches() -> int:
    # A barrier drains the executors, so every batch before it has been counted.
    hvd.barrier()
    return int(core().stats()["two_d_batches"])


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    info = dict(core().two_d_info())
    print("TWO_D_INFO " + json.dumps(info), flush=True)
    rows = {}
    for count in (SMALL, LARGE):
        before = two_d_batches()
        x = np.random.default_rng(1000 * r + count).standard_normal(count).astype(np.float32)
        got = hvd.allreduce(x, op=hvd.Sum, name=f"two_d.float.{count}")
        # Integer values: every schedule sums them exactly.
        ints = [np.random.default_rng(7919 * k + count).integers(-50, 50, count).astype(np.float32) for k in range(n)]
        exact = hvd.allreduce(ints[r], op=hvd.Sum, name=f"two_d.int.{count}")
        c.check(np.array_equal(exact, np.sum(ints, axis=0)), f"exact sum x{count}: {exact[:3]}")
        rows[str(count)] = {"two_d_batches": two_d_batches() - before,
                            "digest": hashlib.sha256(got.tobytes()).hexdigest()}
    print("TWO_D_ROWS " + json.dumps(rows), flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
