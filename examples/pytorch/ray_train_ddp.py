"""Ray Train's TorchTrainer over torch.distributed's "lightcc" backend (or gloo, to compare).

    python examples/pytorch/ray_train_ddp.py                  # a local Ray cluster, 2 CPU workers
    python examples/pytorch/ray_train_ddp.py --backend gloo

Ray starts the workers and makes their process group from `TorchConfig(backend=...)`: that
argument is the only lightcc-specific line (lightcc must be installed where the workers run;
torch's backend autoload registers it there). Each worker trains a small MLP with DDP
(`ray.train.torch.prepare_model`) on its share of synthetic data and checks that every worker
holds the same weights, equal to one process training on the union of the batches; a worker
that finds otherwise fails the run, and the driver's last line ends in "0 failed" when none did.
"""
from __future__ import annotations

import argparse
import os
from typing import Any, Dict

import torch

BATCH = 16


def batch(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(BATCH, 32, generator=g)
    return x, (x.sum(1, keepdim=True) > 0).float()


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))


def train_worker(config: Dict[str, Any]) -> None:
    """One Ray Train worker: DDP training, then the checks, reported to the driver."""
    import ray.train
    import ray.train.torch
    import torch.distributed as dist

    rank, size = dist.get_rank(), dist.get_world_size()
    net = ray.train.torch.prepare_model(make_model())
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for step in range(config["steps"]):
        x, y = batch(step, rank)
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    ref = make_model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for step in range(config["steps"]):
        ref_opt.zero_grad()
        (sum(loss_fn(ref(x), y) for x, y in (batch(step, r) for r in range(size))) / size).backward()
        ref_opt.step()
    module = net.module if hasattr(net, "module") else net
    flat = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(everyone, flat)
    failed = []
    if not all(torch.equal(everyone[0], other) for other in everyone):
        failed.append("workers hold different weights")
    expected = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    if not torch.allclose(flat, expected, rtol=1e-4, atol=1e-5):
        failed.append(f"weights differ from one-process training by {float((flat - expected).abs().max()):.3g}")
    line = (f"worker {rank} of {size} ({dist.get_backend()}, pid {os.getpid()}): {config['steps']} steps; "
            f"{'; '.join(failed) + '; ' if failed else ''}{1 - bool(failed)} passed, {len(failed)} failed")
    print(line, flush=True)
    if failed:  # fails the run: TorchTrainer.fit raises on the driver
        raise RuntimeError(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="lightcc", help="torch.distributed backend (default lightcc)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--node-ip", default=None, help="address Ray binds (default: Ray's choice)")
    args = parser.parse_args()

    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    # A local cluster with a logical CPU per worker and one for Ray's own actors, whatever the
    # machine has: the workers are light.
    ray.init(num_cpus=args.workers + 1, include_dashboard=False,
             _node_ip_address=args.node_ip)  # None: Ray's choice
    trainer = TorchTrainer(train_worker, train_loop_config={"steps": args.steps},
                           scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
                           torch_config=TorchConfig(backend=args.backend),
                           run_config=RunConfig(storage_path=os.path.abspath("ray_results"), name="lightcc-ddp"))
    trainer.fit()  # raises if a worker failed its checks
    print(f"driver: {args.workers} workers trained over {args.backend}; 0 failed", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
