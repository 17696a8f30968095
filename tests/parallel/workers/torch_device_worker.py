"""lightcc.torch.device_ops (the NCCL path) driven through torch's gloo backend with CPU tensors.

No GPU here: the same code that runs NCCL for CUDA tensors runs gloo for CPU tensors, so its
bootstrap (store over a lightcc broadcast), padding, split exchange and scaling are exercised.
"""
from __future__ import annotations

import os

import torch
from torch_helpers import checker, close, data, expect, reference

import lightcc.torch as hvd
from lightcc.torch import device_ops as D


def main() -> None:
    c = checker()
    n = int(os.environ["LIGHTCC_SIZE"])
    evens = hvd.ProcessSet(range(0, n, 2))
    hvd.init(process_sets=[evens])
    r = hvd.rank()
    ps = hvd.global_process_set
    for dtype in (torch.int32, torch.float32, torch.float64):
        for opname, op in (("sum", hvd.Sum), ("average", hvd.Average), ("min", hvd.Min), ("max", hvd.Max)):
            x = data(r, (3, 4), dtype)
            want = reference([data(k, (3, 4), dtype) for k in range(n)], opname, dtype)
            out = torch.empty_like(x)
            got = D.allreduce([x], [out], [f"d.ar.{dtype}.{opname}"], op, 1.0, 1.0, ps).wait()
            c.check(got[0] is out and close(out, want), f"device allreduce {dtype} {opname}")
    x = torch.full((5,), float(r + 1))
    D.allreduce([x], [x], ["d.scaled"], hvd.Sum, 2.0, 0.25, ps).wait()
    c.check(close(x, torch.full((5,), n * (n + 1) / 4.0)), "device allreduce in place with scales")
    mine = data(r, (r + 1, 2), torch.float32)
    got = D.allgather([mine, mine[:1].contiguous()], ["d.ag", "d.ag1"], ps).wait()
    c.check(close(got[0], torch.cat([data(k, (k + 1, 2), torch.float32) for k in range(n)])) and
            close(got[1], torch.cat([data(k, (k + 1, 2), torch.float32)[:1] for k in range(n)])),
            "device allgather, uneven dim 0")
    for root in range(n):
        t = data(r, (4,), torch.float64)
        D.broadcast(t, t, f"d.bc.{root}", root, ps).wait()
        c.check(close(t, data(root, (4,), torch.float64)), f"device broadcast root {root}")
    splits = [j + 1 for j in range(n)]
    send = torch.cat([torch.full((j + 1, 2), 10 * r + j) for j in range(n)])
    out, received = D.alltoall(send, splits, "d.a2a", ps).wait()[0]
    c.check(received.tolist() == [r + 1] * n and
            out.tolist() == [[10 * k + r] * 2 for k in range(n) for _ in range(r + 1)], "device alltoall, splits")
    out, _ = D.alltoall(torch.arange(2 * n) + 100 * r, [], "d.a2a.even", ps).wait()[0]
    c.check(out.tolist() == [100 * k + 2 * r + i for k in range(n) for i in range(2)], "device alltoall, even")
    for opname, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        x = data(r, (2 * n + 1, 3), torch.float32)
        full = reference([data(k, (2 * n + 1, 3), torch.float32) for k in range(n)], opname, torch.float32)
        start = 2 * r + min(r, 1)
        got = D.reducescatter([x], [f"d.rs.{opname}"], op, 1.0, 1.0, ps).wait()[0]
        c.check(close(got, full[start:start + 2 + (1 if r == 0 else 0)]), f"device reducescatter {opname}")
    if evens.included():
        got = D.allreduce([torch.full((2,), float(r))], [torch.empty(2)], ["d.ps"], hvd.Sum, 1.0, 1.0, evens).wait()
        c.check(close(got[0], torch.full((2,), float(sum(evens.ranks)))), "device allreduce in a process set")
    x = torch.ones(3)
    h = D.allreduce([x], [x], ["d.dup"], hvd.Sum, 1.0, 1.0, ps)
    expect(c, ValueError, lambda: D.allreduce([x], [x], ["d.dup"], hvd.Sum, 1.0, 1.0, ps), "device duplicate name",
           "already in flight")
    h.wait()
    c.check(close(x, torch.full((3,), float(n))), "device handle completes after a refused duplicate")
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
