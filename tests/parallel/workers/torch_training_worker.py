"""DistributedOptimizer and SyncBatchNorm at N ranks against single-process training on the combined batch."""
from __future__ import annotations

import copy
import warnings

import torch
import torch.nn.functional as F
from torch_helpers import checker, close

import lightcc.torch as hvd

PER_RANK = 4


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def batch(step: int, n: int, micro: int = 0):
    g = torch.Generator().manual_seed(100 * step + micro)
    return torch.randn(PER_RANK * n, 6, generator=g), torch.randn(PER_RANK * n, 3, generator=g)


def shard(t: torch.Tensor, r: int) -> torch.Tensor:
    return t[r * PER_RANK:(r + 1) * PER_RANK]


def params_close(a: torch.nn.Module, b: torch.nn.Module, tol: float) -> bool:
    return all(close(p.detach(), q.detach(), tol) for p, q in zip(a.parameters(), b.parameters()))


def compare(c, r, n, what: str, make_opt, steps: int = 4, passes: int = 1, tol: float = 1e-5,
            loss_scale: float = 1.0, **kwargs) -> None:
    """Train a copy with DistributedOptimizer on this rank's shard and one on the full batch locally."""
    dist_model, ref_model = mlp(), mlp()
    opt = hvd.DistributedOptimizer(make_opt(dist_model.parameters()), named_parameters=dist_model.named_parameters(),
                                   backward_passes_per_step=passes, **kwargs)
    ref_opt = make_opt(ref_model.parameters())
    for step in range(steps):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(passes):
            x, y = batch(step, n, micro)
            F.mse_loss(dist_model(shard(x, r)), shard(y, r)).backward()
            (F.mse_loss(ref_model(x), y) * loss_scale).backward()
        opt.step()
        ref_opt.step()
    c.check(params_close(dist_model, ref_model, tol), f"{what}: weights match single-process training")


def optimizer_equivalence(c, r, n) -> None:
    def sgd(ps):
        return torch.optim.SGD(ps, lr=0.1, momentum=0.9)

    def adam(ps):
        return torch.optim.Adam(ps, lr=0.01)

    compare(c, r, n, "SGD+momentum", sgd)
    compare(c, r, n, "Adam", adam)
    compare(c, r, n, "groups=2", sgd, groups=2)
    compare(c, r, n, "num_groups=1 (deprecated)", sgd, num_groups=1)
    compare(c, r, n, "backward_passes_per_step=2", sgd, passes=2)
    compare(c, r, n, "gradient_predivide_factor=2", sgd, gradient_predivide_factor=2.0)
    compare(c, r, n, "op=Sum", sgd, op=hvd.Sum, loss_scale=float(n))
    compare(c, r, n, "fp16 compression", sgd, tol=2e-2, compression=hvd.Compression.fp16)
    model = mlp()
    layers = list(model.children())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   groups=[[layers[0].weight, layers[2].weight]])
    ref = mlp()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    x, y = batch(0, n)
    F.mse_loss(model(shard(x, r)), shard(y, r)).backward()
    F.mse_loss(ref(x), y).backward()
    opt.step()
    ref_opt.step()
    c.check(params_close(model, ref, 1e-5), "explicit parameter groups, unnamed parameters")
    c.check(isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD", "dynamic subclass of the user's class")


def skip_synchronize(c, r, n) -> None:
    model, ref = mlp(), mlp()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    for step in range(3):
        opt.zero_grad()
        ref_opt.zero_grad()
        x, y = batch(step, n)
        F.mse_loss(model(shard(x, r)), shard(y, r)).backward()
        F.mse_loss(ref(x), y).backward()
        opt.synchronize()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.05)
        with opt.skip_synchronize():
            opt.step()
        ref_opt.step()
    c.check(params_close(model, ref, 1e-5), "synchronize + clip + skip_synchronize")
    opt.zero_grad()
    F.mse_loss(model(shard(x, r)), shard(y, r)).backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        opt.step()
    c.check(any("skip_synchronize" in str(w.message) for w in seen), "step after synchronize warns")
    opt.set_backward_passes_per_step(2)
    c.check(opt.backward_passes_per_step == 2, "set_backward_passes_per_step")


