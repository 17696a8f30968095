"""Lightning's DDP strategy over torch.distributed's "lightcc" backend (or gloo, to compare).

    python examples/pytorch/lightning_ddp.py                  # 2 CPU processes, lightcc
    python examples/pytorch/lightning_ddp.py --backend gloo

Lightning starts the second process itself (it runs this script again) and makes the process
group with `DDPStrategy(process_group_backend=...)`: that argument is the only lightcc-specific
line. Trains a small MLP on synthetic data, then checks what data parallelism promises: every
rank holds the same weights, equal to one process training on the union of the ranks' batches.
Each rank prints one line ending in "0 failed" when both hold.
"""
from __future__ import annotations

import argparse
import os

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, Dataset

BATCH = 16


class Synthetic(Dataset):
    """Fixed samples; rank r's i-th is row i * size + r (read once the process group exists)."""

    def __init__(self, n: int, size: int) -> None:
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(n, 32, generator=g)
        self.y = (self.x.sum(1, keepdim=True) > 0).float()
        self.size = size

    def __len__(self) -> int:
        return len(self.x) // self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        row = i * self.size + dist.get_rank()
        return self.x[row], self.y[row]


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))


class Classifier(L.LightningModule):
    """The MLP, trained with SGD and momentum."""

    def __init__(self) -> None:
        super().__init__()
        self.net = make_model()
        self.loss = torch.nn.BCEWithLogitsLoss()

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return self.loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


def reference(data: Synthetic, steps: int, size: int) -> torch.Tensor:
    """One process on the union of the ranks' batches (DDP averages the gradients)."""
    net, loss = make_model(), torch.nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        losses = []
        for r in range(size):
            rows = [(step * BATCH + i) * size + r for i in range(BATCH)]
            losses.append(loss(net(data.x[rows]), data.y[rows]))
        opt.zero_grad()
        (sum(losses) / size).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="lightcc", help="torch.distributed backend (default lightcc)")
    parser.add_argument("--devices", type=int, default=2, help="processes on this machine")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    if args.backend == "lightcc":
        import lightcc.torch  # noqa: F401  (registers the backend where torch's autoload is off)
    data = Synthetic(BATCH * args.devices * args.steps, args.devices)
    model = Classifier()
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, max_epochs=1,
                        strategy=DDPStrategy(process_group_backend=args.backend),
                        use_distributed_sampler=False,  # the dataset splits the samples itself
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, DataLoader(data, batch_size=BATCH, shuffle=False))

    rank, size = dist.get_rank(), dist.get_world_size()
    flat = torch.cat([p.detach().reshape(-1) for p in model.net.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(everyone, flat)
    failed = []
    if not all(torch.equal(everyone[0], other) for other in everyone):
        failed.append("ranks hold different weights")
    expected = reference(data, args.steps, size)
    if not torch.allclose(flat, expected, rtol=1e-4, atol=1e-5):
        failed.append(f"weights differ from one-process training by {float((flat - expected).abs().max()):.3g}")
    print(f"rank {rank} of {size} ({dist.get_backend()}, pid {os.getpid()}): {trainer.global_step} steps; "
          f"{'; '.join(failed) + '; ' if failed else ''}{1 - bool(failed)} passed, {len(failed)} failed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
