"""One replica of the DiLoCo ETTR race's torchft system: torchft 0.2.0's DiLoCo over gloo, healed from a peer.

    TORCHFT_LIGHTHOUSE=http://HOST0:29510 python -m benchmarks.elastic.ettr_torchft_diloco_worker \\
        --addr A --replica-id rN --steps 200 --sync-every 10

It trains examples/pytorch/elastic_diloco.py's model on that example's batches with the same inner
AdamW and the outer Nesterov SGD lightcc's DiLoCo defaults to (`nesterov_outer`, its lr set before
each outer step to `default_outer_lr` of that step's participants, as lightcc's follows its
workers), so the race's two systems differ only in how they survive a loss. One process is one
replica group of one rank; torchft's Manager forms a quorum at each outer step. On a failed outer
step torchft puts every replica's weights back to the last outer step's: the period's inner steps
are trained again. A replica started late heals from a peer over torchft's HTTP transport at its
first quorum.

Replica rN trains on the example's batches of rank N − 1. The replica that was rank 0 in the
last quorum (before the first quorum, r1) prints ``step <n> <unix time> <participants>
<digest of the shared weights>`` after each inner step, n = outer steps × H + inner steps since
(so a discarded period's steps print again); every replica prints ``eval <loss>`` and ``final <n>
replica=<id> digest=<digest>`` at the end.
"""
from __future__ import annotations

import argparse
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from benchmarks.elastic.ettr_task import DILOCO_EXAMPLE, example, replica_args


def main() -> int:
    p = replica_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    p.add_argument("--steps", type=int, default=200, help="inner steps (a multiple of --sync-every)")
    p.add_argument("--sync-every", type=int, default=10)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-time", type=float, default=0.0)
    args = p.parse_args()
    from torchft import Manager
    from torchft.local_sgd import DiLoCo
    from torchft.process_group import ProcessGroupGloo

    from lightcc.torch.lowcomm.diloco import default_outer_lr, nesterov_outer

    ex = example(DILOCO_EXAMPLE)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    store = dist.TCPStore(args.addr, args.store_port, is_master=True, wait_for_workers=False)  # noqa: F841
    model = ex.build()
    inner = torch.optim.AdamW(model.parameters(), lr=args.lr)
    timeout = timedelta(seconds=args.timeout)
    manager = Manager(
        pg=ProcessGroupGloo(timeout=timeout), min_replica_size=args.min_replicas, use_async_quorum=False,
        load_state_dict=lambda sd: (model.load_state_dict(sd["model"]), inner.load_state_dict(sd["optim"])),
        state_dict=lambda: {"model": model.state_dict(), "optim": inner.state_dict()},
        replica_id=args.replica_id, store_addr=args.addr, store_port=args.store_port, rank=0, world_size=1,
        hostname=args.addr, timeout=timeout, quorum_timeout=timedelta(seconds=60), connect_timeout=timeout,
        # Replicas start from one seed, so the first quorum needs no heal (with it, every replica but one
        # would copy that one's trained weights before the first outer step). A replacement, behind the
        # others' step, still heals from a peer.
        init_sync=False)
    outer = nesterov_outer(list(model.parameters()))
    outer_step = outer.step

    def following_step(*step_args, **kwargs):  # torchft steps it after the quorum: participants are known
        for group in outer.param_groups:
            group["lr"] = default_outer_lr(manager.num_participants())
        return outer_step(*step_args, **kwargs)

    outer.step = following_step
    H = args.sync_every
    launched = int(args.replica_id.lstrip("r"))
    with DiLoCo(manager, [model], inner, outer, sync_every=H) as diloco:
        while manager.current_step() * H < args.steps:
            step = manager.current_step() * H + diloco._local_step
            # Data by launch order (r1 is rank 0), as lightcc's ranks 0..n-1 on the same hosts: a
            # failure-free run of either system trains on the same batches. A replacement takes fresh ones.
            x, y = ex.batch(step, launched - 1, args.batch)
            inner.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            inner.step()  # DiLoCo's hook: every H steps the quorum and the outer step (or the rollback)
            if args.step_time:
                time.sleep(args.step_time)
            rank = manager.participating_rank()
            if (rank if rank is not None else launched - 1) == 0:  # before the first quorum: r1
                shared = [f.original_parameters[n] for f in diloco._fragments for n in f.original_parameters]
                print(f"step {manager.current_step() * H + diloco._local_step} {time.time():.3f} "
                      f"{manager.num_participants()} {ex.digest(shared)}", flush=True)
    x, y = ex.batch(10**6, 0, 1024)
    with torch.no_grad():
        print(f"eval {torch.nn.functional.cross_entropy(model(x), y).item():.6f}", flush=True)
    print(f"final {manager.current_step() * H} replica={args.replica_id} digest={ex.digest(model.parameters())}",
          flush=True)
    manager.shutdown(wait=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
