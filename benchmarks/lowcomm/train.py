"""One rank of the low-communication benchmark: the byte LM trained by DDP or DiLoCo over lightcc; rank 0 prints RESULT.

Run as ``lightccrun -np 2 python -m benchmarks.lowcomm.train --method diloco --sync-every 50``
(``python -m lightcc.runner.launch`` from a checkout). Both methods train the same steps with the
same per-rank batch (equal tokens), the same inner AdamW and the same per-rank data stream; rank 0
prints ``RESULT <json>``: validation bits per byte over training, wall time, bytes, whether every
rank ended with identical weights. ``--out FILE`` appends that line to FILE.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from benchmarks.lowcomm.methods import BACKENDS, METHODS, Runner, diloco_workers, init, wrap
from benchmarks.lowcomm.lm import ByteLM, bits_per_byte, load_text, loss_of, windows
from lightcc.torch.lowcomm.diloco import OUTER_MOMENTUM, default_outer_lr


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lowcomm.train", description=__doc__.splitlines()[0])
    p.add_argument("--method", choices=METHODS, required=True,
                   help="ddp; diloco (lightcc's); torchft-diloco (torchft 0.2.0's, on emulated hosts: race.py); "
                   "local (every rank alone: the compute bound)")
    p.add_argument("--backend", choices=BACKENDS, default="lightcc", help="the process group of ddp and local")
    p.add_argument("--hook", choices=["none", "powersgd", "topk"], default="none",
                   help="ddp's compression: torch's PowerSGD hook or lightcc's top-k hook (methods.Ddp)")
    p.add_argument("--powersgd-rank", type=int, default=2)
    p.add_argument("--topk-ratio", type=float, default=0.01)
    p.add_argument("--sync-every", type=int, default=50, help="DiLoCo's H")
    p.add_argument("--fragments", type=int, default=1)
    p.add_argument("--delay", type=int, default=None,
                   help="DiLoCo's delay: inner steps an exchange overlaps (default 0 with one fragment, else 2)")
    p.add_argument("--mix", type=float, default=None,
                   help="DiLoCo's mix α: the share of local progress a merge keeps (default 0 without delay, else 0.5)")
    p.add_argument("--compression", default="none")
    p.add_argument("--islands", choices=["host"], default=None,
                   help="DiLoCo's islands: the ranks of each host train data-parallel, DiLoCo runs between hosts")
    p.add_argument("--sync-warmup", type=int, default=0, help="DiLoCo's warmup_steps: data-parallel steps first")
    p.add_argument("--outer-lr", type=float, default=None,
                   help="both DiLoCos' outer SGD (default DiLoCo's for the number of workers: default_outer_lr)")
    p.add_argument("--outer-momentum", type=float, default=OUTER_MOMENTUM,
                   help="its Nesterov momentum (default DiLoCo's; the papers' is 0.9)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--ctx", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=0, help="inner steps of linear lr warm-up (both methods)")
    p.add_argument("--decay", choices=["none", "cosine"], default="none",
                   help="inner lr decay after warm-up, to --min-lr-ratio x --lr at the last step (both methods)")
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--schedule-steps", type=int, default=None,
                   help="the step the decay ends at (default --steps); a longer run then stays at the minimum, so "
                   "its first N steps match an N-step run's (equal tokens) and the rest go on to a target loss")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--out", type=Path, default=None)
    return p


def digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for t in model.state_dict().values():
        h.update(t.detach().numpy().tobytes())
    return h.hexdigest()


def lr_factor(args: argparse.Namespace, step: int) -> float:
    """The inner lr multiplier after `step` inner steps: linear warm-up, then constant or cosine decay.

    Both methods use the same schedule on the inner optimizer, so they differ only in how ranks combine.
    """
    if step < args.warmup:
        return (step + 1) / args.warmup
    if args.decay == "none":
        return 1.0
    end = args.schedule_steps or args.steps
    done = (step - args.warmup) / max(1, end - args.warmup)
    return args.min_lr_ratio + (1.0 - args.min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, done)))


def main(argv: Optional[List[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    init(args)
    rank, size = dist.get_rank(), dist.get_world_size()
    if args.outer_lr is None:  # resolved here, so the RESULT line records the lr that ran
        args.outer_lr = default_outer_lr(diloco_workers(args, size))
    train, val = load_text()
    torch.manual_seed(args.seed)
    model = ByteLM(ctx=args.ctx)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    runner = wrap(args, model, opt)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(args, step))
    gen = torch.Generator().manual_seed(1000 * args.seed + rank)
    curve, clock = train_loop(args, runner, model, opt, schedule, gen, train, val)
    same = len(set(gathered(digest(model)))) == 1 if args.method != "local" else None
    stats = runner.stats()
    runner.close()
    if rank == 0:
        row = {"method": args.method, "args": {k: str(v) for k, v in vars(args).items()}, "ranks": size,
               "params": sum(p.numel() for p in model.parameters()),
               "tokens_per_rank": args.steps * args.batch * args.ctx,
               "curve": curve, "final_val_bpb": curve[-1]["val_bpb"], **clock, "identical": same, "stats": stats}
        line = "RESULT " + json.dumps(row)
        print(line, flush=True)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a") as f:
                f.write(line + "\n")
    dist.destroy_process_group()


def train_loop(args: argparse.Namespace, runner: Runner, model: torch.nn.Module, opt: torch.optim.Optimizer,
               schedule: Any, gen: torch.Generator, train: torch.Tensor,
               val: torch.Tensor) -> Tuple[List[Dict[str, float]], Dict[str, float]]:
    """Trains --steps steps; the validation curve and the clocks.

    ``train_s`` is wall time without the evaluations (every rank evaluates, as a user's loop
    would not between steps); a curve point's ``train_s`` is that clock when it was taken.
    """
    curve: List[Dict[str, float]] = []
    began, compute, evals = time.perf_counter(), 0.0, 0.0
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        x, y = windows(train, torch.randint(0, len(train) - args.ctx - 2, (args.batch,), generator=gen), args.ctx)
        loss_of(runner.forward, x, y).backward()
        runner.step()
        opt.zero_grad()
        schedule.step()
        if step == args.steps:
            runner.finish()
        compute += time.perf_counter() - t0
        if step % args.eval_every == 0 or step == args.steps:
            t1 = time.perf_counter()
            point = {"step": step, "wall_s": t1 - began, "train_s": t1 - began - evals,
                     "val_bpb": bits_per_byte(model, val, args.ctx)}
            curve.append(point)
            evals += time.perf_counter() - t1
    wall = time.perf_counter() - began
    return curve, {"wall_s": wall, "train_s": wall - evals, "step_loop_s": compute}


def gathered(value: str) -> List[str]:
    """`value` from every rank, through the default process group."""
    out: List[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


if __name__ == "__main__":
    main()
