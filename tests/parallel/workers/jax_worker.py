"""JAX arrays through `import lightcc as hvd`: every out-of-place collective answers with JAX arrays on the input's device.

argv[1] = "cpu" or "gpu" (the JAX platform the inputs live on; gpu needs CuPy beside JAX).
"""
from __future__ import annotations

import sys

import common  # noqa: F401  (puts the repo on sys.path)
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    platform = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    import jax
    import jax.numpy as jnp

    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    dev = jax.devices(platform)[0]

    def put(x: np.ndarray):
        return jax.device_put(jnp.asarray(x), dev)

    def same(got, want: np.ndarray, what: str) -> None:
        ok = isinstance(got, jax.Array) and got.devices() == {dev} and got.dtype == want.dtype
        ok = ok and got.shape == want.shape and np.allclose(np.asarray(got), want, rtol=1e-3, atol=1e-3)
        c.check(ok, f"{what}: {type(got).__name__} {getattr(got, 'dtype', None)} {np.asarray(got).ravel()[:4]} "
                    f"vs {want.ravel()[:4]}")

    for dtype in (np.float32, np.int32, np.float16):
        base = np.arange(12, dtype=dtype).reshape(3, 4)
        mine = put(base + r)
        total = sum(base + k for k in range(n)).astype(dtype)
        same(hvd.allreduce(mine, op=hvd.Sum, name=f"jax.sum.{dtype.__name__}"), total, f"allreduce sum {dtype}")
        if np.dtype(dtype).kind == "f":
            same(hvd.allreduce(mine, name=f"jax.avg.{dtype.__name__}"), (total / n).astype(dtype),
                 f"allreduce average {dtype}")
        c.check(np.array_equal(np.asarray(mine), base + r), f"input left alone {dtype}")

    x = put(np.full(5, r + 1, np.float32))
    y = put(np.full((2, 2), 2 * (r + 1), np.float32))
    outs = hvd.grouped_allreduce([x, y], op=hvd.Sum, name="jax.grouped")
    s = n * (n + 1) / 2
    c.check(isinstance(outs, list) and len(outs) == 2, "grouped_allreduce gives a list")
    same(outs[0], np.full(5, s, np.float32), "grouped [0]")
    same(outs[1], np.full((2, 2), 2 * s, np.float32), "grouped [1]")

    h = hvd.allreduce_async(x, op=hvd.Sum, name="jax.async")
    same(hvd.synchronize(h), np.full(5, s, np.float32), "allreduce_async + synchronize")
    h = hvd.grouped_allgather_async([put(np.full((r + 1, 2), r, np.int32))], name="jax.gag")
    want_ag = np.concatenate([np.full((k + 1, 2), k, np.int32) for k in range(n)])
    same(hvd.synchronize(h)[0], want_ag, "grouped_allgather_async")

    same(hvd.allgather(put(np.full((r + 1, 3), r, np.float32)), name="jax.ag"),
         np.concatenate([np.full((k + 1, 3), k, np.float32) for k in range(n)]), "allgather uneven rows")
    root = n - 1
    same(hvd.broadcast(put(np.arange(6, dtype=np.float32) * (r + 1)), root, name="jax.bc"),
         np.arange(6, dtype=np.float32) * (root + 1), "broadcast")
    rows = np.arange(n * 2, dtype=np.float32).reshape(n, 2) + 100 * r
    same(hvd.alltoall(put(rows), name="jax.a2a"),
         np.stack([np.arange(n * 2, dtype=np.float32).reshape(n, 2)[r] + 100 * k for k in range(n)]), "alltoall")
    splits = [1] * n
    out, received = hvd.alltoall(put(rows), splits=put(np.array(splits, np.int32)), name="jax.a2a.splits")
    same(out, np.stack([np.arange(n * 2, dtype=np.float32).reshape(n, 2)[r] + 100 * k for k in range(n)]),
         "alltoall with splits")
    c.check(np.array_equal(np.asarray(received), np.ones(n, np.int32)), "alltoall received splits")
    full = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    same(hvd.reducescatter(put(full * (r + 1)), op=hvd.Sum, name="jax.rs"), full[r:r + 1] * s, "reducescatter")

    for what, call in (("allreduce_", lambda: hvd.allreduce_(x, name="jax.inplace")),
                       ("broadcast_", lambda: hvd.broadcast_(x, 0, name="jax.bc_"))):
        try:
            call()
            c.check(False, f"{what} on a JAX array should refuse")
        except ValueError as e:
            c.check("immutable" in str(e), f"{what} message: {e}")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
