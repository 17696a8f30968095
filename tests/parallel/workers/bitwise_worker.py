"""Band, Bor and Bxor: allreduce and reducescatter of integer and bool arrays against NumPy, and
the refusal of floating tensors on every rank."""
from __future__ import annotations

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker

import numpy as np

import lightcc as hvd
from lightcc.common.ops import Band, Bor, Bxor

OPS = {"band": (Band, np.bitwise_and), "bor": (Bor, np.bitwise_or), "bxor": (Bxor, np.bitwise_xor)}
DTYPES = ["int8", "int32", "int64", "uint8", "bool"]


def data(rank: int, shape, dtype: str) -> np.ndarray:
    """Every bit pattern of the type (negative values too), different on every rank."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    for dtype in DTYPES:
        for opname, (op, fn) in OPS.items():
            for shape in [(), (1,), (7,), (3, 5), (1000,), (257, 3)]:
                inputs = [data(k, shape, dtype) for k in range(n)]
                want = fn.reduce(np.stack(inputs), axis=0)
                tag = f"{dtype}.{opname}.{shape}"
                got = hvd.allreduce(inputs[r], op=op, name=f"ar.{tag}")
                c.check(got.dtype == want.dtype and np.array_equal(got, want), f"allreduce {tag}: {got!r} vs {want!r}")
                mine = inputs[r].copy()
                hvd.allreduce_(mine, op=op, name=f"ar_.{tag}")
                c.check(np.array_equal(mine, want), f"allreduce_ {tag}")
            # 20 000 elements: past the recursive-doubling cut for int32/int64 (the ring then).
            big = [data(k, (20000,), dtype) for k in range(n)]
            got = hvd.allreduce(big[r], op=op, name=f"big.{dtype}.{opname}")
            c.check(np.array_equal(got, fn.reduce(np.stack(big), axis=0)), f"allreduce 20000 {dtype} {opname}")
            # reducescatter: first dim % size ranks get one extra row
            for rows in (n, 2 * n + 1, 1):
                inputs = [data(k, (rows, 3), dtype) for k in range(n)]
                full = fn.reduce(np.stack(inputs), axis=0)
                counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
                start = sum(counts[:r])
                got = hvd.reducescatter(inputs[r], op=op, name=f"rs.{dtype}.{opname}.{rows}")
                c.check(got.dtype == full.dtype and np.array_equal(got, full[start:start + counts[r]]),
                        f"reducescatter {dtype} {opname} {rows}")
        outs = hvd.grouped_allreduce([data(r, (10 + i,), dtype) for i in range(3)], op=Bxor, name=f"grp.{dtype}")
        for i, o in enumerate(outs):
            want = np.bitwise_xor.reduce(np.stack([data(k, (10 + i,), dtype) for k in range(n)]), axis=0)
            c.check(np.array_equal(o, want), f"grouped_allreduce bxor {dtype} {i}")
    # Floats: refused by name and dtype on every rank, and the next op still runs.
    for dtype in ("float32", "float16", "float64"):
        for opname, (op, _) in OPS.items():
            for what, call in (("allreduce", lambda: hvd.allreduce(np.ones(4, dtype), op=op, name=f"f.{dtype}.{opname}")),
                               ("reducescatter",
                                lambda: hvd.reducescatter(np.ones(2 * n, dtype), op=op, name=f"fr.{dtype}.{opname}"))):
                try:
                    call()
                    c.check(False, f"{what} {opname} on {dtype}: did not raise")
                except ValueError as e:
                    text = str(e)
                    c.check(f"f{'r' if what == 'reducescatter' else ''}.{dtype}.{opname}" in text and dtype in text
                            and "integer or bool" in text, f"{what} {opname} on {dtype}: message {text!r}")
    got = hvd.allreduce(np.full(3, r + 1, np.int32), op=hvd.Sum, name="after")
    c.check(np.array_equal(got, np.full(3, n * (n + 1) // 2, np.int32)), "allreduce after the refusals")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
