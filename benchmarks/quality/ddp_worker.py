"""One rank of a `python -m benchmarks.quality tta --ddp-hooks` run: trains the recipe's model under DDP with one hook.

Run as ``python -m benchmarks.quality.ddp_worker '<spec json>'`` inside an emulated host (or on
loopback: the quality-bench test), started by testbed/cluster.py. The spec names the recipe, the
seeds (one run each, in one process group) and the method (methods.py); torch's store address and
this rank's host and interface come from the harness's environment (tta_worker.placement); LIGHT_*
flags arrive in the environment. Every rank trains its shard of each step's batch (cosine lr per
step, weight decay from the recipe) and evaluates the test set every `eval_every` steps; rank 0
prints one ``RESULT <json>`` per seed: the accuracy curve over training time, bytes its host sent,
CPU seconds per rank (every thread of the process: PowerSGD's matrix products and lightcc's top-k
selection both count) and whether every rank ended with identical weights.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from datetime import timedelta
from typing import Any, Dict, List, Tuple

from benchmarks.quality.digits import Recipe, accuracy, load_split, make_model, make_optimizer, param_digest
from benchmarks.quality.tta_worker import placement, tx_bytes


def register_hook(ddp: Any, opt: Any, method: Dict[str, Any], prefix: str) -> Any:
    """Register the method's hook on `ddp`; its state (None for DDP's own allreduce)."""
    hook = method["hook"]
    if hook == "none":
        return None
    if hook == "torch-fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return None
    if hook == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=method["rank"],
                                   start_powerSGD_iter=method["warmup"])
        ddp.register_comm_hook(state, psgd.powerSGD_hook)
        return state
    from lightcc.torch import ddp_hooks

    if hook in ("lightcc-fp16", "lightcc-allreduce"):
        state = ddp_hooks.LightccState(prefix=prefix)
        ddp.register_comm_hook(state, ddp_hooks.fp16_compress_hook if hook == "lightcc-fp16"
                               else ddp_hooks.allreduce_hook)
        return state
    if hook == "topk":
        # A prefix per run: the engine keeps top-k residuals and warm-up counts by tensor name.
        state = ddp_hooks.TopkState(ratio=method["ratio"], prefix=prefix).declare_optimizer(opt)
        ddp.register_comm_hook(state, ddp_hooks.topk_hook)
        return state
    raise ValueError(f"unknown hook {hook!r}")


def train(recipe: Recipe, method: Dict[str, Any], eval_every: int, rank: int, size: int, bucket_mb: float,
          iface: str = "") -> Tuple[Any, List[Dict[str, float]], float, float, int]:
    """(model, curve, training seconds, CPU seconds of training, steps); evaluation is excluded from both times.

    Each curve point holds the bytes this host sent since the start (`iface`'s counter), so the
    bytes of a step after the warm-up can be told from the warm-up's."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    xtr, ytr, xte, yte = load_split()
    model = make_model(recipe)
    # bucket_cap_mb given explicitly (25 is DDP's default) also sizes the first bucket, which DDP otherwise caps at
    # 1 MiB: the wide MLP's 8.3 MiB is then one bucket. With two, torch's PowerSGD hook over gloo failed in all
    # three attempts (hung, or gloo's "collective mismatch"): its future callbacks issue the next allreduces from
    # gloo's worker threads, in an order that can differ between ranks.
    ddp = DDP(model, bucket_cap_mb=bucket_mb or None)  # 0: DDP's implicit default, 1 MiB first bucket
    opt = make_optimizer(recipe, model.parameters())
    register_hook(ddp, opt, method, f"quality.s{recipe.seed}")
    loss_fn = torch.nn.CrossEntropyLoss()
    steps_per_epoch = len(ytr) // (recipe.batch * size)
    total = steps_per_epoch * recipe.epochs
    curve: List[Dict[str, float]] = []
    wall = cpu = 0.0
    step = 0
    losses: List[float] = []
    sent0 = tx_bytes(iface) if iface else 0
    while step < total:
        epoch, s = divmod(step, steps_per_epoch)
        perm = torch.randperm(len(ytr), generator=torch.Generator().manual_seed(1000 * recipe.seed + epoch))
        idx = perm[(s * size + rank) * recipe.batch:(s * size + rank + 1) * recipe.batch]
        t0, c0 = time.perf_counter(), time.process_time()
        for g in opt.param_groups:
            g["lr"] = recipe.lr * 0.5 * (1.0 + math.cos(math.pi * step / total))
        opt.zero_grad()
        loss = loss_fn(ddp(xtr[idx]), ytr[idx])
        loss.backward()  # DDP waits for every bucket's future here
        opt.step()
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        step += 1
        losses.append(loss.item())
        if step % eval_every == 0 or step == total:
            curve.append({"epoch": step / steps_per_epoch, "step": step, "wall_s": wall,
                          "accuracy": accuracy(model, xte, yte), "loss": sum(losses) / len(losses),
                          "sent": (tx_bytes(iface) - sent0) if iface else 0})
            losses = []
    return model, curve, wall, cpu, step


def _compressed(prefix: str) -> List[str]:
    """Engine tensors of this run that top-k compressed (those holding a residual); [] without the engine."""
    from lightcc.common import basics

    if not basics.is_initialized():
        return []
    from lightcc.common.topk_state import topk_state_dict

    return sorted(k for k in topk_state_dict() if prefix in k and not k.startswith("velocity:"))


def main(spec_json: str) -> int:
    """Trains every seed of the spec on this rank; rank 0 prints a RESULT line per seed."""
    import torch
    import torch.distributed as dist

    spec = json.loads(spec_json)
    method = spec["method"]
    rank, size = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
    torch.set_num_threads(1)
    if method["backend"] == "lightcc":
        import lightcc.torch  # noqa: F401  (registers the "lightcc" backend)
    host, iface, store_host, store_port = placement()
    store = dist.TCPStore(store_host, store_port, size, rank == 0, timeout=timedelta(seconds=120))
    dist.init_process_group(method["backend"], store=store, rank=rank, world_size=size, timeout=timedelta(seconds=120))
    try:
        for seed in spec["seeds"]:  # one process group for every seed: starting torch costs more than a run
            recipe = Recipe(**dict(spec["recipe"], seed=seed))
            before = tx_bytes(iface)
            model, curve, wall, cpu, steps = train(recipe, method, spec["eval_every"], rank, size,
                                                   spec.get("bucket_mb", 25.0), iface)
            sent = tx_bytes(iface) - before
            gathered: List[Any] = [None] * size
            dist.all_gather_object(gathered, (host, sent, cpu, param_digest(model)))
            per_host: Dict[str, int] = {}
            for name, b, _, _ in gathered:
                per_host[name] = max(per_host.get(name, 0), b)  # ranks of one host read the same counter
            if rank == 0:
                print("RESULT " + json.dumps({
                    "compressed": _compressed(f"quality.s{seed}."),
                    "seed": seed, "accuracy": curve[-1]["accuracy"], "loss": curve[-1]["loss"], "steps": steps,
                    "train_s": wall, "cpu_s_per_rank": [g[2] for g in gathered], "curve": curve,
                    "bytes_per_host": per_host, "identical_weights": len({g[3] for g in gathered}) == 1,
                    "digest": gathered[0][3][:16], "torch": torch.__version__}), flush=True)
    finally:
        # Rank 0 serves the store a peer's teardown may still read: it leaves once every rank said so.
        store.set(f"left/{rank}", "1")
        if rank == 0:
            store.wait([f"left/{r}" for r in range(size)], timedelta(seconds=60))
        dist.destroy_process_group()
        from lightcc.common import basics

        if basics.is_initialized():  # the lightcc backend (or a lightcc hook over gloo) started the engine
            basics.shutdown()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    if json.loads(sys.argv[1])["method"]["backend"] != "lightcc":
        from lightcc.bench.torch_group import exit_before_gloo_teardown

        exit_before_gloo_teardown(code)  # about 1 run in 10 of `tta --ddp-hooks` aborted there on 2 cores
    sys.exit(code)
