"""Fused top-k batches over steps whose tensors change size, and with a rank joined: exact sums.

Each rank's gradient is zero except a few entries, fewer over all ranks than the k each tensor
keeps, so the merged top-k carries every nonzero and the result is the exact sum. The batch's
staging buffers live between steps (executor_topk.cc): a step with smaller tensors, one with
larger ones, and one where the last rank has joined (its tensors are zeros, not what its staging
held the step before) must all come out exact.
"""
from __future__ import annotations

import common  # noqa: F401
import numpy as np
from common import Checker

import lightcc as hvd

NONZEROS = 5  # per rank and tensor; x ranks < k = 1 % of every count below


def grad(rank: int, step: int, name: str, count: int) -> np.ndarray:
    rng = np.random.default_rng([rank, step, count, len(name)])
    g = np.zeros(count, np.float32)
    g[rng.choice(count, NONZEROS, replace=False)] = rng.integers(1, 100, NONZEROS).astype(np.float32)
    return g


def run_step(c: Checker, step: int, counts: dict[str, int], members: list[int]) -> None:
    r = hvd.rank()
    handles = {name: hvd.allreduce_async(grad(r, step, name, cnt), op=hvd.Sum, name=name)
               for name, cnt in counts.items()}
    for name, h in handles.items():
        got = hvd.synchronize(h)
        want = sum(grad(q, step, name, counts[name]) for q in members)
        c.check(np.array_equal(got, want), f"step {step}: '{name}' is the exact sum of ranks {members}")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    everyone = list(range(n))
    large = {"a": 40_000, "b": 30_000, "c": 20_000}
    small = {"a": 10_000, "b": 12_000, "c": 8_000}
    larger = {"a": 60_000, "b": 50_000, "c": 30_000, "d": 25_000}
    run_step(c, 0, large, everyone)
    run_step(c, 1, small, everyone)
    run_step(c, 2, larger, everyone)
    if r != n - 1:  # the last rank joins at once: its tensors are zeros in step 3
        run_step(c, 3, larger, everyone[:-1])
    hvd.join()
    stats = dict(__import__("lightcc.common.native", fromlist=["core"]).core().stats())
    batches = stats.get("topk_batches", 0)
    # 14 tensors over the four steps: fewer batches means fused ones (the staging under test).
    c.check(0 < batches < 14, f"the steps went through fused top-k batches ({batches} for 14 tensors)")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
