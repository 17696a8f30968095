"""lightcc.torch error cases: caller mistakes -> ValueError here, cross-rank disagreement -> RuntimeError everywhere."""
from __future__ import annotations

import torch
from torch_helpers import checker, close, expect

import lightcc.torch as hvd


def local_mistakes(c, r, n) -> None:
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(4, 4)[:, ::2]), "non-contiguous", "contiguous")
    expect(c, ValueError, lambda: hvd.allreduce_(torch.ones(4, 4).t()), "non-contiguous in place", "contiguous")
    expect(c, ValueError, lambda: hvd.allgather(torch.ones(4, 4).t()), "non-contiguous allgather", "contiguous")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(3, dtype=torch.complex64)), "complex dtype", "complex64")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(3, dtype=torch.uint32)), "uint32 dtype", "uint32")
    if n & (n - 1):
        expect(c, NotImplementedError, lambda: hvd.allreduce(torch.ones(3), op=hvd.Adasum), "adasum size", "power of 2")
    else:
        expect(c, ValueError, lambda: hvd.allreduce(torch.ones(3, dtype=torch.int32), op=hvd.Adasum, name="ada.int"),
               "adasum int32", "floating-point")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(3), average=True, op=hvd.Sum), "average and op")
    expect(c, ValueError, lambda: hvd.allreduce([1.0, 2.0]), "not a tensor", "torch.Tensor")
    expect(c, ValueError, lambda: hvd.broadcast(torch.ones(3), root_rank=n), "root out of range", "root")
    expect(c, ValueError, lambda: hvd.alltoall(torch.ones(5), splits=[5] + [1] * (n - 1)), "bad splits", "splits")
    expect(c, ValueError, lambda: hvd.allgather(torch.tensor(1.0)), "allgather of a scalar", "dimension")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(2), process_set=hvd.ProcessSet([0])),
           "unregistered process set", "not registered")
    sp = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.tensor([1.0]), (2,))
    expect(c, ValueError, lambda: hvd.sparse_allreduce_async(sp, "sp", hvd.Max), "sparse Max", "Average and Sum")
    expect(c, ValueError, lambda: hvd.allreduce(sp), "sparse into allreduce", "sparse")


def duplicate_name(c, r) -> None:
    # Rank 0's "dup" cannot complete before the others submit theirs, which they do only after
    # rank 0's broadcast, which rank 0 sends after its check.
    a = torch.ones(10)
    if r == 0:
        h = hvd.allreduce_async(a, name="dup")
        expect(c, ValueError, lambda: hvd.allreduce_async(a, name="dup"), "duplicate in-flight name",
               "already in flight")
        hvd.broadcast_(torch.ones(1), 0, name="dup.go")
    else:
        hvd.broadcast_(torch.ones(1), 0, name="dup.go")
        h = hvd.allreduce_async(a, name="dup")
    c.check(close(hvd.synchronize(h), torch.ones(10)), "the first 'dup' still completes")


def cross_rank(c, r, n) -> None:
    err = hvd.HorovodInternalError
    c.check(err is hvd.LightCCInternalError and issubclass(err, RuntimeError), "error hierarchy")
    expect(c, err, lambda: hvd.allreduce(torch.ones(3 + r), name="shape"), "shape mismatch", "Mismatched shapes")
    dtype = torch.float32 if r == 0 else torch.float64
    expect(c, err, lambda: hvd.allreduce(torch.ones(3, dtype=dtype), name="dtype"), "dtype mismatch",
           "Mismatched data types")
    expect(c, err, lambda: hvd.allreduce(torch.ones(3), op=hvd.Sum if r == 0 else hvd.Max, name="op"),
           "op mismatch", "Mismatched reduction ops")
    expect(c, err, lambda: hvd.broadcast(torch.ones(3), root_rank=r % 2 if n > 1 else 0, name="root"),
           "root mismatch", "Mismatched root ranks")
    expect(c, err, lambda: hvd.allgather(torch.ones(2, 2 + r), name="ag.shape"), "allgather trailing dims",
           "Mismatched shapes")
    expect(c, err, lambda: hvd.grouped_allreduce([torch.ones(2), torch.ones(2 + r)], name="grouped.shape"),
           "grouped mismatch", "Mismatched shapes")
    c.check(close(hvd.allreduce(torch.ones(2), name="after"), torch.ones(2)), "collectives work after errors")
    x = torch.ones(n, requires_grad=True)
    y = hvd.reducescatter(x, op=hvd.Max, name="rs.max")
    expect(c, RuntimeError, lambda: y.sum().backward(), "reducescatter Max gradient", "Sum and Average")


def optimizer_guards(c, r, n) -> None:
    model = torch.nn.Linear(3, 1)
    named = list(model.named_parameters())
    expect(c, ValueError, lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                           named_parameters=[named[0], named[0]]),
           "duplicate parameter names", "unique")
    expect(c, ValueError, lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                           named_parameters=[named[0]]),
           "unnamed parameters", "not in it")
    expect(c, ValueError, lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                           named_parameters=[p for _, p in named]),
           "names not tuples", "tuples")
    expect(c, ValueError, lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                           op=hvd.Sum, gradient_predivide_factor=2.0),
           "predivide with Sum", "op=Average")
    if n & (n - 1):
        expect(c, NotImplementedError, lambda: hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                                                        op=hvd.Adasum), "Adasum optimizer", "power of 2")
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=named)
    model(torch.ones(2, 3)).sum().backward()
    expect(c, AssertionError, opt.zero_grad, "zero_grad before step", "zero_grad")
    expect(c, Exception, lambda: model(torch.ones(2, 3)).sum().backward(), "second backward before step",
           "backward_passes_per_step")
    opt.step()
    opt.zero_grad()
    c.check(all(p.grad is None for p in model.parameters()), "zero_grad after step works")
    # Ranks disagree on a gradient's shape: step() raises on every rank, and the optimizer recovers.
    odd = torch.nn.Linear(3, 1 + r)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(odd.parameters(), lr=0.1), named_parameters=odd.named_parameters())
    odd(torch.ones(2, 3)).sum().backward()
    expect(c, hvd.HorovodInternalError, opt.step, "optimizer step with mismatched gradients", "Mismatched shapes")
    opt.zero_grad()
    c.check(all(p.grad is None for p in odd.parameters()), "zero_grad after a failed step")


def reinit(c, n) -> None:
    hvd.shutdown()
    c.check(not hvd.is_initialized(), "not initialized after shutdown")
    expect(c, ValueError, hvd.rank, "rank after shutdown", "init")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(2)), "allreduce after shutdown", "init")
    hvd.init()
    got = hvd.allreduce(torch.full((3,), float(hvd.rank())), op=hvd.Sum, name="reinit")
    c.check(close(got, torch.full((3,), n * (n - 1) / 2.0)), "collectives after init -> shutdown -> init")
    opt = hvd.DistributedOptimizer(torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1))
    c.check(isinstance(opt, torch.optim.SGD), "optimizer after re-init")


def main() -> None:
    c = checker()
    expect(c, ValueError, hvd.rank, "rank before init", "init")
    expect(c, ValueError, lambda: hvd.allreduce(torch.ones(2)), "allreduce before init", "init")
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    local_mistakes(c, r, n)
    duplicate_name(c, r)
    cross_rank(c, r, n)
    optimizer_guards(c, r, n)
    reinit(c, n)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
