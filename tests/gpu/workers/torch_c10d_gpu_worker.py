"""torch.distributed's "lightcc" backend on one device: every collective, p2p and DDP, checked against local math.

Run by tests/gpu/test_c10d_gpu.py as N ranks sharing one GPU (argv[1] "cuda"), and by
tests/parallel/test_torch_c10d.py on CPU tensors through the host-mode device executor (argv[1]
"cpu"), so its checks are exercised in CI too; argv[2] is torch's store port. The group is
made as `init_process_group("cpu:lightcc,cuda:lightcc")`, the form a job mixing devices uses.
"""
from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "parallel", "workers"))
from torch_helpers import checker, close, destroy_leaving_last  # noqa: E402

import lightcc.torch  # noqa: E402,F401  (registers the backend)

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
DEV, PORT = torch.device(sys.argv[1]), int(sys.argv[2])


def mine(rank: int, shape=(5, 3), dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(200 + rank)
    return torch.randint(-9, 9, shape, generator=g).to(dtype).to(DEV)


def collectives(c) -> None:
    everyone = [mine(r) for r in range(N)]
    stacked = torch.stack(everyone)
    for op, ref in ((dist.ReduceOp.SUM, stacked.sum(0)), (dist.ReduceOp.AVG, stacked.mean(0)),
                    (dist.ReduceOp.MAX, stacked.max(0).values), (dist.ReduceOp.MIN, stacked.min(0).values)):
        t = mine(R)
        dist.all_reduce(t, op=op)
        c.check(t.device.type == DEV.type and close(t.cpu(), ref.cpu(), 1e-5), f"all_reduce {op} on {DEV}")
    halves = mine(R, dtype=torch.float16)
    dist.all_reduce(halves)
    c.check(close(halves.cpu(), sum(mine(r, dtype=torch.float16) for r in range(N)).cpu()), "all_reduce float16")
    works = [dist.all_reduce(mine(R) * (i + 1), async_op=True) for i in range(4)]
    for w in works:
        w.wait()
    t = mine(R)
    dist.broadcast(t, src=N - 1)
    c.check(torch.equal(t, everyone[N - 1]), "broadcast from the last rank")
    out = torch.empty(N * 5, 3, device=DEV)
    dist.all_gather_into_tensor(out, mine(R))
    c.check(torch.equal(out, torch.cat(everyone)), "all_gather_into_tensor")
    big = torch.cat([mine(R) * (j + 1) for j in range(N)])
    part = torch.empty(5, 3, device=DEV)
    dist.reduce_scatter_tensor(part, big)
    c.check(close(part.cpu(), (stacked.sum(0) * (R + 1)).cpu()), "reduce_scatter_tensor")
    send = torch.arange(N * 2, dtype=torch.float32, device=DEV) + 100 * R
    got = torch.empty(N * 2, device=DEV)
    dist.all_to_all_single(got, send)
    want = torch.cat([torch.arange(2 * R, 2 * R + 2, dtype=torch.float32, device=DEV) + 100 * r for r in range(N)])
    c.check(torch.equal(got, want), "all_to_all_single")
    dist.barrier()


def point_to_point(c) -> None:
    nxt, prv = (R + 1) % N, (R - 1) % N
    out = torch.full((6,), float(R), device=DEV)
    into = torch.zeros(6, device=DEV)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, into, prv)])
    for w in works:
        w.wait()
    c.check(torch.equal(into, torch.full((6,), float(prv), device=DEV)), "a ring through batch_isend_irecv")


def ddp(c) -> None:
    """Three DDP steps on the device match one process training on every rank's batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(DEV)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(DEV)
    ref.load_state_dict(model.state_dict())
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001, gradient_as_bucket_view=True)
    opt, ref_opt = torch.optim.SGD(net.parameters(), lr=0.05), torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        xs = [torch.randn(8, 16, generator=torch.Generator().manual_seed(step * 10 + r)).to(DEV) for r in range(N)]
        opt.zero_grad()
        net(xs[R]).pow(2).sum().backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(ref(x).pow(2).sum() for x in xs) / N).backward()
        ref_opt.step()
    c.check(all(close(a.detach().cpu(), b.detach().cpu(), 1e-4) for a, b in zip(model.parameters(), ref.parameters())),
            f"DDP on {DEV} matches one process on every batch")


def main() -> None:
    c = checker()
    dist.init_process_group("cpu:lightcc,cuda:lightcc", init_method=f"tcp://127.0.0.1:{PORT}", rank=R,
                            world_size=N, timeout=timedelta(seconds=60))
    if DEV.type == "cuda":
        torch.cuda.set_device(0)
    collectives(c)
    point_to_point(c)
    ddp(c)
    destroy_leaving_last(R, N)
    c.finish()


if __name__ == "__main__":
    main()
