"""Reducescatters of uneven, empty and large blocks in several dtypes and ops: exact results, which ran 2D, the bits."""
from __future__ import annotations

import hashlib
import json

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker, two_d_batches

import numpy as np

import lightcc as hvd
from lightcc.common.native import core

# (case, dtype, first dim, row shape, op): integer-valued data, so every summation order is exact
CASES = [("uneven", "float32", 7, (3,), "sum"), ("fewer_rows_than_ranks", "int64", 2, (5,), "sum"),
         ("average", "float64", 13, (2,), "average"), ("int_average", "int32", 9, (4,), "average"),
         ("max", "int16", 11, (), "max"), ("large", "float32", 60001, (4,), "sum"),
         ("scaled", "float64", 10, (3,), "scaled")]
OPS = {"sum": hvd.Sum, "average": hvd.Average, "max": hvd.Max, "scaled": hvd.Sum}


def tensor(k: int, case: str, dtype: str, dim0: int, row: tuple) -> np.ndarray:
    v = np.random.default_rng(7919 * k + len(case)).integers(-100, 100, size=(dim0,) + row)
    return v.astype(dtype)


def reference(inputs, op: str, n: int, r: int) -> np.ndarray:
    acc = np.stack([x.astype(np.float64) for x in inputs])
    full = {"sum": acc.sum(0), "average": acc.sum(0) / n, "max": acc.max(0), "scaled": acc.sum(0) * 0.5 * 4.0}[op]
    if op == "average" and inputs[0].dtype.kind in "iu":
        full = np.trunc(acc.sum(0) / n)
    rows = [len(inputs[0]) // n + (1 if j < len(inputs[0]) % n else 0) for j in range(n)]
    lo = sum(rows[:r])
    return full[lo:lo + rows[r]].astype(inputs[0].dtype)


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    print("TWO_D_INFO " + json.dumps(dict(core().two_d_info())), flush=True)
    digests, took, inputs = {}, {}, {}
    for i, (case, dtype, dim0, row, op) in enumerate(CASES):
        every = [tensor(k, case, dtype, dim0, row) for k in range(n)]
        scale = {"prescale_factor": 0.5, "postscale_factor": 4.0} if op == "scaled" else {}
        before = two_d_batches()
        got = hvd.reducescatter(every[r], op=OPS[op], name=f"rs2d.{i}.{case}", **scale)
        took[case] = two_d_batches() - before
        want = reference(every, op, n, r)
        # A float average multiplies by 1/n, which rounds unless n is a power of two.
        same = (np.allclose(got, want, rtol=1e-12, atol=0) if case == "average" else np.array_equal(got, want))
        c.check(got.dtype == want.dtype and got.shape == want.shape and same,
                f"reducescatter {case} {dtype}: shape {got.shape} vs {want.shape}, {got.ravel()[:4]} vs {want.ravel()[:4]}")
        digests[case] = hashlib.sha256(got.tobytes()).hexdigest()
        inputs[case] = every[r].nbytes
    rows = {"two_d_batches": sum(took.values()), "cases": len(CASES), "digests": digests, "took": took,
            "inputs": inputs}
    print("TWO_D_ROWS " + json.dumps(rows), flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
