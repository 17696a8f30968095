"""Trains a small torch model a few steps under SGD with (Nesterov) momentum and saves its weights and top-k state.

Usage: topk_declared_worker.py nesterov|sgd OUT_PREFIX. The torch front declares each parameter's
momentum to the core (topk_declare) and steps the momentum-corrected ones itself from
topk_progress. The test runs this with the host executor and with the device executor's schedules
on host memory (LIGHTCC_DEVICE_EXECUTOR=host) and requires the same weights, residuals and
velocities bit for bit: declarations and progress reach both executors the same way.
"""
from __future__ import annotations

import os
import sys

import common  # noqa: F401
import numpy as np
import torch
from common import Checker

import lightcc as base
import lightcc.torch as hvd

STEPS = 5


def main() -> None:
    nesterov = sys.argv[1] == "nesterov"
    prefix = sys.argv[2]
    hvd.init()
    r = hvd.rank()
    c = Checker(r)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=nesterov, weight_decay=1e-4)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    gen = torch.Generator().manual_seed(100 + r)
    for _ in range(STEPS):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randint(0, 10, (16,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    saved = {f"param_{n}": p.detach().numpy().view(np.uint8) for n, p in model.named_parameters()}
    state = base.topk_state_dict()
    velocities = [k for k in state if k.startswith("velocity:")]
    c.check(len(velocities) == 2, f"momentum correction holds a velocity per weight matrix: {sorted(state)}")
    for name, v in state.items():
        saved[f"state_{name}"] = np.asarray(v, np.float32).view(np.uint8)
    np.savez(f"{prefix}.{r}.npz", **saved)
    hvd.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
