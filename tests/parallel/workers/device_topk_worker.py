"""Top-k allreduce through the device executor's schedules (LIGHTCC_DEVICE_EXECUTOR=host), against a NumPy model.

The model replays the schedule exactly: flat — every rank adds its gradient to its residual,
selects its k largest entries, and gTop-k's merge (fold, recursive doubling, unfold) keeps the
k largest of each union; a rank's pairs that some merge dropped go back to its residual; 2D —
each group of LIGHT_INTRA_SIZE ranks sums densely, member j of each group sparsifies shard j of
the group sum against its own residual and the groups merge those. Integer-valued gradients
keep every sum exact, so the comparison is exact too (ties go to the lower index).
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


def merge(a: dict, b: dict, k: int) -> dict:
    """The k largest of the union of two pair lists, equal indices summed (ties to the lower index)."""
    u = dict(a)
    for i, v in b.items():
        u[i] = np.float32(u[i] + v) if i in u else v
    keep = sorted(u, key=lambda i: (-abs(float(u[i])), i))[:k]
    return {i: u[i] for i in keep}


def gtopk(lists: list, k: int) -> tuple:
    """sparse_allreduce.h's merge over len(lists) members: the final pairs, and each member's survivors."""
    p = len(lists)
    m = 1 << (p.bit_length() - 1)
    alive = [set(x) for x in lists]
    cur = [dict(lists[q]) for q in range(m)]
    for j in range(p - m):  # fold
        cur[j] = merge(cur[j], lists[m + j], k)
        alive[j] &= set(cur[j])
        alive[m + j] &= set(cur[j])
    step = 1
    while step < m:
        cur = [merge(cur[q], cur[q ^ step], k) for q in range(m)]
        for q in range(m):
            alive[q] &= set(cur[q])
            if q + m < p:
                alive[q + m] &= set(cur[q])
        step *= 2
    return cur[0], alive


def exchange(residuals: list, k: int) -> np.ndarray:
    """Selects, merges and feeds back over these residual views; returns the dense result."""
    lists = []
    for res in residuals:
        idx = topk(res, k)
        lists.append({int(i): res[i] for i in idx})
        res[idx] = 0
    final, alive = gtopk(lists, k)
    for q, res in enumerate(residuals):
        for i, v in lists[q].items():
            if i not in alive[q]:
                res[i] += v
    out = np.zeros(residuals[0].size, np.float32)
    for i, v in final.items():
        out[i] = v
    return out


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
            for q in range(p):
                residual[q] += grads[q]
            results.append(exchange(residual, k_of(n))[:n])
            continue
        out = np.zeros(padded, np.float32)
        sums = [sum(grads[grp * g + j] for j in range(g)) for grp in range(groups)]
        for j in range(g):
            lo = j * shard
            views = [residual[grp * g + j][lo:lo + shard] for grp in range(groups)]
            for grp in range(groups):
                views[grp] += sums[grp][lo:lo + shard]
            out[lo:lo + shard] = exchange(views, k_of(shard))
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
