"""Two-level Adasum (LIGHT_2D_ALLREDUCE, groups of LIGHT_INTRA_SIZE=2): Adasum of the groups' averages."""
from __future__ import annotations

import common  # noqa: F401  (puts the repo on sys.path)
from adasum_worker import adasum_ref, close, inputs
from common import Checker

import numpy as np

import lightcc as hvd


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    g = 2
    c = Checker(r)
    for dtype in ("float32", "float64"):
        for shape in [(1,), (3,), (1000,), (257, 3), (70001,)]:
            xs = [x.astype(dtype) for x in inputs(n, shape, 3 + len(shape))]
            groups = [np.mean([xs[j].astype(np.float64) for j in range(s, s + g)], axis=0) for s in range(0, n, g)]
            got = hvd.allreduce(xs[r], op=hvd.Adasum, name=f"h.{dtype}.{shape}")
            c.check(close(got, adasum_ref(groups), dtype), f"2D Adasum {dtype} {shape}")
            everyone = hvd.allgather(np.reshape(got, (1, -1)), name=f"h.same.{dtype}.{shape}")
            c.check(all(np.array_equal(everyone[0], row) for row in everyone), f"2D Adasum {dtype} {shape} identical")
    shapes = [(5,), (300,), (1,)]
    sets = [inputs(n, s, 50 + i) for i, s in enumerate(shapes)]
    got = hvd.grouped_allreduce([x[r] for x in sets], op=hvd.Adasum, name="h.group")
    for s, xs, out in zip(shapes, sets, got):
        groups = [np.mean(xs[k:k + g], axis=0) for k in range(0, n, g)]
        c.check(close(out, adasum_ref(groups), "float64"), f"2D grouped Adasum {s}")
    c.finish()


if __name__ == "__main__":
    main()
