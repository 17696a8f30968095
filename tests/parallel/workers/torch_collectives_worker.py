"""lightcc.torch collectives at N ranks: every form, dtype and op against references, plus helpers."""
from __future__ import annotations

import torch
from torch_helpers import DTYPES, checker, close, data, expect, reference

import lightcc.torch as hvd
from lightcc.torch.mpi_ops import _basics, synchronize

OPS = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max, "product": hvd.Product}


def allreduce_forms(c, r, n) -> None:
    for dtype in DTYPES:
        for opname, op in OPS.items():
            shape = (3, 5) if opname != "product" else (7,)
            mine = data(r, shape, dtype, opname)
            want = reference([data(k, shape, dtype, opname) for k in range(n)], opname, dtype)
            tag = f"{dtype}/{opname}"
            c.check(close(hvd.allreduce(mine, op=op, name=f"ar.{tag}"), want), f"allreduce {tag}")
            got = synchronize(hvd.allreduce_async(mine, op=op, name=f"ara.{tag}"))
            c.check(close(got, want), f"allreduce_async {tag}")
            inplace = mine.clone()
            ptr = inplace.data_ptr()
            out = hvd.allreduce_(inplace, op=op, name=f"ar_.{tag}")
            c.check(out is inplace and out.data_ptr() == ptr and close(out, want), f"allreduce_ in place {tag}")
            pair = [mine, mine[:2].clone()]
            got = hvd.grouped_allreduce(pair, op=op, name=f"gar.{tag}")
            want2 = reference([data(k, shape, dtype, opname)[:2] for k in range(n)], opname, dtype)
            c.check(close(got[0], want) and close(got[1], want2), f"grouped_allreduce {tag}")
            group = [t.clone() for t in pair]
            got = synchronize(hvd.grouped_allreduce_async_(group, op=op, name=f"gar_.{tag}"))
            c.check(got[0] is group[0] and close(group[0], want) and close(group[1], want2),
                    f"grouped_allreduce_async_ {tag}")
    flags = torch.tensor([r == 0, True, False, r == n - 1])
    c.check(hvd.allreduce(flags, op=hvd.Max, name="bool.max").tolist() == [True, True, False, True] and
            hvd.allreduce(flags, op=hvd.Min, name="bool.min").tolist() == [n == 1, True, False, n == 1],
            "bool allreduce (Max = any, Min = all)")
    c.check(hvd.allgather(flags, name="bool.ag").tolist() == [v for k in range(n)
                                                              for v in [k == 0, True, False, k == n - 1]],
            "bool allgather")
    x = torch.full((4,), float(r + 1))
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5, name="scaled")
    c.check(close(got, torch.full((4,), n * (n + 1) / 2.0)), f"pre/postscale {got}")
    got = hvd.allreduce(x, average=False, name="legacy_average")
    c.check(close(got, torch.full((4,), n * (n + 1) / 2.0)), "average=False is Sum")
    got = hvd.allreduce(torch.tensor(float(r)), name="scalar")
    c.check(got.shape == () and abs(float(got) - (n - 1) / 2.0) < 1e-6, "0-d allreduce")
    got = hvd.allreduce(x, name="fp16", compression=hvd.Compression.fp16)
    c.check(got.dtype == torch.float32 and close(got, torch.full((4,), (n + 1) / 2.0), 1e-3), "fp16 compression")
    h = hvd.allreduce_async(torch.ones(1000), name="polled")
    while not hvd.poll(h):
        pass
    c.check(close(hvd.synchronize(h), torch.ones(1000)), "poll then synchronize")
    expect(c, ValueError, lambda: hvd.synchronize(h), "synchronize twice", "synchronized")


