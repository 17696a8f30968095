"""Synthetic data-parallel training throughput with lightcc.torch, or the same script on torch DDP (gloo).

    lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 --batch-size 16
    lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 --batch-size 16 --ddp

Models come from lightcc.models (torch.nn only): resnet50, resnet101, vgg16, inception_v3 (299x299 input)
and transformer_xl (sequences of 128 tokens, throughput in tokens/sec). With --ddp the ranks
rendezvous through torch.distributed at the host of LIGHTCC_RENDEZVOUS_ADDR (set by lightccrun) on
--ddp-port (default: that address's port, which lightcc leaves unused when it is not initialised).

--compare-ddp runs both in the same processes: two copies of the model, one trained through
lightcc's DistributedOptimizer and one through DDP, iterations alternating in ABBA order so both
see the same machine load (DDP's store then defaults to the rendezvous port + 1); it prints both
rates and their ratio. Memory is twice the single mode's.

--contenders picks any of: lightcc (the DistributedOptimizer), ddp-gloo, ddp-lightcc (DDP over
torch.distributed's "lightcc" backend, on lightcc's engine), bound (the same training with no
communication at all: the compute bound) and barrier (the bound plus one 4-byte allreduce a step:
every step then waits for the slower rank, as synchronous training does, but moves no gradient).
All run interleaved in the same processes, in rotating order, one model copy each:

    lightccrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model mlp25m \
        --num-threads 1 --contenders bound,lightcc,ddp-gloo,ddp-lightcc
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import timeit
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch


from lightcc import models
from lightcc.bench.torch_group import TorchGroup


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="PyTorch synthetic benchmark (lightcc or DDP)",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="resnet50", choices=sorted(models.MODELS), help="model to train")
    p.add_argument("--batch-size", type=int, default=16, help="input batch size per rank")
    p.add_argument("--num-warmup-batches", type=int, default=1, help="batches run before timing")
    p.add_argument("--num-batches-per-iter", type=int, default=2, help="batches per timed iteration")
    p.add_argument("--num-iters", type=int, default=3, help="timed iterations")
    p.add_argument("--fp16-allreduce", action="store_true", help="allreduce gradients as float16")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--ddp", action="store_true", help="run on torch DistributedDataParallel (gloo) instead")
    mode.add_argument("--compare-ddp", action="store_true", help="run lightcc and DDP interleaved, print the ratio")
    mode.add_argument("--contenders", default="", help="comma-separated, interleaved: bound, barrier, lightcc, "
                      "ddp-gloo, ddp-lightcc")
    p.add_argument("--ddp-port", type=int, default=0, help="torch.distributed store port for --ddp")
    p.add_argument("--num-threads", type=int, default=0, help="torch threads per rank (0: cores / local ranks)")
    p.add_argument("--json", default="", help="rank 0 writes its results to this file")
    return p.parse_args()


class Lightcc:
    """The lightcc.torch side: DistributedOptimizer plus initial broadcasts."""

    name = "lightcc"

    def __init__(self) -> None:
        import lightcc.torch as hvd

        self.hvd = hvd
        hvd.init()
        self.rank, self.size, self.local_size = hvd.rank(), hvd.size(), hvd.local_size()

    def wrap(self, model: torch.nn.Module, optimizer: Any, fp16: bool) -> Tuple[torch.nn.Module, Any]:
        hvd = self.hvd
        compression = hvd.Compression.fp16 if fp16 else hvd.Compression.none
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             compression=compression)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        return model, optimizer

    def gather(self, value: float) -> List[float]:
        return self.hvd.allgather_object(value, name="rates")

    def close(self) -> None:
        self.hvd.shutdown()


class DDP:
    """The torch.distributed side: gloo process group and DistributedDataParallel."""

    name = "ddp-gloo"

    def __init__(self, port: int, port_offset: int = 0) -> None:
        import torch.distributed as dist

        self.dist = dist
        self.rank, self.size = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
        self.local_size = int(os.environ.get("LIGHTCC_LOCAL_SIZE", self.size))
        host, _, rport = os.environ["LIGHTCC_RENDEZVOUS_ADDR"].rpartition(":")
        port = port or int(rport) + port_offset
        self.group = TorchGroup("gloo", host, port, self.rank, self.size)
        self.process_group: Any = None  # the default group

    def wrap(self, model: torch.nn.Module, optimizer: Any, fp16: bool) -> Tuple[torch.nn.Module, Any]:
        from torch.nn.parallel import DistributedDataParallel

        # broadcasts rank 0's parameters. Gradients as views of DDP's buckets: the setup a DDP user
        # tuning for speed runs (no copy into and out of the buckets each step), for both backends.
        ddp = DistributedDataParallel(model, process_group=self.process_group, gradient_as_bucket_view=True)
        if fp16:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return ddp, optimizer

    def gather(self, value: float) -> List[float]:
        out: List[Any] = [None] * self.size
        self.dist.all_gather_object(out, value)
        return out

    def close(self) -> None:
        self.group.close()


class DDPOverLightcc(DDP):
    """DDP over torch.distributed's "lightcc" backend: a group on lightcc's engine beside the gloo one."""

    name = "ddp-lightcc"

    def __init__(self, gloo: DDP) -> None:
        import lightcc.torch  # noqa: F401  (registers the backend; the engine is the one Lightcc() started)

        self.dist, self.rank, self.size, self.local_size = gloo.dist, gloo.rank, gloo.size, gloo.local_size
        self.process_group = self.dist.new_group(backend="lightcc")

    def close(self) -> None:
        self.dist.destroy_process_group(self.process_group)


class Bound(Lightcc):
    """The compute bound: the same training with no communication (rates gathered through lightcc)."""

    name = "bound"

    def __init__(self, hvd_side: Lightcc) -> None:
        self.hvd, self.rank, self.size, self.local_size = hvd_side.hvd, hvd_side.rank, hvd_side.size, hvd_side.local_size

    def wrap(self, model: torch.nn.Module, optimizer: Any, fp16: bool) -> Tuple[torch.nn.Module, Any]:
        return model, optimizer

    def close(self) -> None:
        pass


class Barrier(Bound):
    """The bound with the ranks in step: one 4-byte allreduce before each optimizer step, no gradients.

    Between it and the bound lies what synchronous training costs whatever the allreduce: each step
    waits for the slower rank. Between it and the contenders lies what moving the gradients costs."""

    name = "barrier"

    def wrap(self, model: torch.nn.Module, optimizer: Any, fp16: bool) -> Tuple[torch.nn.Module, Any]:
        return model, _InStep(optimizer, self.hvd)


class _InStep:
    """An optimizer whose step first waits for every rank (a one-element allreduce)."""

    def __init__(self, optimizer: Any, hvd: Any) -> None:
        self.optimizer, self.hvd, self.token = optimizer, hvd, torch.zeros(1)

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> None:
        self.hvd.allreduce_(self.token, name="barrier.step")
        self.optimizer.step()


def make_backends(args: argparse.Namespace) -> List[Any]:
    """The contenders, in the order asked; lightcc's engine and the gloo group are shared."""
    names = [n.strip() for n in args.contenders.split(",") if n.strip()]
    if not names:
        names = ["lightcc", "ddp-gloo"] if args.compare_ddp else ["ddp-gloo"] if args.ddp else ["lightcc"]
    known = {"bound", "barrier", "lightcc", "ddp-gloo", "ddp-lightcc"}
    if set(names) - known or len(set(names)) != len(names):
        raise SystemExit(f"--contenders takes distinct names among {', '.join(sorted(known))}; got {args.contenders}")
    hvd_side = Lightcc() if {"lightcc", "bound", "barrier", "ddp-lightcc"} & set(names) else None
    gloo = DDP(args.ddp_port, port_offset=1 if hvd_side else 0) if {"ddp-gloo", "ddp-lightcc"} & set(names) else None
    made = {"lightcc": hvd_side, "ddp-gloo": gloo}
    if "bound" in names:
        made["bound"] = Bound(hvd_side)
    if "barrier" in names:
        made["barrier"] = Barrier(hvd_side)
    if "ddp-lightcc" in names:
        made["ddp-lightcc"] = DDPOverLightcc(gloo)
    return [made[n] for n in names]


