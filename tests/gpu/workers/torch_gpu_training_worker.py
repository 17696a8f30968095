"""DistributedOptimizer on a CUDA MLP: identical weights on every rank; dense (and 2D) equal single-process training.

argv[1] names the mode (dense, 2d, topk, 2d-topk) the test set through LIGHT_* flags; the worker
only decides what to expect from it.
"""
from __future__ import annotations

import hashlib
import sys

import torch
import torch.nn.functional as F
from gpu_helpers import setup_torch
from torch_helpers import checker

import lightcc.torch as hvd

DEV = setup_torch()
PER_RANK = 8
STEPS = 6
IN, HIDDEN, OUT = 64, 1024, 8  # the first weight is 256 KiB: above the test's top-k threshold, the rest below


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, OUT)).to(DEV)


def batch(step: int, n: int):
    """The combined batch of all n ranks at this step (made on the CPU, identical everywhere)."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(PER_RANK * n, IN, generator=g).to(DEV), torch.randn(PER_RANK * n, OUT, generator=g).to(DEV)


def sgd(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def train_distributed(r: int, n: int) -> torch.nn.Module:
    model = mlp()
    opt = hvd.DistributedOptimizer(sgd(model), named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for step in range(STEPS):
        x, y = batch(step, n)
        opt.zero_grad()
        F.mse_loss(model(x[r * PER_RANK:(r + 1) * PER_RANK]), y[r * PER_RANK:(r + 1) * PER_RANK]).backward()
        opt.step()
    return model


def train_single(n: int) -> torch.nn.Module:
    """The same training in this process alone on the combined batch (the mean of the ranks' mean losses)."""
    model = mlp()
    opt = sgd(model)
    for step in range(STEPS):
        x, y = batch(step, n)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return model


def digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    mode = sys.argv[1]
    c = checker()
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    model = train_distributed(r, n)
    params = list(model.parameters())
    c.check(all(p.device == DEV for p in params), f"{mode}: parameters left {DEV}: {[str(p.device) for p in params]}")
    c.check(all(bool(torch.isfinite(p).all()) for p in params), f"{mode}: non-finite weights after training")
    init = mlp()
    c.check(any(not torch.equal(p.detach(), q.detach()) for p, q in zip(params, init.parameters())),
            f"{mode}: training did not change the weights")
    digests = hvd.allgather_object(digest(model), name="digests")
    c.check(len(set(digests)) == 1, f"{mode}: final weights differ between ranks (sha256 per rank: {digests})")
    if r == 0:
        ref = train_single(n)
        worst = max(float((p.detach() - q.detach()).abs().max()) for p, q in zip(params, ref.parameters()))
        if "topk" in mode:
            # Top-k at 1 % sends a sparse update for the big layer: equal to dense would mean it never ran.
            diff = float((params[0].detach() - ref[0].weight.detach()).abs().max())
            c.check(diff > 1e-6, f"{mode}: the {IN}x{HIDDEN} layer trained exactly as dense (top-k not applied?)")
        else:
            c.check(worst < 1e-4, f"{mode}: weights differ from single-process training by {worst:.3g} (tol 1e-4)")
        print(f"rank 0: {mode} at {n} ranks, max |distributed - single| = {worst:.3g}", flush=True)
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
