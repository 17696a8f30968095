"""GPU smoke: CuPy and torch CUDA tensors through the engine on every collective, checked against exact values."""
from __future__ import annotations

import os
import sys

import cupy as cp
import numpy as np
import torch

import lightcc as hvd
import lightcc.torch as thvd


def main() -> None:
    hvd.init()
    r, p = hvd.rank(), hvd.size()
    torch.cuda.set_device(0)
    fails = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            fails.append(what)
            print(f"rank {r} FAIL: {what}", flush=True)

    tri = p * (p + 1) / 2
    x = cp.full(1000, r + 1, dtype=cp.float32)
    y = hvd.allreduce(x, op=hvd.Sum, name="cp.sum")
    check(isinstance(y, cp.ndarray) and bool(cp.all(y == tri)), f"cupy allreduce {type(y)} {y[:3]}")
    g = hvd.allgather(cp.full(r + 1, r, dtype=cp.int32), name="cp.ag")
    want = np.concatenate([np.full(q + 1, q, np.int32) for q in range(p)])
    check(isinstance(g, cp.ndarray) and np.array_equal(cp.asnumpy(g), want), f"cupy allgather {g}")
    threshold = int(os.environ.get("LIGHT_TOPK_THRESHOLD", "2097152"))
    for n in (1, 1000, 3 << 20):
        t = torch.full((n,), float(r + 1), device="cuda")
        out = thvd.allreduce(t, op=thvd.Sum, name=f"t.sum.{n}")
        avg = thvd.allreduce(t, name=f"t.avg.{n}")
        if os.environ.get("LIGHT_TOPK_ALLREDUCE") == "1" and 4 * n >= threshold:
            # Top-k sends a few entries per step (ties: the lowest indices); those carry the full sum.
            sent = out != 0
            check(out.device.type == "cuda" and 0 < int(sent.sum()) < n and bool(torch.all(out[sent] == tri)),
                  f"top-k allreduce n={n}: {int(sent.sum())} entries sent, {out[:3]}")
            continue
        check(out.device.type == "cuda" and bool(torch.all(out == tri)), f"torch allreduce n={n}: {out[:3]}")
        check(bool(torch.allclose(avg, torch.full_like(avg, tri / p))), f"torch average n={n}: {avg[:3]}")
    ts = [torch.full((k * 100 + 7,), float(r), device="cuda", dtype=dt)
          for k, dt in enumerate([torch.float32, torch.float16, torch.float32, torch.int32])]
    outs = thvd.grouped_allreduce(ts, op=thvd.Sum, name="grp")
    check(all(bool(torch.all(o.float() == sum(range(p)))) for o in outs), "grouped allreduce")
    b = thvd.broadcast(torch.full((77,), float(r), device="cuda"), root_rank=p - 1, name="bc")
    check(bool(torch.all(b == p - 1)), f"broadcast {b[:3]}")
    ag = thvd.allgather(torch.full((r + 2, 3), float(r), device="cuda"), name="tag")
    check(ag.shape == (sum(q + 2 for q in range(p)), 3) and ag.device.type == "cuda", f"allgather shape {ag.shape}")
    splits = [q + 1 for q in range(p)]
    a2a, rs = thvd.alltoall(torch.full((sum(splits), 2), float(r), device="cuda"), splits=splits, name="a2a")
    check(a2a.shape[0] == p * (r + 1) and rs.tolist() == [r + 1] * p, f"alltoall {a2a.shape} {rs}")
    sc = thvd.reducescatter(torch.ones(2 * p + 1, 4, device="cuda"), op=thvd.Sum, name="rsc")
    check(bool(torch.all(sc == p)) and sc.shape[0] == (3 if r == 0 else 2), f"reducescatter {sc.shape}")
    # A training-like loop: DistributedOptimizer keeps the weights identical on every rank.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    opt = thvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                    named_parameters=model.named_parameters())
    thvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for step in range(5):
        torch.manual_seed(100 + r * 10 + step)
        data = torch.randn(32, 512, device="cuda")
        loss = model(data).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    digests = hvd.allgather_object(float(flat.double().sum().item()))
    check(len(set(digests)) == 1, f"weights differ across ranks: {digests}")
    from lightcc.common.native import core
    check(core().stats()["device_batches"] > 0, "no device batches ran")
    hvd.shutdown()
    print(f"rank {r}: SMOKE {'OK' if not fails else 'FAILED ' + str(len(fails))}", flush=True)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
