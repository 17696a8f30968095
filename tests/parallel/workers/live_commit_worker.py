"""Two ranks with live commits: rank 0 steps past its last commit, rank 1 fails before its step; after
restore() and sync() every rank holds rank 1's commit (the one rank 0 no longer has). Prints
`LIVE rank=<r> digest=<sha256 of the weights> committed=<digest at the last commit>`."""
import hashlib

import torch

import lightcc.torch as hvd
from lightcc.torch.elastic import TorchState, live_commit

hvd.init()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
state = TorchState(model, opt, step=0)


def digest() -> str:
    h = hashlib.sha256()
    for t in list(model.state_dict().values()) + [s["momentum_buffer"] for s in opt.state.values()]:
        h.update(t.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def step(n: int, collective: bool = True) -> None:
    opt.zero_grad()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(n))
    model(x).square().mean().backward()
    for i, p in enumerate(model.parameters()):
        if collective:
            hvd.allreduce_(p.grad, name=f"grad.{n}.{i}")
    opt.step()


for n in range(live_commit.WARMUP + 2):
    step(n)
    state.step = n + 1
    state.commit()
assert state._live.live
committed = digest()
if hvd.rank() == 0:
    step(100, collective=False)  # past the commit (as if its commit's collective failed after the step)
    assert state._live.ahead()
state.restore()
state.sync()
print(f"LIVE rank={hvd.rank()} digest={digest()} committed={committed} step={state.step}", flush=True)
