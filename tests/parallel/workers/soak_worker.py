"""Soak: random collectives with injected disagreements; no hang, and every good op is right.

Every rank draws the same sequence from one seed: the op, dtype, shape and, for some ops, a fault
on one rank (another dtype, another shape, or an argument only that rank gets wrong).
"""
from __future__ import annotations

import os
import sys

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd

OPS = ["allreduce", "allgather", "broadcast", "alltoall", "reducescatter", "grouped_allreduce"]
DTYPES = ["float32", "float64", "int32", "int64", "uint8"]
FAULTS = ["none"] * 7 + ["dtype", "shape", "local"]


def run_one(i: int, rng: np.random.Generator, r: int, n: int, c: Checker) -> None:
    op = OPS[rng.integers(len(OPS))]
    dt = np.dtype(DTYPES[rng.integers(len(DTYPES))])
    fault = FAULTS[rng.integers(len(FAULTS))]
    bad_rank = int(rng.integers(n))
    rows = int(rng.integers(1, 4)) * n
    cols = int(rng.integers(1, 5))
    name = f"soak.{i}" if rng.random() < 0.8 else None  # unnamed ones must stay paired too
    if fault == "local" and op not in ("broadcast", "alltoall"):
        fault = "shape"  # only a root and splits are arguments one rank alone can get wrong
    odd = r == bad_rank
    my_dt = np.dtype("float32" if dt != np.float32 else "float64") if (fault == "dtype" and odd) else dt
    my_cols = cols + 1 if (fault == "shape" and odd) else cols

    def data(rank: int, shape) -> np.ndarray:
        return ((np.arange(int(np.prod(shape))).reshape(shape) + rank + i) % 7).astype(dt)

    x = data(r, (rows, my_cols)).astype(my_dt)
    want_error = fault != "none"
    try:
        if op == "allreduce":
            got = hvd.allreduce(x, op=hvd.Sum, name=name)
            want = sum(data(k, (rows, cols)).astype(np.int64) for k in range(n)).astype(dt)
        elif op == "grouped_allreduce":
            got = hvd.grouped_allreduce([x, x[:1]], op=hvd.Sum, name=name)[0]
            want = sum(data(k, (rows, cols)).astype(np.int64) for k in range(n)).astype(dt)
        elif op == "allgather":
            got = hvd.allgather(x, name=name)
            want = np.concatenate([data(k, (rows, cols)) for k in range(n)])
        elif op == "broadcast":
            root = n if (fault == "local" and odd) else i % n
            got = hvd.broadcast(x, root_rank=root, name=name)
            want = data(i % n, (rows, cols))
        elif op == "alltoall":
            splits = [rows // n] * n
            if fault == "local" and odd:
                splits[0] += 1  # no longer sums to the first dimension
            got = hvd.alltoall(x, splits=splits, name=name)[0]
            want = np.concatenate([data(k, (rows, cols))[r * (rows // n):(r + 1) * (rows // n)] for k in range(n)])
        else:
            got = hvd.reducescatter(x, op=hvd.Sum, name=name)
            full = sum(data(k, (rows, cols)).astype(np.int64) for k in range(n)).astype(dt)
            want = full[r * (rows // n):(r + 1) * (rows // n)]
        c.check(not want_error, f"op {i} {op} with a {fault} fault on rank {bad_rank}: no error")
        if not want_error:
            c.check(got.dtype == want.dtype and np.array_equal(got, want), f"op {i} {op} {dt}: wrong result")
    except (hvd.LightCCInternalError, ValueError) as e:
        c.check(want_error, f"op {i} {op} {dt}: unexpected error {type(e).__name__}: {e}")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    rng = np.random.default_rng(int(os.environ.get("SOAK_SEED", "15")))
    for i in range(int(os.environ.get("SOAK_OPS", "2000"))):
        run_one(i, rng, r, n, c)
        if len(c.failures) > 20:
            break
    c.finish()


if __name__ == "__main__":
    sys.exit(main())
