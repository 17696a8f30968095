"""torch.distributed over the "lightcc" backend: every collective against a reference, async works, DDP, restart.

Run as N ranks by tests/parallel/test_torch_c10d.py; argv[1] is "port,port": torch's TCPStore for
the first init_process_group and for the one after destroy_process_group (a third init reuses
that second store).
Each check compares with what the same call computes locally from every rank's known inputs.
"""
from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch_helpers import checker, close, expect

import lightcc.torch  # noqa: F401  (registers the backend)

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
PORTS = [int(p) for p in sys.argv[1].split(",")]  # one torch store per init_process_group


def start(store: int = 0) -> None:
    dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{PORTS[store]}", rank=R, world_size=N,
                            timeout=timedelta(seconds=60))


def mine(rank: int, shape=(5, 3), dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randint(-9, 9, shape, generator=g).to(dtype)


def allreduces(c) -> None:
    everyone = [mine(r) for r in range(N)]
    stacked = torch.stack(everyone)
    for op, ref in ((dist.ReduceOp.SUM, stacked.sum(0)), (dist.ReduceOp.MAX, stacked.max(0).values),
                    (dist.ReduceOp.MIN, stacked.min(0).values), (dist.ReduceOp.AVG, stacked.mean(0)),
                    (dist.ReduceOp.PRODUCT, stacked.prod(0))):
        t = mine(R)
        dist.all_reduce(t, op=op)
        c.check(close(t, ref, 1e-5), f"all_reduce {op}")
    ints = [mine(r, dtype=torch.int64) for r in range(N)]
    for op, fold in ((dist.ReduceOp.BAND, torch.bitwise_and), (dist.ReduceOp.BOR, torch.bitwise_or),
                     (dist.ReduceOp.BXOR, torch.bitwise_xor)):
        ref = ints[0]
        for x in ints[1:]:
            ref = fold(ref, x)
        t = ints[R].clone()
        try:
            dist.all_reduce(t, op=op)
            c.check(torch.equal(t, ref), f"all_reduce {op} on int64")
        except ValueError as err:  # a core without the bitwise ops says so on every rank alike
            c.check("does not support" in str(err), f"all_reduce {op}: {err}")
    x = [mine(R) * (i + 1) for i in range(6)]
    works = [dist.all_reduce(t, async_op=True) for t in x]
    for w in works:
        w.wait()
    c.check(all(close(t, stacked.sum(0) * (i + 1)) for i, t in enumerate(x)), "six async all_reduce in flight")
    t = mine(R)
    fut = dist.all_reduce(t, async_op=True).get_future()
    value = fut.then(lambda f: f.value()[0] * 2).wait()
    c.check(close(value, stacked.sum(0) * 2), "future chained with then")
    view = torch.zeros(4, 6)[:, ::2]
    view.fill_(float(R + 1))
    dist.all_reduce(view)
    c.check(close(view, torch.full((4, 3), float(N * (N + 1) // 2))), "all_reduce of a non-contiguous view")
    many = [mine(R, (i + 1,)) for i in range(5)]
    dist.all_reduce_coalesced(many)
    c.check(all(close(m, sum(mine(r, (i + 1,)) for r in range(N))) for i, m in enumerate(many)), "all_reduce_coalesced")


def rooted(c) -> None:
    for root in range(N):
        t = mine(R)
        dist.broadcast(t, src=root)
        c.check(torch.equal(t, mine(root)), f"broadcast from {root}")
        t = mine(R)
        dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
        if R == root:
            c.check(close(t, sum(mine(r) for r in range(N))), f"reduce to {root}")
        gathered = [torch.empty(5, 3) for _ in range(N)] if R == root else None
        dist.gather(mine(R), gathered, dst=root)
        if R == root:
            c.check(all(torch.equal(g, mine(r)) for r, g in enumerate(gathered)), f"gather to {root}")
        out = torch.empty(2, 2)
        chunks = [torch.full((2, 2), float(10 * root + i)) for i in range(N)] if R == root else None
        dist.scatter(out, chunks, src=root)
        c.check(torch.equal(out, torch.full((2, 2), float(10 * root + R))), f"scatter from {root}")


def gathers(c) -> None:
    outs = [torch.empty(5, 3) for _ in range(N)]
    dist.all_gather(outs, mine(R))
    c.check(all(torch.equal(o, mine(r)) for r, o in enumerate(outs)), "all_gather")
    flat = torch.empty(N * 5, 3)
    dist.all_gather_into_tensor(flat, mine(R))
    c.check(torch.equal(flat, torch.cat([mine(r) for r in range(N)])), "all_gather_into_tensor")
    objects = [None] * N
    dist.all_gather_object(objects, {"rank": R, "name": f"r{R}"})
    c.check(objects == [{"rank": r, "name": f"r{r}"} for r in range(N)], "all_gather_object")
    box = [{"from": 0}] if R == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    c.check(box == [{"from": 0}], "broadcast_object_list")


def scatters(c) -> None:
    big = [mine(r, (N * 4,)) for r in range(N)]
    out = torch.empty(4)
    dist.reduce_scatter_tensor(out, big[R])
    c.check(close(out, sum(big)[R * 4:(R + 1) * 4]), "reduce_scatter_tensor")
    out = torch.empty(4)
    dist.reduce_scatter(out, list(big[R].chunk(N)), op=dist.ReduceOp.MAX)
    c.check(close(out, torch.stack(big).max(0).values[R * 4:(R + 1) * 4]), "reduce_scatter (list) MAX")
    # Uneven all_to_all_single: rank r sends (j + 1) rows of value 100 r + j to rank j.
    send_splits = [j + 1 for j in range(N)]
    send = torch.cat([torch.full((j + 1, 2), float(100 * R + j)) for j in range(N)])
    recv_splits = [R + 1] * N
    recv = torch.empty(sum(recv_splits), 2)
    dist.all_to_all_single(recv, send, recv_splits, send_splits)
    ref = torch.cat([torch.full((R + 1, 2), float(100 * r + R)) for r in range(N)])
    c.check(torch.equal(recv, ref), "all_to_all_single, uneven splits")
    ins = [torch.full((j + 2,), float(10 * R + j)) for j in range(N)]
    outs = [torch.empty(R + 2) for _ in range(N)]
    dist.all_to_all(outs, ins)
    c.check(all(torch.equal(o, torch.full((R + 2,), float(10 * r + R))) for r, o in enumerate(outs)), "all_to_all (list)")
    dist.barrier()
    c.check(True, "barrier")


def point_to_point(c) -> None:
    """send/recv, isend/irecv running ahead, tags, a ring through batch_isend_irecv, a strided receiver."""
    nxt, prv = (R + 1) % N, (R - 1) % N
    if R == 0:
        dist.send(torch.arange(6, dtype=torch.float64), dst=1)
    elif R == 1:
        got = torch.empty(6, dtype=torch.float64)
        dist.recv(got, src=0)
        c.check(torch.equal(got, torch.arange(6, dtype=torch.float64)), "send/recv 0 -> 1")
    # Rank 0 runs 12 isends (more than the collectives' naming window) ahead of rank 1's receives,
    # on two tags that rank 1 receives in the opposite order.
    if R == 0:
        works = [dist.isend(torch.full((3,), float(i)), dst=1, tag=i % 2) for i in range(12)]
        for w in works:
            w.wait()
    elif R == 1:
        odd = [torch.empty(3) for _ in range(6)]
        even = [torch.empty(3) for _ in range(6)]
        works = [dist.irecv(t, src=0, tag=1) for t in odd] + [dist.irecv(t, src=0, tag=0) for t in even]
        for w in works:
            w.wait()
        c.check(all(torch.equal(t, torch.full((3,), float(2 * i + 1))) for i, t in enumerate(odd)) and
                all(torch.equal(t, torch.full((3,), float(2 * i))) for i, t in enumerate(even)),
                "12 isends ahead of their receives, tags received out of order")
    # The ring: every rank sends to the next and receives from the previous, in one batch.
    for _ in range(2):
        out = torch.full((4,), float(R), dtype=torch.int64)
        into = torch.zeros(8, dtype=torch.int64)[::2]  # strided: received into through a copy
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, into, prv)])
        for w in works:
            w.wait()
        c.check(torch.equal(into, torch.full((4,), prv, dtype=torch.int64)), "ring through batch_isend_irecv")
    expect(c, RuntimeError, lambda: dist.recv(torch.empty(2)), "recv from any source", "source")
    # What that error advises: any-source receives on a gloo subgroup beside the lightcc group.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the ranks share this host
    gloo = dist.new_group(backend="gloo")
    if R == 0:
        got = sorted(dist.recv(torch.zeros(2), group=gloo) for _ in range(N - 1))
        c.check(got == list(range(1, N)), f"any-source receives on a gloo subgroup came from {got}")
    else:
        dist.send(torch.full((2,), float(R)), dst=0, group=gloo)
    dist.destroy_process_group(gloo)
    # A receiver of another dtype: both sides' wait() raises lightcc's error naming the tensor.
    if R == 0:
        expect(c, RuntimeError, lambda: dist.send(torch.ones(4), dst=1), "send to a receiver of another dtype",
               "rank 1 has int32")
    elif R == 1:
        expect(c, RuntimeError, lambda: dist.recv(torch.ones(4, dtype=torch.int32), src=0),
               "receive from a sender of another dtype", "rank 0 has float32")


def ddp(c) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    ref.load_state_dict(model.state_dict())
    if R != 0:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)  # DDP's construction must broadcast rank 0's weights
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0001)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        xs = [torch.randn(4, 8, generator=torch.Generator().manual_seed(step * 10 + r)) for r in range(N)]
        opt.zero_grad()
        net(xs[R]).pow(2).sum().backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(ref(x).pow(2).sum() for x in xs) / N).backward()
        ref_opt.step()
    same = all(close(a, b, 1e-5) for a, b in zip(model.parameters(), ref.parameters()))
    c.check(same, "DDP matches single-process training on the union of the batches")


