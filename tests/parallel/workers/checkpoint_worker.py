"""A non-elastic torch script that resumes from lightcc.checkpoint; rank 1 kills itself once (first attempt).

Arguments: DIR STEPS CRASH_STEP EVERY. Prints RESUMED <rank> <step> and FINAL <rank> <digest>.
"""
import hashlib
import os
import signal
import sys

import torch

import lightcc.checkpoint as ckpt
import lightcc.torch as hvd

directory, steps, crash, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
hvd.init()
torch.manual_seed(1234 + hvd.rank())  # each rank's own data stream: its RNG state must be restored
model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                               named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(list(range(1000)), shuffle=False)
start = ckpt.load(directory, model=model, optimizer=opt, sampler=sampler)
step = 0
if start is not None:
    step = start["step"]
    assert len(sampler.processed_indices) == start["extra"]["processed"] == step * hvd.size()
    print(f"RESUMED {hvd.rank()} {step}", flush=True)
while step < steps:
    x = torch.randn(8, 16)
    y = x.sum(1, keepdim=True)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sampler.record_indices([step * hvd.size() + hvd.rank()])
    step += 1
    if step % every == 0:
        ckpt.save(directory, step, model=model, optimizer=opt, sampler=sampler,
                  extra={"processed": step * hvd.size()})
    # The first attempt: lightccrun counts restarts in LIGHTCC_RESTART, torchrun in TORCHELASTIC_RESTART_COUNT.
    attempt = os.environ.get("LIGHTCC_RESTART", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if attempt == "0" and hvd.rank() == 1 and step == crash:
        os.kill(os.getpid(), signal.SIGKILL)
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.state_dict().values())).hexdigest()
print(f"FINAL {hvd.rank()} {digest}", flush=True)
