"""Every lightcc.torch collective on CUDA tensors against CPU references; results stay on the input's device."""
from __future__ import annotations

import torch
from gpu_helpers import setup_torch
from torch_helpers import checker, close, data, reference

import lightcc.torch as hvd

DEV = setup_torch()
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
OPS = (("sum", hvd.Sum), ("average", hvd.Average), ("min", hvd.Min), ("max", hvd.Max))


def on_dev(t: torch.Tensor) -> torch.Tensor:
    return t.to(DEV)


def placed(t) -> bool:
    """A torch tensor on the device the inputs came from (cuda:0 on the GPU machine)."""
    return isinstance(t, torch.Tensor) and t.device == DEV


def matches(c, got, want: torch.Tensor, what: str) -> None:
    """got is on the input's device and equals the CPU reference want (same dtype and shape)."""
    if not placed(got):
        where = got.device if isinstance(got, torch.Tensor) else type(got).__name__
        c.check(False, f"{what}: result on {where}, expected {DEV}")
        return
    got = got.detach().cpu()
    c.check(close(got, want), f"{what}: got {got.flatten()[:8].tolist()} {got.dtype}, "
                              f"want {want.flatten()[:8].tolist()} {want.dtype}")


def allreduce_cases(c, r: int, n: int) -> None:
    for dtype in FLOATS + (torch.int32,):
        for opname, op in OPS:
            want = reference([data(k, (3, 5), dtype) for k in range(n)], opname, dtype)
            got = hvd.allreduce(on_dev(data(r, (3, 5), dtype)), op=op, name=f"ar.{dtype}.{opname}")
            matches(c, got, want, f"allreduce {dtype} {opname}")
    for dtype in (torch.float32, torch.float16):
        want = reference([data(k, (7,), dtype) for k in range(n)], "sum", torch.float64) * 0.5
        got = hvd.allreduce(on_dev(data(r, (7,), dtype)), op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25,
                            name=f"ar.scaled.{dtype}")
        matches(c, got, want.to(dtype), f"allreduce {dtype} sum prescale 2 postscale 0.25")
        want = reference([data(k, (7,), dtype) for k in range(n)], "sum", torch.float64) / n * 0.5
        got = hvd.allreduce(on_dev(data(r, (7,), dtype)), op=hvd.Average, prescale_factor=0.5,
                            name=f"ar.avgscaled.{dtype}")
        matches(c, got, want.to(dtype), f"allreduce {dtype} average prescale 0.5")
    t = on_dev(data(r, (6,), torch.float32))
    out = hvd.allreduce_(t, op=hvd.Sum, name="ar.inplace")
    c.check(out is t, "allreduce_ returns its input tensor")
    matches(c, t, reference([data(k, (6,), torch.float32) for k in range(n)], "sum", torch.float32),
            "allreduce_ in place, sum")
    big = on_dev(torch.full((1 << 20,), float(r + 1)))  # 4 MiB: more than one fusion chunk on most settings
    matches(c, hvd.allreduce(big, op=hvd.Sum, name="ar.big"), torch.full((1 << 20,), n * (n + 1) / 2.0),
            "allreduce float32 4 MiB sum")


def grouped_cases(c, r: int, n: int) -> None:
    shapes = [(3,), (4, 5), (1,), (2, 2, 2)]
    for dtype in (torch.float32, torch.bfloat16):
        ins = [on_dev(data(r, s, dtype, seed=i)) for i, s in enumerate(shapes)]
        outs = hvd.grouped_allreduce(ins, op=hvd.Average, name=f"gar.{dtype}")
        c.check(isinstance(outs, list) and len(outs) == len(shapes), f"grouped_allreduce {dtype}: {len(outs)} outputs")
        for i, (s, got) in enumerate(zip(shapes, outs)):
            want = reference([data(k, s, dtype, seed=i) for k in range(n)], "average", dtype)
            matches(c, got, want, f"grouped_allreduce {dtype} average, tensor {i} {s}")
    ins = [on_dev(data(r, s, torch.float32, seed=i)) for i, s in enumerate(shapes)]
    outs = hvd.grouped_allreduce_(ins, op=hvd.Sum, name="gar.inplace")
    c.check(all(a is b for a, b in zip(outs, ins)), "grouped_allreduce_ returns its input tensors")
    for i, (s, got) in enumerate(zip(shapes, ins)):
        want = reference([data(k, s, torch.float32, seed=i) for k in range(n)], "sum", torch.float32)
        matches(c, got, want, f"grouped_allreduce_ in place sum, tensor {i}")


