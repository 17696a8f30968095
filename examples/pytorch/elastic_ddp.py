"""Elastic DDP over lightcc: survives a lost rank or host in place, prints one line per committed step.

    lightccrun -np 3 --min-np 2 --max-np 3 --host-discovery-script ./hosts.sh \\
        python examples/pytorch/elastic_ddp.py --steps 200

Rank 0 prints ``step <n> <unix time> <world size> <digest of the weights>`` after each commit
(every step by default, ``--commit-every N``), and
at the end every rank checks that all ranks hold identical weights and rank 0 prints
``final <n> identical=<True|False>`` (the exit code is 1 when they differ), after ``eval <loss>``: the
final model's loss on a fixed batch, to set a run with failures beside a failure-free one. Each step's global batch
is the same whatever the world size (it is drawn from the step number and split over the ranks),
so a run with failures follows the failure-free run's losses commit for commit. See
docs/elastic.md, "torch.distributed users".
"""
from __future__ import annotations

import argparse
import hashlib
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lightcc.torch.elastic as elastic


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=100, help="committed steps to train")
    p.add_argument("--model", choices=["small", "mlp25m"], default="small",
                   help="small: 64->256->256->10; mlp25m: lightcc.models' 25 M-parameter MLP")
    p.add_argument("--global-batch", type=int, default=24, help="samples per step, split over the ranks")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--commit-every", type=int, default=1,
                   help="steps between commits (a failure rolls back to the last one); 1: every step")
    p.add_argument("--step-time", type=float, default=0.0,
                   help="extra seconds per step (stands in for a bigger model, so a run can be watched)")
    return p.parse_args()


def build(name: str) -> torch.nn.Module:
    if name == "mlp25m":
        from lightcc.models import get

        return get("mlp25m").build()
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                               torch.nn.ReLU(), torch.nn.Linear(256, 10))


def batch(step: int, rank: int, size: int, global_batch: int, features: int, classes: int):
    """This rank's share of step `step`'s global batch: the same samples whatever the world size,
    labelled by a fixed random linear teacher (so there is something to learn and the loss falls)."""
    g = torch.Generator().manual_seed(1_000_003 * (step + 1))
    x = torch.randn(global_batch, features, generator=g)
    teacher = torch.randn(features, classes, generator=torch.Generator().manual_seed(12345))
    y = (x @ teacher).argmax(1)
    return x[rank::size], y[rank::size]


def digest(model: torch.nn.Module) -> str:
    h = hashlib.sha1()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def eval_loss(model: torch.nn.Module, features: int, classes: int) -> float:
    """The model's mean loss on a fixed batch of 1,024 samples no step trains on."""
    x, y = batch(10**6, 0, 1, 1024, features, classes)
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(model(x), y).item()


class LoggedState(elastic.TorchState):
    """TorchState that prints rank 0's line as each commit is saved: a failure later in commit()
    (its check for new hosts) still leaves that step committed, and it is printed."""

    def save(self) -> None:
        super().save()
        if dist.get_rank() == 0:
            print(f"step {self.step} {time.time():.3f} {dist.get_world_size()} {digest(self.model)}", flush=True)


def main() -> int:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("lightcc")
    net = build(args.model)
    features, classes = net[0].in_features, net[-1].out_features
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    state = LoggedState(model=model, optimizer=optimizer, step=0, loss=0.0)

    @elastic.run
    def train(state: LoggedState) -> None:
        while state.step < args.steps:
            rank, size = dist.get_rank(), dist.get_world_size()
            x, y = batch(state.step, rank, size, args.global_batch, features, classes)
            optimizer.zero_grad()
            # Every rank's share is weighted by its size, so DDP's average is the global batch's mean.
            loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") * size / args.global_batch
            loss.backward()
            optimizer.step()
            if args.step_time:
                time.sleep(args.step_time)
            state.step += 1
            state.loss = loss.item() / size
            if state.step % args.commit_every and state.step < args.steps:
                continue
            state.commit()

    train(state)
    digests = [None] * dist.get_world_size()
    dist.all_gather_object(digests, digest(model))
    identical = len(set(digests)) == 1
    if dist.get_rank() == 0:
        print(f"eval {eval_loss(model, features, classes):.6f}", flush=True)
        print(f"final {state.step} identical={identical}", flush=True)
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
