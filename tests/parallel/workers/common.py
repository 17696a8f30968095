"""Helpers for worker scripts: deterministic per-rank inputs and NumPy references."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bfloat16 cases need ml_dtypes (a test dependency)
    BF16 = None

DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        if BF16 is None:
            raise RuntimeError("bfloat16 tests need ml_dtypes installed")
        return BF16
    return np.dtype(name)


def data(rank: int, shape, dtype: str, op: str = "sum", seed: int = 0) -> np.ndarray:
    """Small values so integer sums and products stay in range and floats stay exact-ish."""
    rng = np.random.default_rng(seed * 1000 + rank)
    if op == "product":
        v = rng.integers(1, 3, size=shape)
    elif dtype in ("uint8", "uint16"):
        v = rng.integers(0, 20, size=shape)
    else:
        v = rng.integers(-20, 20, size=shape)
    return v.astype(np_dtype(dtype))


def reference(arrays, op: str, dtype: str) -> np.ndarray:
    acc = [a.astype(np.float64) for a in arrays]
    if op == "sum":
        out = np.sum(acc, axis=0)
    elif op == "average":
        out = np.sum(acc, axis=0) / len(acc)
        if np.dtype(np_dtype(dtype)).kind in "iub":
            out = np.trunc(out)
    elif op == "min":
        out = np.min(acc, axis=0)
    elif op == "max":
        out = np.max(acc, axis=0)
    elif op == "product":
        out = np.prod(acc, axis=0)
    else:
        raise ValueError(op)
    return out.astype(np_dtype(dtype))


def close(a: np.ndarray, b: np.ndarray, dtype: str) -> bool:
    if a.shape != b.shape:
        return False
    tol = {"float16": 1e-2, "bfloat16": 5e-2}.get(dtype, 1e-6)
    return np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol)


def two_d_batches() -> int:
    """The engine's count of batches that ran 2D, after a barrier (which drains the executors, so every
    batch before it has been counted)."""
    import lightcc as hvd
    from lightcc.common.native import core

    hvd.barrier()
    return int(core().stats()["two_d_batches"])


class Checker:
    """Collects failures instead of stopping at the first, then exits non-zero."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.failures = []
        self.passed = 0

    def check(self, ok: bool, what: str) -> None:
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"rank {self.rank} FAIL: {what}", flush=True)

    def finish(self) -> None:
        print(f"rank {self.rank}: {self.passed} passed, {len(self.failures)} failed", flush=True)
        sys.stdout.flush()
        sys.exit(1 if self.failures else 0)
