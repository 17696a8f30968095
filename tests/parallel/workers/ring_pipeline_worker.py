"""Large allreduces over many pipelined-ring chunks: every dtype and op, fused, in place, scaled, same on every rank."""
from __future__ import annotations

import common  # noqa: F401  (puts the repo on sys.path)
from common import DTYPES, Checker, close, data, reference

import numpy as np

import lightcc as hvd

OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    for dtype in DTYPES:
        for opname, op in OPS.items():
            # At LIGHTCC_SHM_CHUNK_BYTES=16384, segments of 1 to 100 chunks (the plain ring and the
            # pipeline), counts a multiple of neither the ranks nor the chunks: short last chunks and
            # segments, and more chunks than the window's slots.
            for count in (40_007, 400_003):
                inputs = [data(k, (count,), dtype, opname, seed=count) for k in range(n)]
                got = hvd.allreduce(inputs[r], op=op, name=f"pipe.{dtype}.{opname}.{count}")
                c.check(close(got, reference(inputs, opname, dtype), dtype), f"allreduce {dtype} {opname} {count}")
                rows = hvd.allgather(got.view(np.uint8)[None, :], name=f"same.{dtype}.{opname}.{count}")
                c.check(all(np.array_equal(rows[0], row) for row in rows), f"identical on every rank {dtype} {opname}")
    x = np.arange(300_001, dtype=np.float32) + r
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="pipe.scaled")
    want = 1.5 * (n * np.arange(300_001, dtype=np.float64) + n * (n - 1) / 2)
    c.check(np.allclose(got, want, rtol=1e-6), "prescale and postscale")
    # Fused tensors of ragged sizes (staged into the fusion buffer, then one ring), and in place.
    parts = [np.arange(k * 70_001 + 3, dtype=np.float64) * (r + 1) for k in range(1, 6)]
    outs = hvd.grouped_allreduce(parts, op=hvd.Sum, name="pipe.grouped")
    for k, out in enumerate(outs, start=1):
        want = np.arange(k * 70_001 + 3, dtype=np.float64) * (n * (n + 1) / 2)
        c.check(np.array_equal(out, want), f"grouped allreduce part {k}")
    # Fused tensors are staged chunk by chunk: the result must be the plain ring's over their
    # concatenation, bit for bit (float32 sums round differently in any other order), scaled too.
    rng = np.random.default_rng(7 + r)
    ragged = [rng.standard_normal(k * 50_021 + 1).astype(np.float32) for k in range(1, 5)]
    whole = hvd.allreduce(np.concatenate(ragged), op=hvd.Sum, prescale_factor=0.25, postscale_factor=3.0,
                          name="pipe.whole")
    fused = hvd.grouped_allreduce(ragged, op=hvd.Sum, prescale_factor=0.25, postscale_factor=3.0,
                                  name="pipe.fused")
    c.check(np.array_equal(np.concatenate(fused), whole), "fused = concatenated, bit for bit")
    inplace = [a.copy() for a in ragged]
    hvd.grouped_allreduce_(inplace, op=hvd.Sum, prescale_factor=0.25, postscale_factor=3.0, name="pipe.fused_")
    c.check(np.array_equal(np.concatenate(inplace), whole), "fused in place = concatenated, bit for bit")
    ints = [np.arange(k * 40_009, dtype=np.int64) * (r + 1) for k in range(1, 4)]
    for k, out in enumerate(hvd.grouped_allreduce(ints, op=hvd.Average, name="pipe.fused_int"), start=1):
        want = (np.arange(k * 40_009, dtype=np.int64) * (n * (n + 1) // 2)) // n
        c.check(np.array_equal(out, want), f"fused integer average part {k}")
    y = np.full(500_003, float(r + 1), dtype=np.float32)
    hvd.allreduce_(y, op=hvd.Average, name="pipe.in_place")
    c.check(bool(np.all(y == (n + 1) / 2)), "in-place average")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
