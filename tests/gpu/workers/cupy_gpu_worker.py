"""CuPy arrays through `import lightcc as hvd`: every collective against NumPy references, results are
cupy.ndarray on the input's device. (GPU_TEST_DEVICE=cpu runs the same checks on NumPy arrays.)"""
from __future__ import annotations

import numpy as np
from gpu_helpers import DEVICE, common

import lightcc as hvd

Checker, close, data, reference = common.Checker, common.close, common.data, common.reference

if DEVICE == "cuda":
    import cupy as xp

    xp.cuda.Device(0).use()
    ARRAY = xp.ndarray
else:
    xp = np
    ARRAY = np.ndarray

DTYPES = ["float32", "float16", "float64", "int32"]
OPS = (("sum", hvd.Sum), ("average", hvd.Average), ("min", hvd.Min), ("max", hvd.Max), ("product", hvd.Product))


def host(a) -> np.ndarray:
    return xp.asnumpy(a) if DEVICE == "cuda" else np.asarray(a)


def where(a) -> str:
    if DEVICE == "cuda" and isinstance(a, ARRAY):
        return f"cupy on device {a.device.id}"
    return type(a).__module__ + "." + type(a).__name__


def matches(c: Checker, got, want: np.ndarray, dtype: str, what: str) -> None:
    """got is an array of the input's kind on device 0, with want's dtype, equal to the NumPy reference."""
    if not isinstance(got, ARRAY) or (DEVICE == "cuda" and got.device.id != 0):
        c.check(False, f"{what}: result is {where(got)}, expected {ARRAY.__module__}.ndarray on device 0")
        return
    h = host(got)
    c.check(h.dtype == want.dtype and close(h, want, dtype),
            f"{what}: got {h.reshape(-1)[:8].tolist()} {h.dtype}, want {want.reshape(-1)[:8].tolist()} {want.dtype}")


def allreduce_cases(c: Checker, r: int, n: int) -> None:
    for dtype in DTYPES:
        for opname, op in OPS:
            shape = (3, 5) if opname != "product" else (7,)
            want = reference([data(k, shape, dtype, opname) for k in range(n)], opname, dtype)
            got = hvd.allreduce(xp.asarray(data(r, shape, dtype, opname)), op=op, name=f"ar.{dtype}.{opname}")
            matches(c, got, want, dtype, f"allreduce {dtype} {opname}")
    want = (reference([data(k, (6,), "float32") for k in range(n)], "sum", "float64") * 0.5).astype(np.float32)
    got = hvd.allreduce(xp.asarray(data(r, (6,), "float32")), op=hvd.Sum, prescale_factor=2.0,
                        postscale_factor=0.25, name="ar.scaled")
    matches(c, got, want, "float32", "allreduce float32 sum prescale 2 postscale 0.25")
    a = xp.asarray(data(r, (5,), "float32"))
    hvd.allreduce_(a, op=hvd.Sum, name="ar.inplace")
    matches(c, a, reference([data(k, (5,), "float32") for k in range(n)], "sum", "float32"), "float32",
            "allreduce_ in place")
    shapes = [(3,), (2, 4), (1,)]
    outs = hvd.grouped_allreduce([xp.asarray(data(r, s, "float32", seed=i)) for i, s in enumerate(shapes)],
                                 op=hvd.Average, name="gar")
    for i, s in enumerate(shapes):
        want = reference([data(k, s, "float32", seed=i) for k in range(n)], "average", "float32")
        matches(c, outs[i], want, "float32", f"grouped_allreduce average, array {i} {s}")


def allgather_cases(c: Checker, r: int, n: int) -> None:
    for dtype in DTYPES:
        got = hvd.allgather(xp.asarray(data(r, (r + 1, 3), dtype)), name=f"ag.{dtype}")
        want = np.concatenate([data(k, (k + 1, 3), dtype) for k in range(n)])
        matches(c, got, want, dtype, f"allgather {dtype}, first dims {[k + 1 for k in range(n)]}")


def broadcast_cases(c: Checker, r: int, n: int) -> None:
    for dtype in ("float32", "float16", "int32"):
        for root in range(n):
            got = hvd.broadcast(xp.asarray(data(r, (4, 2), dtype)), root_rank=root, name=f"bc.{dtype}.{root}")
            matches(c, got, data(root, (4, 2), dtype), dtype, f"broadcast {dtype} root {root}")
    a = xp.asarray(data(r, (6,), "float64"))
    hvd.broadcast_(a, root_rank=n - 1, name="bc.inplace")
    matches(c, a, data(n - 1, (6,), "float64"), "float64", f"broadcast_ in place root {n - 1}")


def rows_for(sender: int, dest: int) -> int:
    return 1 + (sender + 2 * dest) % 3


def block(sender: int, dest: int, dtype: str) -> np.ndarray:
    m = rows_for(sender, dest)
    return (np.arange(m * 2).reshape(m, 2) + 100 * sender + 10 * dest).astype(dtype)


def alltoall_cases(c: Checker, r: int, n: int) -> None:
    for dtype in ("float32", "int32"):
        send = xp.asarray(np.concatenate([block(r, d, dtype) for d in range(n)]))
        splits = [rows_for(r, d) for d in range(n)]
        got, received = hvd.alltoall(send, splits=splits, name=f"a2a.{dtype}")
        matches(c, got, np.concatenate([block(k, r, dtype) for k in range(n)]), dtype,
                f"alltoall {dtype} splits {splits}")
        recv = [int(v) for v in host(received).reshape(-1)] if isinstance(received, ARRAY) else \
            [int(v) for v in np.asarray(received).reshape(-1)]
        c.check(recv == [rows_for(k, r) for k in range(n)],
                f"alltoall {dtype}: received splits {recv}, want {[rows_for(k, r) for k in range(n)]}")
    got = hvd.alltoall(xp.asarray(np.arange(2 * n, dtype=np.float32) + 100 * r), name="a2a.even")
    want = np.array([100 * k + 2 * r + i for k in range(n) for i in range(2)], dtype=np.float32)
    matches(c, got, want, "float32", "alltoall without splits (even)")


def reducescatter_cases(c: Checker, r: int, n: int) -> None:
    rows = 2 * n + 1
    base, extra = divmod(rows, n)
    start, mine = r * base + min(r, extra), base + (1 if r < extra else 0)
    for dtype, opname, op in (("float32", "sum", hvd.Sum), ("float32", "average", hvd.Average),
                              ("float16", "sum", hvd.Sum), ("int32", "sum", hvd.Sum)):
        full = reference([data(k, (rows, 3), dtype) for k in range(n)], opname, dtype)
        got = hvd.reducescatter(xp.asarray(data(r, (rows, 3), dtype)), op=op, name=f"rs.{dtype}.{opname}")
        matches(c, got, full[start:start + mine], dtype, f"reducescatter {dtype} {opname} rows {start}..")


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    for part in (allreduce_cases, allgather_cases, broadcast_cases, alltoall_cases, reducescatter_cases):
        part(c, r, n)
    if DEVICE == "cuda":
        xp.cuda.Device(0).synchronize()
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
