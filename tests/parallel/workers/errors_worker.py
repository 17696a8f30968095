"""Bad input and cross-rank disagreement: the right exception, on every rank, without hanging."""
from __future__ import annotations

import sys

import common  # noqa: F401
from common import Checker

import numpy as np

import lightcc as hvd


def expect(c: Checker, exc_type, fn, what: str, contains: str = "") -> None:
    try:
        fn()
    except exc_type as e:
        c.check(contains in str(e), f"{what}: message {str(e)!r} lacks {contains!r}")
        return
    except Exception as e:  # noqa: BLE001
        c.check(False, f"{what}: raised {type(e).__name__}: {e}")
        return
    c.check(False, f"{what}: did not raise")


def main() -> None:
    c = Checker(int(__import__("os").environ["LIGHTCC_RANK"]))
    expect(c, ValueError, hvd.rank, "rank before init", "init")
    expect(c, ValueError, lambda: hvd.allreduce(np.ones(2)), "allreduce before init", "init")
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c.check(issubclass(hvd.LightCCInternalError, RuntimeError) and hvd.HorovodInternalError is hvd.LightCCInternalError,
            "exception hierarchy")
    # Local argument errors: ValueError, no negotiation needed.
    expect(c, ValueError, lambda: hvd.allreduce(np.ones((4, 4))[:, ::2]), "non-contiguous", "contiguous")
    expect(c, ValueError, lambda: hvd.allreduce(np.ones(3, dtype=np.complex64)), "complex dtype", "complex64")
    if n & (n - 1):  # Adasum needs a power-of-two job (Horovod's NotImplementedError), else floats
        expect(c, NotImplementedError, lambda: hvd.allreduce(np.ones(3), op=hvd.Adasum), "adasum size", "power of 2")
    else:
        expect(c, ValueError, lambda: hvd.allreduce(np.ones(3, np.int32), op=hvd.Adasum, name="ada.int"),
               "adasum int32", "floating-point")
    # Horovod refuses reducescatter with Adasum with a RuntimeError when it is queued: NotImplementedError is one.
    expect(c, NotImplementedError, lambda: hvd.reducescatter(np.ones(2 * n), op=hvd.Adasum), "reducescatter adasum",
           "does not support Adasum")
    expect(c, ValueError, lambda: hvd.allreduce(np.ones(3), average=True, op=hvd.Sum), "average and op")
    expect(c, ValueError, lambda: hvd.broadcast(np.ones(3), root_rank=n), "root out of range", "root")
    expect(c, ValueError, lambda: hvd.alltoall(np.ones(5), splits=[5] + [1] * (n - 1)), "bad splits", "splits")
    expect(c, ValueError, lambda: hvd.allgather(np.array(1.0)), "allgather scalar", "dimension")
    # Duplicate in-flight name. Rank 0's "dup" cannot complete before the others submit theirs,
    # and they do so only after rank 0's broadcast, which rank 0 sends after its check.
    a = np.ones(10)
    if r == 0:
        h = hvd.allreduce_async(a, name="dup")
        expect(c, ValueError, lambda: hvd.allreduce_async(a, name="dup"), "duplicate name", "already in flight")
        hvd.broadcast(np.ones(1), 0, name="dup.go")
    else:
        hvd.broadcast(np.ones(1), 0, name="dup.go")
        h = hvd.allreduce_async(a, name="dup")
    hvd.synchronize(h)
    # Cross-rank mismatches: RuntimeError (LightCCInternalError) on every rank.
    expect(c, hvd.LightCCInternalError, lambda: hvd.allreduce(np.ones(3 + r), name="shape"), "shape mismatch",
           "Mismatched shapes")
    dtype = np.float32 if r == 0 else np.float64
    expect(c, hvd.LightCCInternalError, lambda: hvd.allreduce(np.ones(3, dtype), name="dtype"), "dtype mismatch",
           "Mismatched data types")
    expect(c, hvd.LightCCInternalError,
           lambda: hvd.allreduce(np.ones(3), op=hvd.Sum if r == 0 else hvd.Max, name="op"), "op mismatch",
           "Mismatched reduction ops")
    expect(c, hvd.LightCCInternalError, lambda: hvd.broadcast(np.ones(3), root_rank=r % 2, name="root"),
           "root mismatch", "Mismatched root ranks")
    expect(c, hvd.LightCCInternalError,
           lambda: hvd.allreduce(np.ones(3), prescale_factor=1.0 + r, name="scale"), "scale mismatch", "prescale")

    def mixed_ops():
        if r == 0:
            hvd.allreduce(np.ones(3), name="mixed")
        else:
            hvd.broadcast(np.ones(3), 0, name="mixed")
    # The engine sees different op prefixes as different names, so use a shared raw name.
    from lightcc.common import op_spec as _spec
    from lightcc.common import ops as _ops
    from lightcc.common.dtypes import numpy_code
    x = np.ones(3)
    op_code = _spec.code("allreduce") if r == 0 else _spec.code("broadcast")
    args = _ops.TensorArgs(op_code, "raw.mixed", x.ctypes.data, x.ctypes.data, numpy_code(x.dtype), x.shape)
    expect(c, hvd.LightCCInternalError, lambda: _ops.handles.synchronize(_ops.handles.submit([args], x, lambda v: v)),
           "op type mismatch", "Mismatched operations")
    # A cached tensor whose shape changes on one rank only: invalidated and reported.
    for _ in range(3):
        hvd.allreduce(np.ones(4), name="cached")
    expect(c, hvd.LightCCInternalError, lambda: hvd.allreduce(np.ones(4 if r else 5), name="cached"),
           "cached then mismatched", "Mismatched shapes")
    # And the engine keeps working afterwards.
    c.check(np.allclose(hvd.allreduce(np.ones(2) * r, op=hvd.Sum, name="after"), sum(range(n))), "works after errors")
    hvd.shutdown()
    expect(c, ValueError, lambda: hvd.allreduce(np.ones(2)), "allreduce after shutdown", "init")
    c.finish()


if __name__ == "__main__":
    sys.exit(main())