def mean_and_conf(values: List[float]) -> Tuple[float, float]:
    t = torch.tensor(values, dtype=torch.float64)
    return float(t.mean()), float(1.96 * t.std(unbiased=False))


class Contender:
    """One backend's copy of the model, its step, and the rates and CPU seconds it measured."""

    def __init__(self, backend: Any, spec: models.ModelSpec, args: argparse.Namespace) -> None:
        self.backend = backend
        torch.manual_seed(0)
        model = spec.build()
        self.n_params = models.count_parameters(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * backend.size)
        model, self.optimizer = backend.wrap(model, optimizer, args.fp16_allreduce)
        self.trainer = models.Trainer(spec, model)
        self.data, self.target = models.synthetic_batch(spec, args.batch_size, seed=backend.rank)
        self.rates: List[float] = []
        self.cpu: List[float] = []

    def step(self) -> None:
        self.optimizer.zero_grad()
        self.trainer.loss(self.data, self.target).backward()
        self.optimizer.step()

    def timed(self, batches: int, per_batch: int) -> float:
        before = resource.getrusage(resource.RUSAGE_SELF)
        seconds = timeit.timeit(self.step, number=batches)
        after = resource.getrusage(resource.RUSAGE_SELF)
        # CPU seconds of every thread of this rank (compute, engine, gloo): on a shared machine
        # this moves much less with the load than the wall-clock rate does.
        self.cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / batches)
        self.rates.append(per_batch * batches / seconds)
        return self.rates[-1]

    def result(self, spec: models.ModelSpec, args: argparse.Namespace, unit: str) -> Dict[str, Any]:
        mean, conf = mean_and_conf(self.rates)
        every = self.backend.gather(mean)
        return {"backend": self.backend.name, "model": spec.name, "params_millions": round(self.n_params / 1e6, 2),
                "batch_size": args.batch_size, "ranks": self.backend.size, "unit": unit,
                "fp16_allreduce": args.fp16_allreduce, "per_rank_mean": mean, "per_rank_conf": conf,
                "total": float(sum(every)), "per_rank_all": every,
                "cpu_seconds_per_batch": sum(self.cpu) / len(self.cpu), "load_average": os.getloadavg()[0]}