def fsdp(c) -> None:
    """FSDP (the wrapper and fully_shard) on CPU: all-gather and reduce-scatter into tensors in lightcc."""
    from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard

    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

    def batch(step: int, rank: int):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(4, 8, generator=g)
        return x, x.sum(1, keepdim=True)

    ref = make()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        ref_opt.zero_grad()
        (sum(torch.nn.functional.mse_loss(ref(x), y) for x, y in (batch(step, r) for r in range(N))) / N).backward()
        ref_opt.step()
    expected = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
    for kind in ("FullyShardedDataParallel", "fully_shard"):
        model = make()
        net = FullyShardedDataParallel(model, device_id=torch.device("cpu")) if kind != "fully_shard" else model
        if kind == "fully_shard":
            fully_shard(model)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        for step in range(3):
            x, y = batch(step, R)
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
        if kind == "fully_shard":
            flat = torch.cat([p.full_tensor().detach().reshape(-1) for p in net.parameters()])
        else:
            with FullyShardedDataParallel.summon_full_params(net):
                flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        c.check(close(flat, expected, 1e-5), f"{kind} matches one-process training")


def subgroups(c) -> None:
    if N < 3:
        return
    members = [0, 2]
    group = dist.new_group(members)
    if R in members:
        t = torch.full((3,), float(R))
        dist.all_reduce(t, group=group)
        c.check(torch.equal(t, torch.full((3,), 2.0)), "all_reduce in new_group([0, 2])")
        t = torch.full((2,), float(R))
        dist.broadcast(t, src=2, group=group)
        c.check(torch.equal(t, torch.full((2,), 2.0)), "broadcast from global rank 2 in new_group")
    t = torch.ones(2)
    dist.all_reduce(t)
    c.check(torch.equal(t, torch.full((2,), float(N))), "world all_reduce after new_group")
    mine_alone, _ = dist.new_subgroups(group_size=1)  # every rank in a set of its own, made by itself alone
    t = torch.full((2,), float(R + 5))
    dist.all_reduce(t, group=mine_alone)
    c.check(torch.equal(t, torch.full((2,), float(R + 5))), "all_reduce in a one-rank subgroup")
    if R in members:
        dist.destroy_process_group(group)
    t = torch.ones(2)
    dist.all_reduce(t)
    c.check(torch.equal(t, torch.full((2,), float(N))), "world all_reduce after destroying new_group")


