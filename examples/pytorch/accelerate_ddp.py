"""Hugging Face Accelerate over torch.distributed's "lightcc" backend (or gloo, to compare), launched by torchrun.

    torchrun --standalone --nproc-per-node 2 examples/pytorch/accelerate_ddp.py
    torchrun --standalone --nproc-per-node 2 examples/pytorch/accelerate_ddp.py --backend gloo

On CPU, Accelerate picks gloo (or MPI) itself and refuses another backend named in
`InitProcessGroupKwargs`, but it adopts a process group that already exists: so the script makes
the group first, `dist.init_process_group("lightcc")`, and Accelerate's `prepare` wraps the model
in DDP over it. (On GPUs, `Accelerator(kwargs_handlers=[InitProcessGroupKwargs(backend="lightcc")])`
is the way: there Accelerate honours the name.) Trains a small MLP on synthetic data and checks
that every rank holds the same weights, equal to one process training on the union of the
batches; each rank prints one line ending in "0 failed" when both hold.
"""
from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from accelerate import Accelerator

BATCH = 16


def batch(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, 32, generator=g)
    return x, (x.sum(1, keepdim=True) > 0).float()


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="lightcc", help="torch.distributed backend (default lightcc)")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    if args.backend == "lightcc":
        import lightcc.torch  # noqa: F401  (registers the backend where torch's autoload is off)
    dist.init_process_group(args.backend)  # before Accelerator, which adopts it
    accelerator = Accelerator(cpu=True)
    rank, size = accelerator.process_index, accelerator.num_processes
    net = make_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    net, opt = accelerator.prepare(net, opt)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for step in range(args.steps):
        x, y = batch(step, rank)
        opt.zero_grad()
        accelerator.backward(loss_fn(net(x), y))
        opt.step()

    ref = make_model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        ref_opt.zero_grad()
        (sum(loss_fn(ref(x), y) for x, y in (batch(step, r) for r in range(size))) / size).backward()
        ref_opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in accelerator.unwrap_model(net).parameters()])
    everyone = accelerator.gather(flat[None]).reshape(size, -1)
    failed = []
    if not all(torch.equal(everyone[0], other) for other in everyone):
        failed.append("ranks hold different weights")
    expected = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    if not torch.allclose(flat, expected, rtol=1e-4, atol=1e-5):
        failed.append(f"weights differ from one-process training by {float((flat - expected).abs().max()):.3g}")
    print(f"rank {rank} of {size} ({dist.get_backend()}, pid {os.getpid()}): {args.steps} steps; "
          f"{'; '.join(failed) + '; ' if failed else ''}{1 - bool(failed)} passed, {len(failed)} failed", flush=True)
    accelerator.end_training()  # destroys the process group


if __name__ == "__main__":
    main()
