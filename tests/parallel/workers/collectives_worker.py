"""Every collective x dtype x op on NumPy arrays, checked against NumPy references on each rank."""
from __future__ import annotations

import common  # noqa: F401  (puts the repo on sys.path)
from common import DTYPES, Checker, close, data, np_dtype, reference

import numpy as np

import lightcc as hvd

OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}


def main() -> None:
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    c = Checker(r)
    shapes = [(), (1,), (7,), (3, 5), (1000,), (257, 3)]
    for dtype in DTYPES:
        for opname, op in OPS.items():
            for shape in shapes:
                inputs = [data(k, shape, dtype, opname) for k in range(n)]
                want = reference(inputs, opname, dtype)
                got = hvd.allreduce(inputs[r], op=op, name=f"ar.{dtype}.{opname}.{shape}")
                c.check(close(got, want, dtype) and got.dtype == want.dtype,
                        f"allreduce {dtype} {opname} {shape}: {got.ravel()[:4]} vs {want.ravel()[:4]}")
        # in place, async, scales
        a = data(r, (33,), dtype)
        inputs = [data(k, (33,), dtype) for k in range(n)]
        h = hvd.allreduce_async_(a, op=hvd.Sum, name=f"inplace.{dtype}")
        out = hvd.synchronize(h)
        c.check(out is a and close(a, reference(inputs, "sum", dtype), dtype), f"allreduce_ in place {dtype}")
        if np.dtype(np_dtype(dtype)).kind == "f":
            got = hvd.allreduce(inputs[r], op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                                name=f"scaled.{dtype}")
            want = (np.sum([x.astype(np.float64) * 0.5 for x in inputs], axis=0) * 3.0).astype(np_dtype(dtype))
            c.check(close(got, want, dtype), f"allreduce scales {dtype}")
        # allgather with different first dims
        mine = data(r, (r + 1, 3), dtype)
        got = hvd.allgather(mine, name=f"ag.{dtype}")
        want = np.concatenate([data(k, (k + 1, 3), dtype) for k in range(n)])
        c.check(got.dtype == want.dtype and np.array_equal(got, want), f"allgather {dtype}")
        # broadcast from every root, copy and in place
        for root in range(n):
            got = hvd.broadcast(data(r, (5, 2), dtype), root, name=f"bc.{dtype}.{root}")
            c.check(np.array_equal(got, data(root, (5, 2), dtype)), f"broadcast {dtype} root {root}")
            b = data(r, (4,), dtype)
            hvd.broadcast_(b, root, name=f"bc_.{dtype}.{root}")
            c.check(np.array_equal(b, data(root, (4,), dtype)), f"broadcast_ {dtype} root {root}")
        # alltoall even and with splits
        even = data(r, (2 * n, 3), dtype)
        got = hvd.alltoall(even, name=f"a2a.{dtype}")
        want = np.concatenate([data(k, (2 * n, 3), dtype)[2 * r:2 * r + 2] for k in range(n)])
        c.check(np.array_equal(got, want), f"alltoall even {dtype}")
        splits = [(k + r) % 3 for k in range(n)]
        x = data(r, (sum(splits), 2), dtype)
        got, recv = hvd.alltoall(x, splits=splits, name=f"a2as.{dtype}")
        pieces = []
        for k in range(n):
            sk = [(j + k) % 3 for j in range(n)]
            xk = data(k, (sum(sk), 2), dtype)
            off = sum(sk[:r])
            pieces.append(xk[off:off + sk[r]])
        c.check(np.array_equal(got, np.concatenate(pieces)) and list(recv) == [(r + k) % 3 for k in range(n)],
                f"alltoall splits {dtype}: recv {list(recv)}")
        # reducescatter: first dim % size ranks get one extra row
        for rows in (n, 2 * n + 1, 1):
            inputs = [data(k, (rows, 2), dtype) for k in range(n)]
            for opname in ("sum", "average"):
                full = reference(inputs, opname, dtype)
                counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
                start = sum(counts[:r])
                got = hvd.reducescatter(inputs[r], op=OPS[opname], name=f"rs.{dtype}.{rows}.{opname}")
                c.check(close(got, full[start:start + counts[r]], dtype), f"reducescatter {dtype} {rows} {opname}")
    # grouped forms
    arrays = [data(r, (10 + i,), "float32") for i in range(5)]
    outs = hvd.grouped_allreduce(arrays, op=hvd.Sum, name="grp")
    for i, o in enumerate(outs):
        c.check(close(o, reference([data(k, (10 + i,), "float32") for k in range(n)], "sum", "float32"), "float32"),
                f"grouped_allreduce {i}")
    gathered = hvd.grouped_allgather([data(r, (2,), "int32"), data(r, (3,), "int64")], name="gag")
    c.check(len(gathered) == 2 and gathered[1].shape == (3 * n,), "grouped_allgather")
    rs = hvd.grouped_reducescatter([data(r, (n, 2), "float64")], op=hvd.Sum, name="grs")
    c.check(rs[0].shape == (1, 2), "grouped_reducescatter")
    # many async ops in flight at once (fusion), completed out of order
    hs = [hvd.allreduce_async(data(r, (100,), "float32", seed=i), op=hvd.Sum, name=f"many.{i}") for i in range(50)]
    for i in reversed(range(50)):
        got = hvd.synchronize(hs[i])
        want = reference([data(k, (100,), "float32", seed=i) for k in range(n)], "sum", "float32")
        c.check(close(got, want, "float32"), f"async fused {i}")
    # large tensor crossing many staging windows
    big = np.full(3_000_001, r + 1, dtype=np.float32)
    got = hvd.allreduce(big, op=hvd.Sum, name="big")
    c.check(bool(np.all(got == n * (n + 1) / 2)), "large allreduce")
    # objects
    obj = hvd.broadcast_object({"rank": r, "list": list(range(r + 3))}, root_rank=n - 1)
    c.check(obj == {"rank": n - 1, "list": list(range(n + 2))}, "broadcast_object")
    objs = hvd.allgather_object(("x", r))
    c.check(objs == [("x", k) for k in range(n)], "allgather_object")
    hvd.barrier()
    c.check(hvd.join() in range(n), "join")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