def window(c) -> None:
    """More same-shaped calls in flight than the naming window: the oldest must finish first, no hang."""
    ts = [torch.full((4,), float(R + i)) for i in range(20)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in works:
        w.wait()
    c.check(all(torch.equal(t, torch.full((4,), float(sum(range(N)) + N * i))) for i, t in enumerate(ts)),
            "20 same-shaped async all_reduce in flight")


def sparse(c) -> None:
    """Sparse COO allreduce (SUM, as gloo): rank r holds r non-zero rows (rank 0 none), a dense row width of 2."""
    def rows(r: int) -> torch.Tensor:
        idx = torch.arange(r, dtype=torch.int64).reshape(1, r)
        return torch.sparse_coo_tensor(idx, torch.full((r, 2), float(r + 1)), (N + 1, 2))

    t = rows(R)
    dist.all_reduce(t)
    want = sum(rows(r).to_dense() for r in range(N))
    c.check(t.layout == torch.sparse_coo and torch.equal(t.to_dense(), want), f"sparse all_reduce: {t.to_dense()}")
    expect(c, ValueError, lambda: dist.all_reduce(rows(R), op=dist.ReduceOp.MAX), "sparse MAX", "SUM only")


def mistakes(c) -> None:
    expect(c, ValueError, lambda: dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND), "BAND on floats", "integer")