def gather_scatter(c, r, n) -> None:
    for dtype in (torch.int32, torch.float32, torch.bfloat16, torch.float64):
        mine = data(r, (r + 1, 3), dtype)
        want = torch.cat([data(k, (k + 1, 3), dtype) for k in range(n)])
        c.check(close(hvd.allgather(mine, name=f"ag.{dtype}"), want), f"allgather {dtype}")
        got = hvd.grouped_allgather([mine, mine[:1].clone()], name=f"gag.{dtype}")
        want1 = torch.cat([data(k, (k + 1, 3), dtype)[:1] for k in range(n)])
        c.check(close(got[0], want) and close(got[1], want1), f"grouped_allgather {dtype}")
    got = hvd.allgather(torch.ones(2, 2), name="ag.zero_copy")
    got2, _ = hvd.alltoall(torch.ones(n), splits=[1] * n, name="a2a.zero_copy")
    got3 = hvd.reducescatter(torch.ones(n), name="rs.zero_copy")
    c.check(not any(t.untyped_storage().resizable() for t in (got, got2, got3)),
            "allgather/alltoall/reducescatter outputs wrap the engine's buffer (external, not torch-allocated)")
    rows = 0 if r == 0 else 2
    got = hvd.allgather(torch.ones(rows, 2), name="ag.empty_on_0")
    c.check(got.shape == (2 * (n - 1), 2), f"allgather with zero rows on rank 0: {tuple(got.shape)}")
    for root in range(n):
        mine = data(r, (5,), torch.float32)
        c.check(close(hvd.broadcast(mine, root, name=f"bc.{root}"), data(root, (5,), torch.float32)),
                f"broadcast root {root}")
        t = mine.clone()
        out = hvd.broadcast_(t, root, name=f"bc_.{root}")
        c.check(out is t and close(t, data(root, (5,), torch.float32)), f"broadcast_ root {root}")
    # alltoall: even, then rank r sends j+1 rows to rank j (row values say sender and receiver)
    even = torch.arange(2 * n) + 100 * r
    got = hvd.alltoall(even, name="a2a.even")
    c.check(got.tolist() == [100 * k + 2 * r + i for k in range(n) for i in range(2)], f"alltoall even {got}")
    splits = [j + 1 for j in range(n)]
    send = torch.cat([torch.full((j + 1, 2), 10 * r + j) for j in range(n)])
    out, received = hvd.alltoall(send, splits=torch.tensor(splits, dtype=torch.int32), name="a2a.splits")
    c.check(received.tolist() == [r + 1] * n and received.dtype == torch.int32, f"received splits {received}")
    c.check(out.tolist() == [[10 * k + r] * 2 for k in range(n) for _ in range(r + 1)], "alltoall with splits")
    # reducescatter: dim 0 of 2n+1 rows, the first rank gets one more
    for opname in ("sum", "average"):
        for dtype in (torch.int32, torch.float32, torch.float64):
            mine = data(r, (2 * n + 1, 3), dtype)
            full = reference([data(k, (2 * n + 1, 3), dtype) for k in range(n)], opname, dtype)
            start = 2 * r + min(r, 1)
            want = full[start:start + 2 + (1 if r < 1 else 0)]
            got = hvd.reducescatter(mine, op=OPS[opname], name=f"rs.{opname}.{dtype}")
            c.check(close(got, want), f"reducescatter {opname} {dtype}: {tuple(got.shape)}")
    got = hvd.grouped_reducescatter([torch.ones(n, 2), torch.ones(2 * n)], op=hvd.Sum, name="grs")
    c.check(close(got[0], torch.full((1, 2), float(n))) and close(got[1], torch.full((2,), float(n))),
            "grouped_reducescatter")
    got = hvd.reducescatter(torch.ones(n), op=hvd.Sum, prescale_factor=3.0, name="rs.scaled")
    c.check(close(got, torch.full((1,), 3.0 * n)), "reducescatter prescale")


