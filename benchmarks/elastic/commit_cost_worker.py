"""The worker of `ddp_recovery commit-cost`: the 25 M-parameter MLP under DDP with SGD momentum,
timed step by step with no commit, a commit every `--sparse-every` steps and a commit every step,
each with the commit's copy in the background (`TorchState.async_commit`) and in the caller
(`async_commit = False`), and a commit every step kept live (`TorchState.live_commit`, the default
for a script that commits right after each step: no copy).

Run under lightccrun's elastic driver (any number of ranks). The seven modes take turns in blocks
of `--sparse-every` steps (so each block of the sparse mode holds one commit), `--rounds` times,
after `--warmup` steps; rank 0 prints one line, ``commitcost <json>``, with every step's seconds
(a step: zero_grad, forward, backward, the wait for a commit copy still in flight, optimizer step,
and the commit if it is due), the seconds inside `commit()`, the seconds waited before each step,
and each step's CPU seconds (the process's, the commit thread's included, and the main thread's):
on a machine shared with other jobs the CPU time shows the work a commit adds where wall time is
mostly the neighbours' noise.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import lightcc.torch.elastic as elastic
from lightcc.models import get
from lightcc.torch.elastic.state import wait_for_commit


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--warmup", type=int, default=6)
    p.add_argument("--sparse-every", type=int, default=10)
    p.add_argument("--pairs", type=int, default=30, help="rounds of the paired measurement (below)")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("lightcc")
    net = get("mlp25m").build()
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    state = elastic.TorchState(model=model, optimizer=optimizer, step=0)
    x = torch.randn(args.batch, net[0].in_features)
    y = torch.randint(0, net[-1].out_features, (args.batch,))
    every = {"none": 0, f"every {args.sparse_every}": args.sparse_every, "every step": 1}
    modes = [(name, how) for name in every for how in ("background", "in commit()")] + [("every step", "live")]

    def use(how: str) -> None:
        state.async_commit = how == "background"
        state.live_commit = how == "live"

    def one_step(commit: bool, out: dict) -> None:
        c0, m0 = time.process_time(), time.thread_time()
        t0 = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        t1 = time.perf_counter()
        wait_for_commit()  # what optimizer.step() would wait for anyway, timed apart
        out["wait"].append(time.perf_counter() - t1)
        optimizer.step()
        state.step += 1
        if commit:
            t2 = time.perf_counter()
            state.commit()
            out["commit"].append(time.perf_counter() - t2)
        out["step"].append(time.perf_counter() - t0)
        out["cpu"].append(time.process_time() - c0)  # every thread of the process: the copy's work too
        out["main_cpu"].append(time.thread_time() - m0)  # this thread's only

    @elastic.run
    def train(state: elastic.TorchState) -> dict:
        results = {f"{name}, {how}": {"step": [], "commit": [], "wait": [], "cpu": [], "main_cpu": []}
                   for name, how in modes}
        scratch = {"step": [], "commit": [], "wait": [], "cpu": [], "main_cpu": []}
        for i in range(args.warmup):
            use("background" if i % 2 == 0 else "in commit()")
            one_step(True, scratch)
        n = args.sparse_every
        for _ in range(args.rounds):
            for name, how in modes:
                use(how)
                out = results[f"{name}, {how}"]
                # A lead step (untimed) commits as the mode does, so the first timed step waits for a
                # copy as every later one does; the sparse mode commits once, mid-block, so that its
                # copy's wait falls in a timed step too.
                one_step(every[name] == 1, scratch)
                for i in range(1, n + 1):
                    one_step(every[name] == 1 or (every[name] == n and i == n // 2), out)
                wait_for_commit()
        # Paired: two steps, the first committing (background / in commit()) or not, the three
        # patterns side by side in each round (in turn first): on a machine shared with other jobs
        # the difference between neighbours is the commit's cost where block medians drift.
        patterns = ["none", "background", "in commit()", "live"]
        paired = {name: {"step": [], "commit": [], "wait": [], "cpu": [], "main_cpu": []} for name in patterns}
        for r in range(args.pairs):
            for name in patterns[r % 4:] + patterns[:r % 4]:
                # An untimed lead step commits as the pattern does: a switch of mode (the copies a live
                # commit dropped are allocated again; a copy still in flight from the last pattern) is
                # not charged to the pattern.
                use(name)
                one_step(name != "none", scratch)
                out = {"step": [], "commit": [], "wait": [], "cpu": [], "main_cpu": []}
                one_step(name != "none", out)
                one_step(False, out)
                for key, values in out.items():
                    paired[name][key].append(sum(values))
        results["paired"] = paired
        return results

    results = train(state)
    if dist.get_rank() == 0:
        print("commitcost " + json.dumps({"world_size": dist.get_world_size(), "batch": args.batch,
                                          "threads": torch.get_num_threads(), "modes": results}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
