"""How the ranks of the low-communication benchmark combine: DDP, lightcc's DiLoCo, torchft's DiLoCo, or none.

Each method is a `Runner`: the module the loop calls forward through, `step()` after each
backward, `finish()` after the last step, `stats()` for the RESULT line and `close()`. `init`
starts the process group the method needs. Ranks on emulated hosts (`race.py`) find their
host's address in ``LOWCOMM_ADDRS`` (one per host) and ``LOWCOMM_PER_HOST``, gloo's store in
``MASTER_ADDR``/``MASTER_PORT`` and torchft's lighthouse in ``TORCHFT_LIGHTHOUSE``.
"""
from __future__ import annotations

import argparse
import gc
import os
from datetime import timedelta
from typing import Any, Dict, List

import torch
import torch.distributed as dist

METHODS = ("ddp", "diloco", "torchft-diloco", "local")
BACKENDS = ("lightcc", "gloo")


class Runner:
    """A method's hold on the model; the base class trains each rank alone (method ``local``)."""

    def __init__(self, forward: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        self.forward, self.opt = forward, opt

    def step(self) -> None:
        """The optimizer step after a backward (with whatever exchange the method makes)."""
        self.opt.step()

    def finish(self) -> None:
        """After the last step: every rank ends with the method's final weights."""

    def stats(self) -> Dict[str, Any]:
        """The method's counters for the RESULT line."""
        return {}

    def close(self) -> None:
        """Releases what the method started besides the process group."""


class Ddp(Runner):
    """torch's DistributedDataParallel over the default process group (gloo or lightcc), with --hook's compression.

    ``powersgd``: torch's PowerSGD hook at rank --powersgd-rank, compressing from 10 % of the run
    (torch's suggested start; its default, step 1,000, would never compress here). ``topk``:
    lightcc's top-k hook at density --topk-ratio with plain error feedback (the inner AdamW has no
    SGD momentum to declare); the engine's top-k flags come from the run's environment.
    """

    def __init__(self, args: argparse.Namespace, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        # PowerSGD over gloo needs one bucket: with more, its callbacks issue allreduces in an order that
        # can differ between ranks and gloo aborts (docs/topk.md); 25 MB given explicitly holds this model.
        buckets = {"bucket_cap_mb": 25} if args.hook == "powersgd" else {}
        ddp = torch.nn.parallel.DistributedDataParallel(model, **buckets)
        if args.hook == "powersgd":
            from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
            state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                       start_powerSGD_iter=max(2, args.steps // 10))
            ddp.register_comm_hook(state, psgd.powerSGD_hook)
        elif args.hook == "topk":
            from lightcc.torch import ddp_hooks
            ddp.register_comm_hook(ddp_hooks.TopkState(ratio=args.topk_ratio, prefix="lowcomm"), ddp_hooks.topk_hook)
        super().__init__(ddp, opt)
        self.dense = sum(p.numel() * 4 for p in model.parameters())

    def stats(self) -> Dict[str, Any]:
        return {"dense_bytes_per_step": self.dense}

    def close(self) -> None:
        """Drops DDP before the group goes: a Reducer outliving it destroys gloo's group holding the GIL
        while a gloo thread may need the GIL to free a finished work (a deadlock, pytorch/pytorch#56297)."""
        self.forward = None
        gc.collect()


class LightccDiloco(Runner):
    """`lightcc.torch.DiLoCo` with the benchmark's outer optimizer, fragments, codec and warm-up."""

    def __init__(self, args: argparse.Namespace, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
        from lightcc.torch import DiLoCo
        super().__init__(model, opt)
        self.diloco = DiLoCo(model, opt, sync_every=args.sync_every, outer_optimizer=outer_factory(args),
                             fragments=args.fragments, compression=args.compression, warmup_steps=args.sync_warmup,
                             islands=args.islands, delay=args.delay, mix=args.mix)

    def step(self) -> None:
        self.diloco.step()

    def finish(self) -> None:
        self.diloco.finish()

    def stats(self) -> Dict[str, Any]:
        return self.diloco.stats()


class TorchftDiloco(Runner):
    """torchft 0.2.0's DiLoCo: each rank a replica group of one, its Manager over ProcessGroupGloo.

    Replicas start from the same seed, so the weights agree without torchft's initial sync (which
    would heal over HTTP from a peer); the quorum waits for every rank (min_replica_size = size).
    """

    def __init__(self, args: argparse.Namespace, model: torch.nn.Module, opt: torch.optim.Optimizer,
                 rank: int, size: int) -> None:
        from torchft import Manager
        from torchft.local_sgd import DiLoCo
        from torchft.process_group import ProcessGroupGloo
        super().__init__(model, opt)
        addr = host_addr(rank)
        port = int(os.environ["MASTER_PORT"]) + 1 + rank
        self.store = dist.TCPStore(addr, port, is_master=True, wait_for_workers=False)
        timeout = timedelta(seconds=300)
        self.manager = Manager(
            pg=ProcessGroupGloo(timeout=timeout), min_replica_size=size, use_async_quorum=False,
            load_state_dict=lambda sd: (model.load_state_dict(sd["model"]), opt.load_state_dict(sd["optim"])),
            state_dict=lambda: {"model": model.state_dict(), "optim": opt.state_dict()},
            replica_id=f"r{rank}", store_addr=addr, store_port=port, rank=0, world_size=1, hostname=addr,
            timeout=timeout, quorum_timeout=timeout, connect_timeout=timeout, init_sync=False)
        outer = outer_factory(args)(list(model.parameters()))
        self.diloco = DiLoCo(self.manager, [model], opt, outer, sync_every=args.sync_every).__enter__()
        self.params = sum(p.numel() for p in model.parameters())

    def finish(self) -> None:
        self.diloco.__exit__(None, None, None)

    def stats(self) -> Dict[str, Any]:
        return {"manager_step": self.manager.current_step(), "dense_bytes_per_exchange": 4 * self.params}

    def close(self) -> None:
        self.manager.shutdown(wait=False)


def outer_factory(args: argparse.Namespace) -> Any:
    """The outer optimizer both DiLoCos get: Nesterov SGD at --outer-lr / --outer-momentum (plain SGD at momentum 0)."""
    def outer(params: List[torch.Tensor]) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, lr=args.outer_lr, momentum=args.outer_momentum,
                               nesterov=args.outer_momentum > 0)
    return outer


def diloco_workers(args: argparse.Namespace, size: int) -> int:
    """M, the number of DiLoCo workers: the ranks, or the hosts with --islands host (lightcc's DiLoCo only)."""
    if args.islands != "host":
        return size
    from lightcc.common.basics import local_size
    return size // local_size()


def host_addr(rank: int) -> str:
    """This rank's host address on emulated hosts (race.py sets LOWCOMM_ADDRS), else loopback."""
    addrs = os.environ.get("LOWCOMM_ADDRS", "127.0.0.1").split(",")
    return addrs[min(len(addrs) - 1, rank // int(os.environ.get("LOWCOMM_PER_HOST", "1")))]


def init(args: argparse.Namespace) -> None:
    """The default process group: lightcc's for lightcc's methods, gloo's for DDP over gloo and for torchft's
    bookkeeping (the final digest check; torchft trains over its own groups)."""
    gloo = args.method == "torchft-diloco" or (args.method in ("ddp", "local") and args.backend == "gloo")
    if not gloo:
        import lightcc.torch  # noqa: F401  (registers the "lightcc" backend)
    if "RANK" in os.environ or "LIGHTCC_RANK" not in os.environ:  # lightccrun, torchrun: torch's env://
        dist.init_process_group("gloo" if gloo else "lightcc")
        return
    # race.py's ranks (testbed/cluster.py) have lightcc's placement and MASTER_ADDR/PORT, not RANK
    rank, size = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
    dist.init_process_group("gloo" if gloo else "lightcc", rank=rank, world_size=size, timeout=timedelta(seconds=600))


def wrap(args: argparse.Namespace, model: torch.nn.Module, opt: torch.optim.Optimizer) -> Runner:
    """The runner of --method (after `init`)."""
    if args.method == "ddp":
        return Ddp(args, model, opt)
    if args.method == "diloco":
        return LightccDiloco(args, model, opt)
    if args.method == "torchft-diloco":
        return TorchftDiloco(args, model, opt, dist.get_rank(), dist.get_world_size())
    return Runner(model, opt)