def gradients(c, r, n) -> None:
    w = float(r + 1)
    total = n * (n + 1) / 2.0
    x = torch.ones(3, requires_grad=True)
    (hvd.allreduce(x, op=hvd.Sum, name="g.ar") * w).sum().backward()
    c.check(close(x.grad, torch.full((3,), total)), f"grad of Sum allreduce {x.grad}")
    x = torch.ones(3, requires_grad=True)
    (hvd.allreduce(x, name="g.ar_avg", prescale_factor=2.0) * w).sum().backward()
    c.check(close(x.grad, torch.full((3,), 2.0 * total / n)), f"grad of Average allreduce {x.grad}")
    a, b = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)
    ga, gb = hvd.grouped_allreduce([a, b], op=hvd.Sum, name="g.gar")
    (ga.sum() * w + gb.sum() * 2 * w).backward()
    c.check(close(a.grad, torch.full((2,), total)) and close(b.grad, torch.full((3,), 2 * total)),
            "grad of grouped allreduce")
    x = torch.ones(r + 1, 2, requires_grad=True)
    (hvd.allgather(x, name="g.ag") * w).sum().backward()
    c.check(close(x.grad, torch.full((r + 1, 2), total / n)), f"grad of allgather {x.grad}")
    x = torch.ones(r + 1, requires_grad=True)
    y = torch.ones(1, requires_grad=True)
    ga, gb = hvd.grouped_allgather([x, y], name="g.gag")
    (ga.sum() * w + gb.sum() * w).backward()
    c.check(close(x.grad, torch.full((r + 1,), total / n)) and close(y.grad, torch.full((1,), total / n)),
            "grad of grouped allgather")
    root = 1 % n
    x = torch.ones(4, requires_grad=True)
    (hvd.broadcast(x, root, name="g.bc") * w).sum().backward()
    want = total / n if r == root else 0.0
    c.check(close(x.grad, torch.full((4,), want)), f"grad of broadcast {x.grad}")
    splits = [j + 1 for j in range(n)]
    x = torch.ones(sum(splits), requires_grad=True)
    out, _ = hvd.alltoall(x, splits=splits, name="g.a2a")
    (out * w).sum().backward()
    c.check(x.grad.tolist() == [float(j + 1) for j in range(n) for _ in range(j + 1)], f"grad of alltoall {x.grad}")
    # Horovod's reducescatter gradient: allgather of the gradient, times the set size for Sum.
    for opname, scale in (("sum", float(n)), ("average", 1.0)):
        x = torch.ones(2 * n + 1, requires_grad=True)
        (hvd.reducescatter(x, op=OPS[opname], name=f"g.rs.{opname}") * w).sum().backward()
        rows = [2 + (1 if j < 1 else 0) for j in range(n)]
        want = torch.tensor([(j + 1) * scale for j in range(n) for _ in range(rows[j])])
        c.check(close(x.grad, want), f"grad of {opname} reducescatter {x.grad}")


