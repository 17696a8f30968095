"""Receives from any source over the "lightcc" backend (LIGHTCC_P2P_ANY_SOURCE=1): senders found, order kept.

Run as N ranks by tests/parallel/test_torch_c10d.py; argv[1] is torch's store port. Each rank in
turn receives from every other rank with recv(src=None) and irecv(src=None) and must learn each
sender exactly twice; then rank 0 mixes receives that name their sender with any-source ones
(none may take the other's message), keeps several any-source irecvs pending at once, and does
the same on a subgroup (group ranks, not global ones, come back). Without the flag the receive
raises naming it (argv[2] == "off").
"""
from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch_helpers import checker, destroy_leaving_last, expect

import lightcc.torch  # noqa: F401  (registers the backend)

R, N = int(os.environ["LIGHTCC_RANK"]), int(os.environ["LIGHTCC_SIZE"])
PORT = int(sys.argv[1])


def every_rank_receives_from_all(c) -> None:
    """torch's own pattern: rank r receives 2 (N-1) messages from anyone while the others send it two each."""
    for receiver in range(N):
        if R == receiver:
            senders = []
            for _ in range(N - 1):
                got = torch.full((10,), -1.0)
                src = dist.recv(got)
                c.check(torch.equal(got, torch.full((10,), float(src))), f"recv(src=None) from {src}: {got}")
                senders.append(src)
                got = torch.full((10,), -1.0)
                work = dist.irecv(got)
                work.wait()
                src = work._source_rank()  # noqa: SLF001  (torch's name; dist.recv uses it too)
                c.check(torch.equal(got, torch.full((10,), float(src))), f"irecv(src=None) from {src}: {got}")
                senders.append(src)
            want = sorted(r for r in range(N) if r != receiver for _ in range(2))
            c.check(sorted(senders) == want, f"rank {receiver} heard from {sorted(senders)}, not {want}")
        else:
            dist.send(torch.full((10,), float(R)), dst=receiver)
            dist.send(torch.full((10,), float(R)), dst=receiver)


def named_and_any_source_mixed(c) -> None:
    """Rank 1 sends 0..5 in order on tag 7. Rank 0 names it for the first, posts two any-source irecvs and
    then one naming it (which takes the next message number at once: the any-source ones must skip
    it), then two more any-source irecvs. Every message lands exactly once; posting order is kept."""
    if R == 1:
        for i in range(6):
            dist.send(torch.tensor([float(i)]), dst=0, tag=7)
    elif R == 0:
        first = torch.zeros(1)
        dist.recv(first, src=1, tag=7)
        a, b, named = torch.zeros(1), torch.zeros(1), torch.zeros(1)
        wa, wb = dist.irecv(a, tag=7), dist.irecv(b, tag=7)
        wn = dist.irecv(named, src=1, tag=7)
        rest = [torch.zeros(1) for _ in range(2)]
        works = [dist.irecv(t, tag=7) for t in rest]
        for w in [wa, wb, wn, *works]:
            w.wait()
        got = [first.item(), a.item(), b.item(), named.item()] + [t.item() for t in rest]
        c.check(sorted(got) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], f"each message exactly once: {got}")
        c.check(first.item() == 0.0 and a.item() < b.item() and rest[0].item() < rest[1].item(),
                f"any-source receives keep their posting order: {got}")
        c.check(wa._source_rank() == 1 and works[1]._source_rank() == 1, "the sender's rank")  # noqa: SLF001


def on_a_subgroup(c) -> None:
    """On a subgroup of the last two ranks, the sender comes back as its group rank."""
    members = [N - 2, N - 1]
    group = dist.new_group(members)
    if R == N - 2:
        got = torch.zeros(3)
        src = dist.recv(got, group=group)  # torch maps the group rank back to a global rank
        c.check(src == N - 1 and torch.equal(got, torch.full((3,), 5.0)), f"subgroup recv from {src}: {got}")
        work = dist.irecv(got, group=group)
        work.wait()
        c.check(work._source_rank() == 1, f"group rank of the sender: {work._source_rank()}")  # noqa: SLF001
    elif R == N - 1:
        dist.send(torch.full((3,), 5.0), dst=N - 2, group=group)
        dist.send(torch.full((3,), 5.0), dst=N - 2, group=group)
    dist.destroy_process_group(group)


def main() -> None:
    c = checker()
    dist.init_process_group("lightcc", init_method=f"tcp://127.0.0.1:{PORT}", rank=R, world_size=N,
                            timeout=timedelta(seconds=60))
    if sys.argv[2:] == ["off"]:
        expect(c, RuntimeError, lambda: dist.recv(torch.empty(2)), "recv from any source without the flag",
               "LIGHTCC_P2P_ANY_SOURCE=1")
    else:
        every_rank_receives_from_all(c)
        named_and_any_source_mixed(c)
        on_a_subgroup(c)
        dist.barrier()
    destroy_leaving_last(R, N)
    c.finish()


if __name__ == "__main__":
    main()
