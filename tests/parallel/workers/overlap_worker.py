"""DistributedOptimizer under LIGHTCC_OVERLAP: the same averaged gradients whether the hooks start
the allreduces mid-backward or synchronize() starts them; a second backward still raises."""
from __future__ import annotations

import os
import sys

import common  # noqa: F401  (puts the source tree on sys.path)

import torch

import lightcc.torch as hvd
from lightcc.common.basics import overlap_backward

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.manual_seed(0)
grouped = sys.argv[1] == "groups"
model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0), named_parameters=model.named_parameters(),
                               groups=2 if grouped else None)
failed = 0
for step in range(3):
    x = torch.full((4, 6), float(rank + 1 + step))
    # Every rank's gradients, computed locally on a copy: their mean is what step() must leave.
    expected = []
    for r in range(size):
        ref = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
        out = torch.relu(torch.full((4, 6), float(r + 1 + step)) @ ref[0].T + ref[1]) @ ref[2].T + ref[3]
        expected.append(torch.autograd.grad(out.square().sum(), ref))
    mean = [sum(g[i] for g in expected) / size for i in range(4)]
    opt.zero_grad()
    model(x).square().sum().backward()
    opt.step()
    for i, p in enumerate(model.parameters()):
        if not torch.allclose(p.grad, mean[i], rtol=1e-5, atol=1e-5):
            failed += 1
            print(f"rank {rank} step {step} param {i}: {p.grad.flatten()[:3]} != {mean[i].flatten()[:3]}", flush=True)
# A second backward before step() is the caller's mistake either way.
opt.zero_grad()
model(torch.ones(4, 6)).sum().backward()
try:
    model(torch.ones(4, 6)).sum().backward()
    failed += 1
    print(f"rank {rank}: a second backward before step() did not raise", flush=True)
except AssertionError as e:
    assert "backward_passes_per_step" in str(e)
opt.synchronize()
print(f"OVERLAP {overlap_backward()} CORES {len(os.sched_getaffinity(0))} {failed} failed", flush=True)
hvd.shutdown()
