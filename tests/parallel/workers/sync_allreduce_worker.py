"""hvd.allreduce_ on NumPy arrays (the synchronous in-place fast path) x dtype x op x size.

Sizes straddle the shared-memory one-shot limit (LIGHTCC_SHM_ONESHOT_BYTES, set small by the
test) so both the one-shot and the windowed algorithm run; arrays the fast path hands to the
general front (read-only, non-contiguous, a subclass, a dtype without a struct format) must
still give its answers and errors.
"""
from __future__ import annotations

import os

import common  # noqa: F401  (puts the repo on sys.path)
from common import DTYPES, Checker, close, data, np_dtype, reference

import numpy as np

import lightcc as hvd

OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}


def oneshot_limit(n: int) -> int:
    # Mirrors shmAllreduce's switch: the one-shot limit shrinks with the member count.
    chunk = int(os.environ.get("LIGHTCC_SHM_CHUNK_BYTES", str(4 << 20)))
    oneshot = int(os.environ["LIGHTCC_SHM_ONESHOT_BYTES"])
    return min(chunk, oneshot * 2 // max(2, n))


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    limit = oneshot_limit(n)
    for dtype in DTYPES:
        esize = np.dtype(np_dtype(dtype)).itemsize
        edge = limit // esize
        shapes = [(), (1,), (7,), (3, 5), (edge - 1,), (edge,), (edge + 1,), (4 * edge + 3,)]
        for opname, op in OPS.items():
            for shape in shapes:
                inputs = [data(k, shape, dtype, opname, seed=len(shape)) for k in range(n)]
                a = inputs[r].copy()
                got = hvd.allreduce_(a, op=op, name=f"sync.{dtype}.{opname}.{shape}")
                want = reference(inputs, opname, dtype)
                c.check(got is a and close(a, want, dtype),
                        f"allreduce_ {dtype} {opname} {shape}: {a.ravel()[:4]} vs {want.ravel()[:4]}")
        if np.dtype(np_dtype(dtype)).kind == "f":
            inputs = [data(k, (edge + 1,), dtype) for k in range(n)]
            a = inputs[r].copy()
            hvd.allreduce_(a, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name=f"sync.scaled.{dtype}")
            want = (np.sum([x.astype(np.float64) * 0.5 for x in inputs], axis=0) * 3.0).astype(np_dtype(dtype))
            c.check(close(a, want, dtype), f"allreduce_ scales {dtype}")
    # The default op (Average), an unnamed tensor, and the same name again (the response cache).
    for _ in range(3):
        a = np.full(5, float(r + 1))
        hvd.allreduce_(a)
        c.check(np.allclose(a, (n + 1) / 2), f"allreduce_ default average: {a}")
        b = np.full(3, r, dtype=np.int32)
        hvd.allreduce_(b, average=False, name="sync.repeat")
        c.check(np.array_equal(b, np.full(3, n * (n - 1) // 2)), f"allreduce_ repeated name: {b}")
    # A subclass takes the general path, with the same result.
    class Tagged(np.ndarray):
        pass

    t = np.arange(6, dtype=np.float32).view(Tagged)
    hvd.allreduce_(t, op=hvd.Sum, name="sync.subclass")
    c.check(np.array_equal(np.asarray(t), np.arange(6, dtype=np.float32) * n), "allreduce_ on a subclass")
    # Arrays the fast path refuses reach the general path's errors, alike on every rank.
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    try:
        hvd.allreduce_(ro, op=hvd.Sum, name="sync.readonly")
        c.check(False, "allreduce_ on a read-only array did not raise")
    except ValueError as e:
        c.check("read-only" in str(e), f"read-only error: {e}")
    strided = np.ones(8, np.float32)[::2]
    try:
        hvd.allreduce_(strided, op=hvd.Sum, name="sync.strided")
        c.check(False, "allreduce_ on a non-contiguous array did not raise")
    except ValueError as e:
        c.check("contiguous" in str(e), f"non-contiguous error: {e}")
    c.finish()


if __name__ == "__main__":
    main()
