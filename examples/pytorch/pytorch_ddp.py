"""DistributedDataParallel over torch.distributed's "lightcc" backend (or gloo, to compare), launched by torchrun.

    torchrun --standalone --nproc-per-node 2 examples/pytorch/pytorch_ddp.py
    torchrun --standalone --nproc-per-node 2 examples/pytorch/pytorch_ddp.py --backend gloo

Trains a small MLP on synthetic data for a few steps, then checks what data parallelism
promises: every rank holds the same weights, equal to one process training on the union of
the ranks' batches. It prints one line per rank ending in "0 failed" when both hold.
The only lightcc-specific line is the backend's name (lightcc registers it when installed;
`import lightcc.torch` does too).
"""
from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist


def batch(step: int, rank: int, size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(size, 32, generator=g)
    return x, (x.sum(1, keepdim=True) > 0).float()


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="lightcc", help="torch.distributed backend (default lightcc)")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    if args.backend == "lightcc":
        import lightcc.torch  # noqa: F401  (registers the backend where torch's autoload is off)
    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    net = torch.nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.perf_counter()
    for step in range(args.steps):
        x, y = batch(step, rank)
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    seconds = time.perf_counter() - start

    # One process on the union of the batches (DDP averages the ranks' gradients).
    ref = model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        ref_opt.zero_grad()
        (sum(loss_fn(ref(x), y) for x, y in (batch(step, r) for r in range(size))) / size).backward()
        ref_opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in net.module.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(everyone, flat)
    failed = []
    if not all(torch.equal(everyone[0], other) for other in everyone):
        failed.append("ranks hold different weights")
    expected = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    if not torch.allclose(flat, expected, rtol=1e-4, atol=1e-5):
        failed.append(f"weights differ from one-process training by {float((flat - expected).abs().max()):.3g}")
    print(f"rank {rank} of {size} ({dist.get_backend()}, {os.uname().nodename}): {args.steps} steps in "
          f"{seconds:.2f} s; {'; '.join(failed) + '; ' if failed else ''}{1 - bool(failed)} passed, "
          f"{len(failed)} failed", flush=True)
    del net  # DDP before its group: over gloo the reverse can deadlock (pytorch/pytorch#56297)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
