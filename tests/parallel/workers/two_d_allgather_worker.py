"""Allgathers of uneven, zero-sized and odd-byte blocks in several dtypes: exact results, which ran 2D, the bits."""
from __future__ import annotations

import hashlib
import json

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker, two_d_batches

import numpy as np

import lightcc as hvd
from lightcc.common.native import core


def rows_of(case: str, k: int, n: int) -> int:
    """Rank k's first dimension in `case`: uneven everywhere, zero for some ranks or for all."""
    return {"uneven": k + 1,
            "some_empty": 0 if k % 2 == 1 else 2 * k + 1,
            "one_holds_all": 5000 if k == n - 1 else 0,
            "odd_bytes": 3 * k + 1,
            "large": 40000 + 1000 * k,  # several staging rounds at LIGHTCC_SHM_CHUNK_BYTES=64 KiB
            "all_empty": 0}[case]


CASES = [("uneven", "float32", (3,)), ("some_empty", "int64", (5,)), ("one_holds_all", "float16", ()),
         ("odd_bytes", "uint8", (7,)), ("large", "float64", (8,)), ("all_empty", "int32", (4,)),
         ("uneven", "int8", (1,))]


def block(case: str, dtype: str, row: tuple, k: int, n: int) -> np.ndarray:
    shape = (rows_of(case, k, n),) + row
    v = np.random.default_rng(7919 * k + len(case)).integers(-100, 100, size=shape)
    return v.astype(dtype)


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    print("TWO_D_INFO " + json.dumps(dict(core().two_d_info())), flush=True)
    digests, took, gathered = {}, {}, {}
    for i, (case, dtype, row) in enumerate(CASES):
        key = f"{case}.{dtype}"
        before = two_d_batches()
        got = hvd.allgather(block(case, dtype, row, r, n), name=f"ag2d.{i}.{key}")
        took[key] = two_d_batches() - before
        want = np.concatenate([block(case, dtype, row, k, n) for k in range(n)])
        c.check(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want),
                f"allgather {case} {dtype}: shape {got.shape} vs {want.shape}")
        digests[key] = hashlib.sha256(got.tobytes()).hexdigest()
        gathered[key] = want.nbytes
    rows = {"two_d_batches": sum(took.values()), "cases": len(CASES), "digests": digests, "took": took,
            "gathered": gathered}
    print("TWO_D_ROWS " + json.dumps(rows), flush=True)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