def allgather_cases(c, r: int, n: int) -> None:
    for dtype in FLOATS + (torch.int32,):
        got = hvd.allgather(on_dev(data(r, (r + 1, 3), dtype)), name=f"ag.{dtype}")
        want = torch.cat([data(k, (k + 1, 3), dtype) for k in range(n)])
        matches(c, got, want, f"allgather {dtype}, first dims {[k + 1 for k in range(n)]}")
    outs = hvd.grouped_allgather([on_dev(data(r, (r + 2,), torch.float32)), on_dev(data(r, (1, 4), torch.int32))],
                                 name="gag")
    matches(c, outs[0], torch.cat([data(k, (k + 2,), torch.float32) for k in range(n)]), "grouped_allgather 0")
    matches(c, outs[1], torch.cat([data(k, (1, 4), torch.int32) for k in range(n)]), "grouped_allgather 1")


def broadcast_cases(c, r: int, n: int) -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
        for root in range(n):
            got = hvd.broadcast(on_dev(data(r, (4, 3), dtype)), root_rank=root, name=f"bc.{dtype}.{root}")
            matches(c, got, data(root, (4, 3), dtype), f"broadcast {dtype} root {root}")
    t = on_dev(data(r, (9,), torch.float32))
    out = hvd.broadcast_(t, root_rank=n - 1, name="bc.inplace")
    c.check(out is t, "broadcast_ returns its input tensor")
    matches(c, t, data(n - 1, (9,), torch.float32), f"broadcast_ in place root {n - 1}")


def rows_for(sender: int, dest: int) -> int:
    """Uneven alltoall: how many rows `sender` sends `dest` (1..3, differs by pair)."""
    return 1 + (sender + 2 * dest) % 3


def block(sender: int, dest: int, dtype: torch.dtype) -> torch.Tensor:
    """The rows sender sends dest: each row names both, so a misrouted row is visible."""
    m = rows_for(sender, dest)
    return (torch.arange(m * 2).reshape(m, 2) + 100 * sender + 10 * dest).to(dtype)


def alltoall_cases(c, r: int, n: int) -> None:
    for dtype in (torch.float32, torch.int32, torch.float16):
        send = on_dev(torch.cat([block(r, d, dtype) for d in range(n)]))
        splits = [rows_for(r, d) for d in range(n)]
        got, received = hvd.alltoall(send, splits=splits, name=f"a2a.{dtype}")
        matches(c, got, torch.cat([block(k, r, dtype) for k in range(n)]), f"alltoall {dtype} splits {splits}")
        c.check([int(x) for x in received.cpu().tolist()] == [rows_for(k, r) for k in range(n)],
                f"alltoall {dtype}: received splits {received.tolist()}, want {[rows_for(k, r) for k in range(n)]}")
    even = on_dev(torch.arange(2 * n, dtype=torch.float32) + 100 * r)
    got = hvd.alltoall(even, name="a2a.even")
    want = torch.tensor([100 * k + 2 * r + i for k in range(n) for i in range(2)], dtype=torch.float32)
    matches(c, got, want, "alltoall without splits (even)")


def reducescatter_cases(c, r: int, n: int) -> None:
    rows = 2 * n + 1  # uneven: the first rows % n ranks get one row more
    base, extra = divmod(rows, n)
    start, mine = r * base + min(r, extra), base + (1 if r < extra else 0)
    for dtype, opname, op in ((torch.float32, "sum", hvd.Sum), (torch.float32, "average", hvd.Average),
                              (torch.float16, "sum", hvd.Sum), (torch.bfloat16, "average", hvd.Average),
                              (torch.int32, "sum", hvd.Sum)):
        full = reference([data(k, (rows, 3), dtype) for k in range(n)], opname, dtype)
        got = hvd.reducescatter(on_dev(data(r, (rows, 3), dtype)), op=op, name=f"rs.{dtype}.{opname}")
        matches(c, got, full[start:start + mine], f"reducescatter {dtype} {opname}, rows {start}..{start + mine}")
    full = reference([data(k, (rows, 2), torch.float32) for k in range(n)], "sum", torch.float64) * 0.5
    got = hvd.reducescatter(on_dev(data(r, (rows, 2), torch.float32)), op=hvd.Sum, prescale_factor=2.0,
                            postscale_factor=0.25, name="rs.scaled")
    matches(c, got, full[start:start + mine].float(), "reducescatter float32 sum prescale 2 postscale 0.25")


def main() -> None:
    c = checker()
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    for part in (allreduce_cases, grouped_cases, allgather_cases, broadcast_cases, alltoall_cases,
                 reducescatter_cases):
        part(c, r, n)
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
