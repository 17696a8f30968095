"""Records a simulator profile from one real training step of a torch model (hooks time each gradient)."""

from __future__ import annotations

import time
from pathlib import Path

from lightcc.bench.simulate.workload import Tensor, Workload, save_profile


def record_step(model, loss_fn, device: str = "cpu", warmup: int = 1) -> Workload:
    """Time forward, backward and each gradient's completion for one step of ``model``.

    ``loss_fn()`` runs the forward pass and returns the loss. ``warmup`` untimed steps first (allocator,
    kernels). Each parameter's ``register_post_accumulate_grad_hook`` stamps when its gradient is
    complete - the moment a DistributedOptimizer would enqueue its allreduce.
    """
    import torch  # the recording front's own framework import

    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    stamps: dict[str, float] = {}

    def stamper(name: str):
        def hook(_param) -> None:  # must return None
            stamps.setdefault(name, time.perf_counter())
        return hook

    handles = [p.register_post_accumulate_grad_hook(stamper(n)) for n, p in params]
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    try:
        for _ in range(warmup + 1):
            model.zero_grad(set_to_none=True)
            stamps.clear()
            sync()
            t0 = time.perf_counter()
            loss = loss_fn()
            sync()
            t1 = time.perf_counter()
            loss.backward()
            sync()
            t2 = time.perf_counter()
    finally:
        for h in handles:
            h.remove()
    tensors = tuple(Tensor(n, int(p.numel()) * p.element_size(), stamps.get(n, t2) - t1) for n, p in params)
    return Workload(type(model).__name__, tensors, 0, t1 - t0, t2 - t1, 0.0, f"recorded on {device}")


def record_named(name: str, batch: int, out: str | Path, device: str = "cpu") -> Workload:
    """Record one step of a lightcc.models model on synthetic data and write the profile to ``out``."""
    from dataclasses import replace

    import torch

    from lightcc import models

    spec = models.get(name)
    torch.manual_seed(0)
    model = spec.build().to(device)
    data, target = (x.to(device) for x in models.synthetic_batch(spec, batch))
    trainer = models.Trainer(spec, model)
    w = replace(record_step(model, lambda: trainer.loss(data, target), device), name=name, batch_per_gpu=batch)
    save_profile(w, out, device)
    return w
