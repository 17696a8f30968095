"""One rank of the ETTR race's torchrun system: DDP over gloo with a disk checkpoint every N steps (what users run today).

    torchrun --nnodes 4:4 --max-restarts 20 --rdzv-backend c10d ... ettr_torchrun_worker.py --ckpt DIR

Started (and restarted after every failure) by torchrun's agent: loads the newest checkpoint in
DIR if there is one, trains the example's model (ettr_task) and rank 0 writes a checkpoint every
`--ckpt-every` steps (to a temporary file, then renamed: a kill mid-write leaves the previous one).
Rank 0 prints a ``step`` line per step; the steps after the last checkpoint are lost on a failure.
"""
from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from benchmarks.elastic.ettr_task import example, task_args


def main() -> int:
    p = task_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    p.add_argument("--ckpt", required=True, help="checkpoint directory (shared by every host)")
    p.add_argument("--ckpt-every", type=int, default=50)
    p.add_argument("--timeout", type=float, default=10.0, help="gloo's collective timeout, seconds")
    args = p.parse_args()
    ex = example()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, size = dist.get_rank(), dist.get_world_size()
    net = ex.build(args.model)
    features, classes = net[0].in_features, net[-1].out_features
    path = Path(args.ckpt) / "ckpt.pt"
    step = 0
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    if path.exists():
        saved = torch.load(path, weights_only=False)
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        if rank == 0:
            print(f"restart from step {step} {time.time():.3f} {size}", flush=True)
    model = DDP(net)  # broadcasts rank 0's weights: every rank loaded the same checkpoint anyway
    while step < args.steps:
        x, y = ex.batch(step, rank, size, args.global_batch, features, classes)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") * size / args.global_batch
        loss.backward()
        optimizer.step()
        if args.step_time:
            time.sleep(args.step_time)
        step += 1
        if rank == 0:
            print(f"step {step} {time.time():.3f} {size} {ex.digest(net)}", flush=True)
            if step % args.ckpt_every == 0:
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, tmp)
                os.replace(tmp, path)
    digests = [None] * size
    dist.all_gather_object(digests, ex.digest(net))
    identical = len(set(digests)) == 1
    if rank == 0:
        print(f"eval {ex.eval_loss(net, features, classes):.6f}", flush=True)
        print(f"final {step} identical={identical}", flush=True)
    del model  # DDP before its group: over gloo the reverse can deadlock (pytorch/pytorch#56297)
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