class TwoBranch(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.a = torch.nn.Linear(6, 3)
        self.b = torch.nn.Linear(6, 3)

    def forward(self, x: torch.Tensor, use_a: bool) -> torch.Tensor:
        return self.a(x) if use_a else self.b(x)


def unused_parameters(c, r, n) -> None:
    model, ref = TwoBranch(), TwoBranch()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        ref_opt.zero_grad()
        x, y = batch(step, n)
        # Rank r uses branch a on even steps+ranks only: a dynamic graph that differs per rank.
        F.mse_loss(model(shard(x, r), (r + step) % 2 == 0), shard(y, r)).backward()
        total = sum(F.mse_loss(ref(shard(x, k), (k + step) % 2 == 0), shard(y, k)) for k in range(n)) / n
        total.backward()
        opt.step()
        ref_opt.step()
    c.check(params_close(model, ref, 1e-5), "unused parameters are zero-filled, no hang, same weights")


def sparse_gradients(c, r, n) -> None:
    for as_dense in (False, True):
        torch.manual_seed(2)
        emb = torch.nn.Embedding(10, 4, sparse=True)
        ref = copy.deepcopy(emb)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.5),
                                       named_parameters=emb.named_parameters(), sparse_as_dense=as_dense)
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
        for step in range(3):
            opt.zero_grad()
            ref_opt.zero_grad()
            idx = torch.Generator().manual_seed(step)
            ids = torch.randint(0, 10, (n, 5), generator=idx)
            emb(ids[r]).pow(2).sum().backward()
            (sum(ref(ids[k]).pow(2).sum() for k in range(n)) / n).backward()
            opt.step()
            ref_opt.step()
        c.check(emb.weight.grad.is_sparse and close(emb.weight.detach(), ref.weight.detach(), 1e-5),
                f"sparse embedding gradients (sparse_as_dense={as_dense})")


def sync_batch_norm(c, r, n) -> None:
    counts = [k + 2 for k in range(n)]  # uneven local batches
    start = sum(counts[:r])
    g = torch.Generator().manual_seed(7)
    full = torch.randn(sum(counts), 3, 5, 5, generator=g) * 3 + 1
    weights = torch.randn(sum(counts), 3, 5, 5, generator=g)
    for momentum in (0.1, None):
        torch.manual_seed(3)
        sync = hvd.SyncBatchNorm(3, momentum=momentum)
        ref = torch.nn.BatchNorm2d(3, momentum=momentum)
        with torch.no_grad():
            sync.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
            sync.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
            ref.load_state_dict(sync.state_dict())
        for _ in range(2):
            x = full[start:start + counts[r]].clone().requires_grad_()
            xr = full.clone().requires_grad_()
            out = sync(x)
            want = ref(xr)
            (out * weights[start:start + counts[r]]).sum().backward()
            (want * weights).sum().backward()
            c.check(close(out.detach(), want.detach()[start:start + counts[r]], 1e-4), f"SyncBN output m={momentum}")
            c.check(close(x.grad, xr.grad[start:start + counts[r]], 1e-4), f"SyncBN input gradient m={momentum}")
        wgrad = hvd.allreduce(sync.weight.grad, op=hvd.Sum, name="bn.wgrad")
        bgrad = hvd.allreduce(sync.bias.grad, op=hvd.Sum, name="bn.bgrad")
        c.check(close(wgrad, ref.weight.grad, 1e-3) and close(bgrad, ref.bias.grad, 1e-3), "SyncBN weight gradients")
        c.check(close(sync.running_mean, ref.running_mean, 1e-5) and close(sync.running_var, ref.running_var, 1e-4),
                f"SyncBN running statistics m={momentum}")
        sync.eval()
        ref.eval()
        c.check(close(sync(full[:2]), ref(full[:2]), 1e-5), "SyncBN eval uses running statistics")
    bn1 = hvd.SyncBatchNorm(4)
    x1 = torch.randn(sum(counts), 4, generator=g)
    ref1 = torch.nn.BatchNorm1d(4)
    c.check(close(bn1(x1[start:start + counts[r]]).detach(), ref1(x1).detach()[start:start + counts[r]], 1e-4),
            "SyncBN on (N, C) input")


def main() -> None:
    c = checker()
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    optimizer_equivalence(c, r, n)
    skip_synchronize(c, r, n)
    unused_parameters(c, r, n)
    sparse_gradients(c, r, n)
    sync_batch_norm(c, r, n)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