def met_in_torchs_store(c, when: str) -> None:
    """The engine bootstrapped through torch's store: no rank served a lightcc rendezvous store."""
    from lightcc.common.basics import core

    c.check(core().store_servers_started() == 0, f"{when}: no lightcc store served (torch's store used)")


def main() -> None:
    c = checker()
    start()
    c.check(dist.get_backend() == "lightcc", f"backend name {dist.get_backend()}")
    met_in_torchs_store(c, "init")
    allreduces(c)
    window(c)
    rooted(c)
    gathers(c)
    scatters(c)
    point_to_point(c)
    ddp(c)
    fsdp(c)
    subgroups(c)
    sparse(c)
    mistakes(c)
    dist.destroy_process_group()
    c.check(not lightcc.torch.is_initialized(), "destroy_process_group shuts lightcc down")
    start(1)  # torchrun restarts and Ray init again in the same process
    t = torch.full((2,), float(R))
    dist.all_reduce(t)
    c.check(torch.equal(t, torch.full((2,), float(N * (N - 1) // 2))), "all_reduce after re-init")
    met_in_torchs_store(c, "re-init")
    store = dist.distributed_c10d._get_default_store()  # noqa: SLF001  (kept past the group's end)
    dist.destroy_process_group()
    # The same store once more (as Ray and Lightning hand one in): the meeting's keys must be new.
    dist.init_process_group("lightcc", store=store, rank=R, world_size=N, timeout=timedelta(seconds=60))
    t = torch.full((3,), float(R + 1))
    dist.all_reduce(t)
    c.check(torch.equal(t, torch.full((3,), float(N * (N + 1) // 2))), "all_reduce after init in the same store")
    met_in_torchs_store(c, "init in the same store")
    dist.destroy_process_group()
    # Rank 0 serves torch's store: it leaves last, once every rank has torn down.
    store.set(f"left/{R}", "1")
    if R == 0:
        store.wait([f"left/{r}" for r in range(N)], timedelta(seconds=60))
    c.finish()


if __name__ == "__main__":
    main()
