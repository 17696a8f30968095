"""One replica of the ETTR race's torchft system (torchft 0.2.0 over gloo): per-step fault tolerance, state healed from a peer.

    TORCHFT_LIGHTHOUSE=http://HOST0:29510 python -m benchmarks.elastic.ettr_torchft_worker --addr A --replica-id rN

One process is one replica group of one rank. It serves its own group's TCPStore, joins the
lighthouse's quorum every step (torchft's Manager, its reconfigurable ProcessGroupGloo, its
OptimizerWrapper), and a replica started late heals from a peer over torchft's HTTP transport.
The participating rank 0 prints a ``step`` line per committed step.

torchft 0.2.0's DistributedDataParallel comm hook asserts that a failed allreduce still has an
inner future (``assert fut._fut``): the survivors of a mid-step kill die on it (measured; issue 43).
`--hook patched` (the default) is the same hook with that assertion replaced by the bucket's own
gradient, which torchft discards anyway when `should_commit` says the step failed; `--hook stock`
runs torchft's own wrapper.
"""
from __future__ import annotations

import argparse
import time
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as TorchDDP

from benchmarks.elastic.ettr_task import example, replica_args, task_args


def patched_hook(manager: Any, bucket):  # noqa: ANN001 (DDP checks an annotation against the class itself)
    """torchft's DDP hook without its assertion: a failed step's gradient is discarded by should_commit."""
    work = manager.allreduce(bucket.buffer())
    work.wait()
    fut = work.get_future()
    inner = getattr(fut, "_fut", None)
    if inner is None:
        done: torch.futures.Future = torch.futures.Future()
        done.set_result(bucket.buffer())
        return done
    return inner


def main() -> int:
    p = replica_args(task_args(argparse.ArgumentParser(description=__doc__.split("\n")[0])))
    p.add_argument("--hook", choices=["patched", "stock"], default="patched")
    args = p.parse_args()
    from torchft import Manager
    from torchft.optim import OptimizerWrapper
    from torchft.ddp import DistributedDataParallel as FtDDP
    from torchft.process_group import ProcessGroupDummy, ProcessGroupGloo

    ex = example()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    store = dist.TCPStore(args.addr, args.store_port, is_master=True, wait_for_workers=False)  # noqa: F841
    net = ex.build(args.model)
    features, classes = net[0].in_features, net[-1].out_features
    inner = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    timeout = timedelta(seconds=args.timeout)
    manager = Manager(
        pg=ProcessGroupGloo(timeout=timeout), min_replica_size=args.min_replicas,
        load_state_dict=lambda sd: (net.load_state_dict(sd["model"]), inner.load_state_dict(sd["optim"])),
        state_dict=lambda: {"model": net.state_dict(), "optim": inner.state_dict()},
        replica_id=args.replica_id, store_addr=args.addr, store_port=args.store_port, rank=0, world_size=1,
        hostname=args.addr, timeout=timeout, quorum_timeout=timedelta(seconds=60),
        connect_timeout=timeout)
    if args.hook == "stock":
        model: Any = FtDDP(manager, net)
    else:  # what FtDDP does (a dummy group for DDP's own init collectives, no bucket rebuilds), hook patched
        model = TorchDDP(net, process_group=ProcessGroupDummy(0, 1), find_unused_parameters=True)
        model.register_comm_hook(manager, patched_hook)
    optimizer = OptimizerWrapper(manager, inner)
    while manager.current_step() < args.steps:
        step = manager.current_step()
        optimizer.zero_grad()  # starts the quorum
        rank, size = manager.participating_rank(), manager.num_participants()
        x, y = ex.batch(step, rank or 0, max(size, 1), args.global_batch, features, classes)
        # torchft averages the gradients over the participants, as DDP does over its world.
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum") * max(size, 1) / args.global_batch
        loss.backward()
        optimizer.step()  # applies the step only if every participant's allreduce succeeded
        if args.step_time:
            time.sleep(args.step_time)
        if manager.current_step() > step and rank == 0:
            print(f"step {manager.current_step()} {time.time():.3f} {size} {ex.digest(net)}", flush=True)
    print(f"eval {ex.eval_loss(net, features, classes):.6f}", flush=True)
    print(f"final {manager.current_step()} replica={args.replica_id} digest={ex.digest(net)}", flush=True)
    manager.shutdown(wait=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
