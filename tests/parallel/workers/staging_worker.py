"""Back-to-back small allreduces on overlapping process sets: staging reuse must wait for readers."""
from __future__ import annotations

import sys

import numpy as np

from common import Checker

import lightcc as hvd

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
SIZES = [1, 1000, 16384, 65536]  # float32 elements: 4 B .. 256 KiB, all on the one-step path


def value(rank: int, i: int, salt: int, n: int) -> np.ndarray:
    """Distinct per rank, iteration and set, exact in float32, so a stale staged byte shows."""
    return (np.arange(n, dtype=np.float32) % 97) + np.float32(1000 * rank + 10 * (i % 50) + salt)


def main() -> None:
    hvd.init()
    n, r = hvd.size(), hvd.rank()
    left = hvd.ProcessSet([0, 1])
    right = hvd.ProcessSet(list(range(1, n)))
    hvd.add_process_set(left)
    hvd.add_process_set(right)
    c = Checker(r)
    big = 1 << 19  # 2 MiB of float32: the windowed path, which writes staging straight away
    for i in range(ITERS):
        k = SIZES[i % len(SIZES)]
        jobs = []
        # Rank 1 is in both sets: it runs one set's op, then the other's right after, while the
        # first set's peers may still be reading its staging.
        if r in left.ranks:
            jobs.append((hvd.allreduce_async_(value(r, i, 1, k), op=hvd.Sum, name=f"l{k}", process_set=left),
                         sum(value(q, i, 1, k) for q in left.ranks), "left"))
        if r in right.ranks:
            jobs.append((hvd.allreduce_async_(value(r, i, 2, k), op=hvd.Sum, name=f"r{k}", process_set=right),
                         sum(value(q, i, 2, k) for q in right.ranks), "right"))
        if i % 10 == 0:
            jobs.append((hvd.allreduce_async_(value(r, i, 3, big), op=hvd.Sum, name="big"),
                         sum(value(q, i, 3, big) for q in range(n)), "big"))
        if i % 7 == 0:
            jobs.append((hvd.broadcast_async_(value(r, i, 4, k), 1, name=f"b{k}"), value(1, i, 4, k), "bcast"))
        for h, want, what in jobs:
            got = hvd.synchronize(h)
            c.check(np.array_equal(got, want), f"iteration {i} {what} ({k} elements)")
    total = hvd.allreduce(np.ones(1, np.float32), op=hvd.Sum, name="end")
    c.check(total[0] == n, "final allreduce")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