def horovod_regressions(c, r, n) -> None:
    """What Horovod 0.28.1's own test_torch.py found wrong here once."""
    # test_horovod_(grouped_)reducescatter_grad(_average): the gradient is Horovod's, not the summed loss's.
    for opname, want in (("sum", float(n)), ("average", 1.0)):
        x = torch.rand(4 * n, 3, requires_grad=True)
        hvd.reducescatter(x, op=OPS[opname], name=f"hr.rs.{opname}").backward(torch.ones(4, 3))
        c.check(close(x.grad, torch.full((4 * n, 3), want)), f"Horovod's {opname} reducescatter gradient {x.grad}")
        a, b = torch.rand(4 * n, requires_grad=True), torch.rand(2 * n, 2, requires_grad=True)
        ga, gb = hvd.grouped_reducescatter([a, b], op=OPS[opname], prescale_factor=0.5, name=f"hr.grs.{opname}")
        torch.autograd.backward([ga, gb], [torch.ones(4), torch.ones(2, 2)])
        c.check(close(a.grad, torch.full((4 * n,), 0.5 * want)) and close(b.grad, torch.full((2 * n, 2), 0.5 * want)),
                f"Horovod's grouped {opname} reducescatter gradient {a.grad} {b.grad}")
    # test_horovod_reducescatter_adasum: refused on every rank with a RuntimeError, nothing queued.
    for call in (lambda: hvd.reducescatter(torch.ones(2 * n), op=hvd.Adasum),
                 lambda: hvd.grouped_reducescatter_async([torch.ones(2 * n)], op=hvd.Adasum)):
        expect(c, RuntimeError, call, "reducescatter with Adasum", "does not support Adasum")
    # test_broadcast_state_no_grad: a fresh optimizer over a parameter without gradients (an int
    # one) broadcasts; a parameter that had no gradient keeps the zero one, as in Horovod.
    model = torch.nn.Module()
    model.a = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32), requires_grad=False)
    model.b = torch.nn.Parameter(torch.rand(4))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=1e-6, momentum=0.9,
                                                   nesterov=True), named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    c.check(model.a.grad is None and model.b.grad is not None and torch.equal(model.b.grad, torch.zeros(4)),
            f"broadcast_optimizer_state without gradients: {model.a.grad} {model.b.grad}")
    # A fresh optimizer whose gradients must be sparse (SparseAdam) gets its state too.
    emb = torch.nn.Embedding(5, 2, sparse=True)
    hvd.broadcast_optimizer_state(torch.optim.SparseAdam(emb.parameters(), lr=0.01 * (r + 1)), root_rank=0, model=emb)


def process_sets(c, r, n, mine, other) -> None:
    table = _basics._get_process_set_ids_and_ranks()
    c.check(table[mine.process_set_id] == mine.ranks and table[0] == list(range(n)), f"process set table {table}")
    got = hvd.allreduce(torch.full((3,), float(r)), op=hvd.Sum, name="ps.ar", process_set=mine)
    c.check(close(got, torch.full((3,), float(sum(mine.ranks)))), "allreduce in a process set")
    got = hvd.allgather(torch.tensor([r]), name="ps.ag", process_set=mine)
    c.check(got.tolist() == mine.ranks, "allgather in a process set")
    got = hvd.broadcast(torch.tensor([r]), mine.ranks[-1], name="ps.bc", process_set=mine)
    c.check(got.tolist() == [mine.ranks[-1]], "broadcast in a process set")
    obj = hvd.broadcast_object({"from": r}, mine.ranks[0], name="ps.obj", process_set=mine)
    c.check(obj == {"from": mine.ranks[0]}, "broadcast_object in a process set")
    hvd.barrier(process_set=mine)
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(1), name="ps.x", process_set=other), "foreign set",
           "not a member")