def main() -> None:
    args = parse_args()
    backends = make_backends(args)
    first = backends[0]
    torch.set_num_threads(args.num_threads or max(1, (os.cpu_count() or 1) // first.local_size))
    spec = models.get(args.model)
    contenders = [Contender(b, spec, args) for b in backends]
    unit = "tok" if spec.kind == "lm" else "img"
    per_batch = args.batch_size * (spec.input_size if spec.kind == "lm" else 1)
    n_params = contenders[0].n_params

    def log(msg: str) -> None:
        if first.rank == 0:
            print(msg, flush=True)

    log(f"Model: {spec.name} ({n_params / 1e6:.2f}M parameters; usually quoted as {spec.published_millions}M)")
    log(f"Backend: {' and '.join(b.name for b in backends)}, batch size {args.batch_size} per rank, "
        f"{first.size} ranks, {torch.get_num_threads()} torch threads per rank")
    log("Running warmup...")
    for c in contenders:
        timeit.timeit(c.step, number=args.num_warmup_batches)
    log("Running benchmark...")
    for i in range(args.num_iters):
        # ABBA for two, a rotation for more: a drifting load hits every contender alike.
        order = (contenders if i % 2 == 0 else contenders[::-1]) if len(contenders) <= 2 else \
            contenders[i % len(contenders):] + contenders[:i % len(contenders)]
        for c in order:
            rate = c.timed(args.num_batches_per_iter, per_batch)
            log(f"Iter #{i}: {rate:.1f} {unit}/sec per rank ({c.backend.name})")
    results = [c.result(spec, args, unit) for c in contenders]
    log("")
    log(f"| backend  | model          | params (M) | batch/rank | ranks | {unit}/sec per rank | total {unit}/sec "
        "| CPU s/batch |")
    log("|----------|----------------|-----------:|-----------:|------:|------------------:|---------------:"
        "|------------:|")
    for r in results:
        log(f"| {r['backend']:<8} | {spec.name:<14} | {n_params / 1e6:10.2f} | {args.batch_size:10d} | "
            f"{r['ranks']:5d} | {r['per_rank_mean']:9.1f} +-{r['per_rank_conf']:6.1f} | {r['total']:14.1f} | "
            f"{r['cpu_seconds_per_batch']:11.2f} |")
    if len(results) == 2 and not args.contenders:
        log(f"lightcc / DDP throughput ratio: {results[0]['total'] / results[1]['total']:.2f} "
            f"(1-minute load average {results[0]['load_average']:.1f})")
    elif len(results) > 1:
        bound = next((r for r in results if r["backend"] == "bound"), None)
        for r in results:
            share = f", {100 * r['total'] / bound['total']:.0f} % of the bound" if bound and r is not bound else ""
            log(f"{r['backend']}: {r['total']:.1f} {unit}/sec in total{share}")
    else:
        log(f"Total {unit}/sec on {first.size} ranks: {results[0]['total']:.1f} "
            f"(1-minute load average {results[0]['load_average']:.1f})")
    if args.json and first.rank == 0:
        Path(args.json).write_text(json.dumps(results[0] if len(results) == 1 else results, indent=1))
    # DDP over lightcc's group first, then gloo's (the default torch group), lightcc's engine last.
    closing = {"ddp-lightcc": 0, "bound": 1, "barrier": 1, "ddp-gloo": 2, "lightcc": 3}
    for b in sorted(backends, key=lambda b: closing[b.name]):
        b.close()


if __name__ == "__main__":
    main()
