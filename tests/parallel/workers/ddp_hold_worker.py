"""DDP over the lightcc backend under LIGHTCC_OVERLAP: the same averaged gradients whether its buckets'
allreduces start mid-backward or when the backward pass ends (c10d/backward_hold.py); a hook that
waits inside the pass, and a pass that fails after holding a call, still complete.

argv: torch store port. Prints "HELD <bool> OVERLAP <bool> <n> failed".
"""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lightcc.torch  # noqa: F401  (registers the backend)
from lightcc.common.basics import overlap_backward
from lightcc.torch import ddp_hooks

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=R, world_size=N,
                        timeout=timedelta(seconds=60))
failed = 0


def check(ok: bool, what: str) -> None:
    global failed
    if not ok:
        failed += 1
        print(f"rank {R}: {what}", flush=True)


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 40), torch.nn.ReLU(), torch.nn.Linear(40, 30), torch.nn.ReLU(),
                               torch.nn.Linear(30, 3))


def batch(rank: int, step: int) -> torch.Tensor:
    return torch.full((4, 6), float(rank + 1 + step)) + torch.arange(6.0)


# 1. Plain DDP, several buckets, both gradient layouts, lightcc's allreduce hook (which holds its
#    buckets the same way), and a static graph (whose first step issues every bucket from DDP's final
#    callback and waits there: never held): every gradient is the mean of the ranks'.
for as_view, hook, static in ((False, False, False), (True, False, False), (True, True, False), (True, True, True)):
    ddp = DDP(net(), bucket_cap_mb=0.002, gradient_as_bucket_view=as_view, static_graph=static)
    if hook:
        ddp.register_comm_hook(ddp_hooks.LightccState(), ddp_hooks.allreduce_hook)
    for step in range(3):
        grads = []
        for r in range(N):  # every rank's gradients, computed locally on a copy of the weights
            ref = net()
            ref.load_state_dict(ddp.module.state_dict())
            ref(batch(r, step)).square().sum().backward()
            grads.append([p.grad for p in ref.parameters()])
        ddp.zero_grad()
        ddp(batch(R, step)).square().sum().backward()
        for i, p in enumerate(ddp.module.parameters()):
            mean = sum(g[i] for g in grads) / N
            check(torch.allclose(p.grad, mean, rtol=1e-5, atol=1e-4), f"view={as_view} hook={hook} static={static} step {step} param {i}")
        with torch.no_grad():
            for p in ddp.module.parameters():
                p -= 1e-4 * p.grad

# 2. A call issued inside a backward pass: held there (overlap off) until the pass ends, or a wait
#    inside the pass starts it; a pass that fails leaves its held call to the next call.
x = torch.ones(3, requires_grad=True)
works = []


def issue(grad: torch.Tensor) -> torch.Tensor:
    works.append(dist.all_reduce(torch.full((5,), float(R + 1)), async_op=True))
    return grad


def look(grad: torch.Tensor) -> torch.Tensor:
    time.sleep(0.3)  # both ranks have issued it: only a hold keeps it from completing
    works.append(works[-1].is_completed())
    return grad


y = x * 2
y.register_hook(look)
w = y * 3
w.register_hook(issue)
w.sum().backward()
held = works[1] is False
check(works[0].wait() and torch.equal(works[0].result()[0], torch.full((5,), N * (N + 1) / 2)), "held call's result")
check(held != overlap_backward(), f"held {held} with overlap {overlap_backward()}")


def wait_inside(grad: torch.Tensor) -> torch.Tensor:
    t = torch.full((2,), float(R))
    dist.all_reduce(t, async_op=True).wait()  # waits for itself unless the wait releases it
    check(torch.equal(t, torch.full((2,), N * (N - 1) / 2)), "a wait inside the backward pass")
    return grad


v = x * 5
v.register_hook(wait_inside)
v.sum().backward()


def fail(grad: torch.Tensor) -> torch.Tensor:
    raise RuntimeError("planned")


z = x * 7
z.register_hook(fail)
u = z * 1
u.register_hook(issue)
try:
    u.sum().backward()
    check(False, "the failing pass did not raise")
except RuntimeError as e:
    check("planned" in str(e), str(e))
after = torch.full((4,), 1.0)
dist.all_reduce(after)  # starts the failed pass's held call first, in the order every rank issued them
check(torch.equal(works[-1].result()[0], torch.full((5,), N * (N + 1) / 2)) and torch.equal(after, torch.full((4,), N)),
      "after a failed pass")
print(f"HELD {held} OVERLAP {overlap_backward()} {failed} failed", flush=True)
dist.destroy_process_group()