def helpers(c, r, n) -> None:
    torch.manual_seed(r)  # different weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    flat = torch.cat([v.reshape(-1).double() for _, v in sorted(model.state_dict().items())])
    c.check(close(hvd.broadcast(flat, 0, name="check.params"), flat), "broadcast_parameters(state_dict)")
    torch.manual_seed(10 + r)
    model2 = torch.nn.Linear(3, 3)
    hvd.broadcast_parameters(list(model2.named_parameters()), root_rank=n - 1)
    flat = torch.cat([p.detach().reshape(-1) for p in model2.parameters()])
    c.check(close(hvd.broadcast(flat, n - 1, name="check.named"), flat), "broadcast_parameters(named)")
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1), betas=(0.8, 0.9 + 0.01 * r))
    for _ in range(r + 1):  # different state on every rank
        opt.zero_grad()
        model(torch.randn(5, 4)).sum().backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0, model=model)
    g = opt.param_groups[0]
    c.check(g["lr"] == 0.01 and g["betas"] == (0.8, 0.9), f"optimizer options from root: {g['lr']} {g['betas']}")
    states = [s for s in opt.state.values()]
    flat = torch.cat([torch.cat([s["exp_avg"].reshape(-1), s["exp_avg_sq"].reshape(-1), s["step"].reshape(-1)])
                      for s in states])
    c.check(close(hvd.broadcast(flat, 0, name="check.optstate"), flat) and float(states[0]["step"]) == 1.0,
            "broadcast_optimizer_state tensors")
    fresh = torch.nn.Linear(2, 2)
    before = [p.detach().clone() for p in fresh.parameters()]
    sgd = torch.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1 * (r + 1))
    hvd.broadcast_optimizer_state(sgd, root_rank=0)
    c.check(sgd.param_groups[0]["weight_decay"] == 0.1 and
            all(torch.equal(a, b) for a, b in zip(before, fresh.parameters())),
            "fresh optimizer: options from root, parameters untouched")
    c.check(hvd.broadcast_object({"r": r, "f": lambda v: v + 1} if r == 0 else None, 0, name="obj")["f"](1) == 2,
            "broadcast_object (with a lambda, via cloudpickle)")
    c.check(hvd.allgather_object({"r": r, "pad": "x" * r}) == [{"r": k, "pad": "x" * k} for k in range(n)],
            "allgather_object")
    idx = torch.tensor([[r % 3, 2], [0, 1]])
    sp = torch.sparse_coo_tensor(idx, torch.tensor([1.0 + r, 2.0]), (3, 3))
    for opname, op in (("sum", hvd.Sum), ("average", hvd.Average)):
        got = hvd.synchronize(hvd.sparse_allreduce_async(sp, name=f"sp.{opname}", op=op))
        dense = [torch.sparse_coo_tensor(torch.tensor([[k % 3, 2], [0, 1]]), torch.tensor([1.0 + k, 2.0]),
                                         (3, 3)).to_dense() for k in range(n)]
        c.check(got.is_sparse and close(got.to_dense(), reference(dense, opname, torch.float32)),
                f"sparse_allreduce_async {opname}")
    handle = hvd.sparse_allreduce_async(sp, name="sp.callable", op=hvd.Sum)  # Horovod's handle is a callable
    c.check(callable(handle) and close(handle().to_dense(), reference(dense, "sum", torch.float32)),
            "sparse_allreduce_async handle called")


def join_and_barrier(c, r, n) -> None:
    if r == 0:
        got = hvd.allreduce(torch.full((3,), 5.0), op=hvd.Sum, name="join.extra")
        c.check(close(got, torch.full((3,), 5.0)), f"joined ranks contribute zeros: {got}")
        # As Horovod: joined ranks cannot take part in an allgather or a broadcast.
        for what, fn in (("allgather", lambda: hvd.allgather(torch.ones(2, 1), name="join.ag")),
                         ("broadcast", lambda: hvd.broadcast(torch.ones(2), root_rank=0, name="join.bc"))):
            try:
                fn()
                c.check(False, f"{what} while others joined should raise")
            except hvd.HorovodInternalError as e:
                c.check("has joined" in str(e), f"{what} while others joined: {e}")
    last = hvd.join()
    c.check(last == 0, f"join returns the last rank to join: {last}")
    hvd.barrier()


def main() -> None:
    c = checker()
    import os

    n = int(os.environ["LIGHTCC_SIZE"])
    evens, odds = hvd.ProcessSet(range(0, n, 2)), hvd.ProcessSet(range(1, n, 2))
    hvd.init(process_sets=[evens, odds])
    r = hvd.rank()
    c.check(hvd.size() == n and _basics.size() == n and hvd.is_initialized(), "basics")
    from lightcc.common import build_info

    # One meaning on every front: lightcc's own CUDA kernels, the NCCL the engine loads.
    c.check(not hvd.mpi_built() and not hvd.gloo_built() and hvd.cuda_built() == build_info.cuda_built() and
            hvd.nccl_built() == build_info.nccl_version(), "build facts")
    allreduce_forms(c, r, n)
    gather_scatter(c, r, n)
    gradients(c, r, n)
    horovod_regressions(c, r, n)
    process_sets(c, r, n, evens if r % 2 == 0 else odds, odds if r % 2 == 0 else evens)
    helpers(c, r, n)
    join_and_barrier(c, r, n)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
