"""Top-k allreduce through the device executor's schedules (LIGHTCC_DEVICE_EXECUTOR=host), against a NumPy model.

The model replays the schedule exactly: flat — every rank adds its gradient to its residual,
sends its k largest entries and keeps the rest; 2D — each group of LIGHT_INTRA_SIZE ranks sums
densely, member j of each group sparsifies shard j of the group sum against its own residual
and the groups exchange those. Integer-valued gradients keep every sum exact, so the
comparison is exact too.
"""
from __future__ import annotations

import hashlib
import math
import os

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc.common.native import core

THRESHOLD = int(os.environ["LIGHT_TOPK_THRESHOLD"])
DENSITY = float(os.environ["LIGHT_TOPK_DENSITY"])
TWO_LEVEL = os.environ.get("LIGHT_2D_ALLREDUCE") == "1"


def grad(rank: int, step: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * step + rank)
    # Distinct magnitudes within a rank are not needed: ties go to the lowest index on both sides.
    return rng.integers(-1000, 1000, n).astype(np.float32)


def topk(v: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest |v|, ties to the lowest index (the kernels' rule)."""
    order = np.lexsort((np.arange(v.size), -np.abs(v)))
    return np.sort(order[:k])


def k_of(count: int) -> int:
    return max(1, math.ceil(count * DENSITY - 1e-9))


def model(p: int, g: int, n: int, steps: int) -> list:
    """Expected Sum results per step for p ranks in groups of g (g = 1: flat)."""
    groups = p // g
    padded = -(-n // g) * g
    shard = padded // g
    residual = [np.zeros(padded, np.float32) for _ in range(p)]
    results = []
    for step in range(steps):
        grads = [np.pad(grad(q, step, n), (0, padded - n)) for q in range(p)]
        if g == 1:
            contrib = grads
            out = np.zeros(padded, np.float32)
            for q in range(p):
                residual[q] += contrib[q]
                idx = topk(residual[q], k_of(n))
                out[idx] += residual[q][idx]
                residual[q][idx] = 0
            results.append(out[:n])
            continue
        out = np.zeros(padded, np.float32)
        sums = [sum(grads[grp * g + j] for j in range(g)) for grp in range(groups)]
        for j in range(g):
            lo = j * shard
            for grp in range(groups):
                q = grp * g + j
                res = residual[q][lo:lo + shard]
                res += sums[grp][lo:lo + shard]
                idx = topk(res, k_of(shard))
                out[lo + idx] += res[idx]
                res[idx] = 0
        results.append(out[:n])
    return results


def main() -> None:
    hvd.init()
    r, p = hvd.rank(), hvd.size()
    c = Checker(r)
    g = int(os.environ.get("LIGHT_INTRA_SIZE", "1")) if TWO_LEVEL else 1
    n = THRESHOLD // 4 + 12345
    steps = 3
    want = model(p, g if p // g >= 2 else 1, n, steps)
    for step in range(steps):
        out = hvd.allreduce(grad(r, step, n), op=hvd.Sum, name="w")
        c.check(np.array_equal(out, want[step]),
                f"step {step}: {int(np.sum(out != want[step]))} of {n} entries differ from the model")
        digests = hvd.allgather_object(hashlib.sha256(out.tobytes()).hexdigest())
        c.check(len(set(digests)) == 1, f"step {step}: results differ across ranks")
    avg = hvd.allreduce(grad(r, 0, n), op=hvd.Average, name="avg")
    c.check(avg.dtype == np.float32 and avg.shape == (n,), "average keeps dtype and shape")
    batches = core().stats()["device_batches"]
    c.check(batches >= steps, f"the device executor ran {batches} batches")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
