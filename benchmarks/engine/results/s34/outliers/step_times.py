import os, time, sys
import torch, torch.distributed as dist
import lightcc.torch as hvd
from torch.nn.parallel import DistributedDataParallel
from lightcc import models
torch.set_num_threads(1)
import gc
if os.environ.get("NOGC"): gc.disable()
hvd.init()
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
if sys.argv[1] == "gloo":
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29577", rank=hvd.rank(), world_size=hvd.size())
else:
    dist.init_process_group("lightcc", rank=hvd.rank(), world_size=hvd.size())
spec = models.get("mlp25m")
LOG = []
if os.environ.get("TRACE"):
    from lightcc.torch.c10d import group as G
    from lightcc.torch import futures as F
    orig = G.LightccProcessGroup.allreduce
    def traced(self, tensors, opts=None):
        t0 = time.perf_counter(); w = orig(self, tensors, opts); t1 = time.perf_counter()
        LOG.append(("ar", t0, t1, tensors[0].numel()))
        return w
    G.LightccProcessGroup.allreduce = traced
    orig_launch = F.launch
    def launch(args, keepalive, finish, allocate=None):
        p = orig_launch(args, keepalive, finish, allocate)
        t0 = time.perf_counter()
        p.outcome.add_done_callback(lambda f: LOG.append(("done", t0, time.perf_counter(), 0)))
        return p
    F.launch = launch
torch.manual_seed(0)
model = spec.build()
mode = sys.argv[1]
if mode == "opt":
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01), named_parameters=model.named_parameters())
    net = model
else:
    net = DistributedDataParallel(model, gradient_as_bucket_view=True)
    if mode == "hook":
        from lightcc.torch.ddp_hooks import LightccState, allreduce_hook
        net.register_comm_hook(LightccState(), allreduce_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
tr = models.Trainer(spec, net)
x, y = models.synthetic_batch(spec, 32, seed=hvd.rank())
def step():
    opt.zero_grad(); tr.loss(x, y).backward(); opt.step()
for _ in range(3): step()
N = int(os.environ.get("N", "30")); ts = []
import re
CPU0 = {}
for tid in os.listdir("/proc/self/task"):
    name = open(f"/proc/self/task/{tid}/comm").read().strip()
    f = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
    CPU0[f"{name}/{tid}"] = (int(f[11]) + int(f[12])) * 10
for _ in range(N):
    t0 = time.perf_counter(); LOG.append(("step", t0, t0, 0)); step(); ts.append(1e3 * (time.perf_counter() - t0))
dt = sum(ts) / N / 1e3
def thread_cpu():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = open(f"/proc/self/task/{tid}/comm").read().strip()
            f = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            out[f"{name}/{tid}"] = (int(f[11]) + int(f[12])) * 10  # ms
        except OSError:
            pass
    return out
cpu_after = thread_cpu()
if hvd.rank() == 0:
    d = {k: v - CPU0.get(k, 0) for k, v in cpu_after.items() if v - CPU0.get(k, 0) > 0}
    print(f"{mode}: per-step CPU ms by thread: " + ", ".join(f"{k}={v/N:.1f}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])), flush=True)
if hvd.rank() == 0:
    print(f"{mode}: {1e3*dt:.1f} ms/step; " + " ".join(f"{t:.0f}" for t in ts), flush=True)
    if LOG:
        base = LOG[0][1]
        for k, a, b, n in LOG[-200:]:
            print(f"{k:5} {1e3*(a-base):9.1f} {1e3*(b-a):7.2f} {n}")
    if len(sys.argv) > 2:
        from torch.profiler import profile
        with profile() as p:
            for _ in range(5): step()
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))
else:
    if len(sys.argv) > 2:
        for _ in range(5): step()
hvd.shutdown()
