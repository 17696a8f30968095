"""Elastic DiLoCo over lightcc: a lost worker is left out of the outer step it missed, a new one starts from θ.

    lightccrun -np 3 --min-np 2 --max-np 3 --host-discovery-script ./hosts.sh \\
        python examples/pytorch/elastic_diloco.py --steps 200 --sync-every 10

Each rank trains its own shard (DiLoCo's inner steps, AdamW) and every `--sync-every` steps the
ranks average their pseudo-gradients (docs/lowcomm.md). Under lightccrun's elastic driver a killed
worker costs a re-formation, not the job: survivors keep their local progress, and a worker that
joins (a warm standby, or a new host) starts from the shared weights. Rank 0 prints
``step <n> <unix time> <world size> <digest of the shared weights>`` after each commit; every rank
prints ``stats rank=<r> inner_taken=<n> recoveries=<n> redone=<n> member_since=<step>`` at the end,
and rank 0 ``eval <loss>`` and ``final <n> identical=<True|False>`` (exit code 1 when ranks differ
after `finish()`).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import time

import torch
import torch.distributed as dist

import lightcc.torch  # noqa: F401  (registers the "lightcc" backend and its elastic rendezvous)
import lightcc.torch.elastic as elastic
from lightcc.torch import DiLoCo


def _islands(text: str) -> str:
    if text in ("none", "host") or (text.startswith("env:") and len(text) > 4):
        return text
    raise argparse.ArgumentTypeError(f"expected none, host or env:VAR, not {text!r}")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=100, help="inner steps to train")
    p.add_argument("--sync-every", type=int, default=10, help="H: inner steps between outer steps")
    p.add_argument("--fragments", type=int, default=1, help="> 1: Streaming DiLoCo")
    p.add_argument("--compression", default="none", help="outer-gradient codec (docs/lowcomm.md)")
    p.add_argument("--islands", type=_islands, default="none",
                   help="host: each host's ranks train data-parallel, DiLoCo runs between hosts; env:VAR: the "
                        "ranks sharing VAR's value (a region, a rack) do")
    p.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--commit-every", type=int, default=1, help="steps between commits; 1: every step")
    p.add_argument("--step-time", type=float, default=0.0, help="extra seconds per step, so a run can be watched")
    return p.parse_args()


def batch(step: int, rank: int, n: int, features: int = 64, classes: int = 10):
    """Rank `rank`'s batch of step `step`: its own samples, labelled by a fixed random linear teacher."""
    g = torch.Generator().manual_seed(1_000_003 * (step + 1) + 7919 * rank)
    x = torch.randn(n, features, generator=g)
    teacher = torch.randn(features, classes, generator=torch.Generator().manual_seed(12345))
    return x, (x @ teacher).argmax(1)


def build() -> torch.nn.Module:
    """The model: an MLP from 64 features to 10 classes (the DiLoCo ETTR race's torchft worker builds it too)."""
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                               torch.nn.ReLU(), torch.nn.Linear(256, 10))


def digest(tensors) -> str:
    h = hashlib.sha1()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


class LoggedState(elastic.TorchState):
    """Prints rank 0's line as each commit is saved."""

    def save(self) -> None:
        super().save()
        if dist.get_rank() == 0:
            shared = digest(self.diloco.shared_weights())
            print(f"step {self.step} {time.time():.3f} {dist.get_world_size()} {shared}", flush=True)


def main() -> int:
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("lightcc")
    model = build()
    inner = torch.optim.AdamW(model.parameters(), lr=args.lr)
    diloco = DiLoCo(model, inner, sync_every=args.sync_every, fragments=args.fragments,
                    compression=args.compression, islands=None if args.islands == "none" else args.islands)
    # Neither the model nor the inner optimizer goes in the state: DiLoCo's handler keeps them per rank.
    state = LoggedState(diloco=diloco, step=0)
    joined = {"step": None}

    @elastic.run
    def train(state: LoggedState) -> None:
        if joined["step"] is None:
            joined["step"] = state.step
        while state.step < args.steps:
            x, y = batch(state.step, dist.get_rank(), args.batch)
            inner.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            diloco.step()
            if args.step_time:
                time.sleep(args.step_time)
            state.step += 1
            if state.step % args.commit_every == 0 or state.step == args.steps:
                state.commit()
        diloco.finish()

    train(state)
    s = diloco.stats()
    print(f"stats rank={dist.get_rank()} inner_taken={s['inner_taken']} recoveries={s['recoveries']} "
          f"redone={s['redone_exchanges']} member_since={joined['step']} workers={s['workers']} "
          f"outer_lr={s['outer_lr']}", flush=True)
    digests = [None] * dist.get_world_size()
    dist.all_gather_object(digests, digest(model.parameters()))
    identical = len(set(digests)) == 1
    if dist.get_rank() == 0:
        x, y = batch(10**6, 0, 1024)
        with torch.no_grad():
            print(f"eval {torch.nn.functional.cross_entropy(model(x), y).item():.6f}", flush=True)
        print(f"final {state.step} identical={identical}", flush=True)
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
